import { spawn } from 'node:child_process';
import { startStreamed } from '../spawner/spawner.js';
import { readProcessStartTime, startTimeFromTicks } from './process-start-time.js';

/** How a launched process started: its pid (= its group id) and start time (epoch s), or why it could not. */
export type LaunchStart = { pid: number; startedAt: number | null } | { error: string };

/** A worker process started by `launchProcess`: the few facts run-process.ts follows it by. */
export interface LaunchedProcess {
  /** Settles once it runs or could not be started. */
  readonly started: Promise<LaunchStart>;
  /** Its leader's exit; null when it never started or its end could not be seen (the helper died). */
  readonly exited: Promise<{ code: number | null; signal: string | null } | null>;
  /** Its pipes closed: every holder of them is gone (or they can no longer be read). */
  readonly closed: Promise<void>;
  /** Stops reading its pipes (a process that left the group may hold them forever). */
  dropPipes(): void;
  /** What the spawner helper's death did to this run, in words; null while it did nothing. */
  readonly helperLost: string | null;
}

/** What to start: the leader of a new process group, stdin /dev/null, stdout and stderr read. */
export interface LaunchRequest {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Starts a worker process through the spawner helper when one is in use (spawner.ts: forking a
 * large process blocks its event loop for milliseconds), else from this process. Both give the
 * same facts in the same order; output arrives through `onData` as it is printed. When the helper
 * dies before the process started, it is started here instead; when it dies while the process
 * runs, `exited` resolves null and `helperLost` says so (the caller stops the orphaned group).
 */
export function launchProcess(request: LaunchRequest, onData: (fd: 1 | 2, chunk: Buffer) => void): LaunchedProcess {
  let helperLost: string | null = null;
  let fallback: LaunchedProcess | null = null;
  let resolveStart!: (start: LaunchStart) => void;
  let resolveExit!: (exit: { code: number | null; signal: string | null } | null) => void;
  let resolveClose!: () => void;
  const started = new Promise<LaunchStart>((resolve) => (resolveStart = resolve));
  const exited = new Promise<{ code: number | null; signal: string | null } | null>(
    (resolve) => (resolveExit = resolve),
  );
  const closed = new Promise<void>((resolve) => (resolveClose = resolve));
  const streamed = startStreamed(request, {
    onSpawn: (pid, startTicks) =>
      resolveStart({ pid, startedAt: startTicks === null ? null : startTimeFromTicks(startTicks) }),
    onFail: (message) => {
      resolveStart({ error: message });
      resolveExit(null);
      resolveClose();
    },
    onData,
    onExit: (code, signal) => resolveExit({ code, signal }),
    onClose: () => resolveClose(),
    onLost: (wasStarted, pipesHere) => {
      if (wasStarted) {
        helperLost =
          'the spawner helper process died while the worker ran: gaffer stopped its process group; how it ended is unknown';
        resolveExit(null);
        // pipes read here close once the caller has stopped the group
        if (!pipesHere) resolveClose();
        return;
      }
      // nothing was reported started, so nothing ran: start it here, as without the helper
      helperLost = 'the spawner helper process died before the worker started: gaffer started it itself';
      fallback = launchHere(request, onData);
      void fallback.started.then(resolveStart);
      void fallback.exited.then(resolveExit);
      void fallback.closed.then(resolveClose);
    },
  });
  if (streamed === null) return launchHere(request, onData);
  return {
    started,
    exited,
    closed,
    dropPipes: () => {
      if (fallback !== null) fallback.dropPipes();
      else streamed.drop();
      resolveClose();
    },
    get helperLost() {
      return helperLost;
    },
  };
}

/** Starts the process from this process (node's spawn, detached: a new session and group). */
function launchHere(request: LaunchRequest, onData: (fd: 1 | 2, chunk: Buffer) => void): LaunchedProcess {
  const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  let child;
  try {
    child = spawn(request.file, request.args, {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    return {
      started: Promise.resolve({ error: message(err) }),
      exited: Promise.resolve(null),
      closed: Promise.resolve(),
      dropPipes: () => undefined,
      helperLost: null,
    };
  }
  let childError: unknown = null;
  const exited = new Promise<{ code: number | null; signal: string | null } | null>((resolve) => {
    child.on('error', (err) => {
      childError ??= err;
      resolve(null); // spawn failure; a later error (e.g. a failed kill) changes nothing
    });
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const pid = child.pid;
  // read now: the process is at least a zombie until this process's event loop reaps it
  const started: Promise<LaunchStart> =
    pid === undefined
      ? exited.then(() => ({ error: childError === null ? 'unknown error' : message(childError) }))
      : Promise.resolve({ pid, startedAt: readProcessStartTime(pid) });
  child.stdout.on('data', (chunk: Buffer) => onData(1, chunk));
  child.stderr.on('data', (chunk: Buffer) => onData(2, chunk));
  return {
    started,
    exited,
    closed,
    dropPipes: () => {
      child.stdout.destroy();
      child.stderr.destroy();
    },
    helperLost: null,
  };
}
