/** What the spawner runs and answers, shared by its ways of running a call (spawner.ts, shell-pool.ts). */

/** One command to run, as `runGit` runs it. */
export interface SpawnRequest {
  cmd: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Written to stdin, then stdin is closed; an async iterable is streamed as it is produced. */
  input: Buffer | string | AsyncIterable<string>;
  /**
   * The command starts nothing that outlives it (git under gaffer's owned config: no hooks, no
   * detached gc, no filter processes), so it may run in a kept shell, whose pipes the next call
   * shares (shell-pool.ts).
   */
  leavesNothingRunning?: boolean;
}

/** What the command did: expected failures are values, not throws. */
export interface SpawnResult {
  /** Exit code; null when killed by a signal (in a kept shell: 128 + the signal's number, as a shell says). */
  exitCode: number | null;
  /** Raw stdout (paths with -z are bytes, never re-encoded by a shell). */
  stdout: Buffer;
  /** stderr as text, for messages. */
  stderr: string;
  /** The call ran past its timeout and was killed. */
  timedOut: boolean;
  /** The command could not be started (e.g. not on PATH). */
  spawnError?: string;
  /** Producing the streamed input failed: the command was killed, its outcome means nothing. */
  inputError?: Error;
}
