import { statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { CappedLog, type CappedLogSummary } from './capped-log.js';
import {
  defaultRunLimits,
  prepareLimits,
  type AppliedLimits,
  type LimitEnforcer,
  type LimitKind,
  type RunLimits,
} from './limits.js';
import { LineSplitter } from './line-splitter.js';
import { DEFAULT_TAIL_BYTES, OutputTail } from './output-tail.js';
import { launchProcess } from './launch.js';
import { isProcessGroupAlive, terminateProcessGroup } from './terminate.js';
import { underUserUmask } from './umask.js';

/** How to run one worker process. Give exactly one of `shellCommand` and `argv`. */
export interface RunProcessOptions {
  /** Run through `/bin/sh -c`. */
  shellCommand?: string;
  /** Run directly (no shell): `argv[0]` is the program. */
  argv?: string[];
  /** Working directory; must exist. */
  cwd: string;
  /** The child's whole environment (already scrubbed: see env.ts). */
  env: NodeJS.ProcessEnv;
  /** Hard timeout, ms; the whole group is killed when it passes. Infinity = none. */
  timeoutMs: number;
  /** Cancel: aborting kills the whole group. */
  signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL, ms (default 3000). */
  graceMs?: number;
  /** Capped output log (stdout and stderr together). */
  logFile?: string;
  /** Log head cap, bytes (default 64 KiB). */
  logHeadBytes?: number;
  /** Log tail cap, bytes (default 10 MiB). */
  logTailBytes?: number;
  /** Complete lines of output, per chunk (a partial last line waits for its newline or the exit). */
  onOutput?: (lines: string[]) => void;
  /** After every chunk of output: the newest `tailBytes` of output. */
  onTail?: (tail: string) => void;
  /** Once the child exists: its process group id and start time (epoch s), to record. */
  onSpawn?: (info: { pgid: number; startedAt: number }) => void;
  /** Output tail kept in memory, bytes (default 8 KiB). */
  tailBytes?: number;
  /** How long to wait for the group to vanish after SIGKILL, ms (default 5000). */
  killWaitMs?: number;
  /** After the group is gone, how long to wait for its pipes to close, ms (default 2000). */
  stdioCloseWaitMs?: number;
  /** Process-count and memory caps and CPU weight; default those set by `setRunLimits` (limits.ts); null: none. */
  limits?: RunLimits | null;
  /** Enforce `limits` with the watchdog even where a cgroup could hold them (tests of the fallback). */
  forceLimitWatchdog?: boolean;
}

/** How a worker process ended: always a value, never a throw (execa's shape). */
export interface ProcessResult {
  /** Exit code of the group leader, when it exited by itself. */
  exitCode: number | null;
  /** Signal that ended the group leader (ours on timeout/cancel, else someone else's). */
  signal: string | null;
  /** The timeout passed and gaffer killed the group. */
  timedOut: boolean;
  /** The abort signal fired and gaffer killed the group. */
  isCancelled: boolean;
  /** Wall time by the monotonic clock, ms. */
  durationMs: number;
  /** Newest output (≤ tailBytes), cut at character boundaries. */
  tail: string;
  /** Why it could not start (missing cwd, missing program, …) or be followed to its end (the spawner helper died); null when neither. */
  cause: string | null;
  /** What the spawner helper's death did to this run (started here instead, or lost mid-run), in words; null when it did not die under it. */
  helperLost: string | null;
  /** Bytes printed on stdout and stderr together. */
  outputBytes: number;
  /** Process group id (= the leader's pid); null when it never started. */
  pgid: number | null;
  /** Leader start time (epoch s), as given to `onSpawn`. */
  startedAt: number | null;
  /** True when members of the group outlived the leader and were killed. */
  strayKilled: boolean;
  /** False when some member survived even SIGKILL within the wait (should not happen). */
  isGroupGone: boolean;
  /** The log file's summary, when one was written. */
  log: CappedLogSummary | null;
  /** First error thrown by an onOutput/onTail/onSpawn callback (caught so the run goes on). */
  callbackError: string | null;
  /** The limit that ended the run (gaffer then killed all of it); null when none did. */
  limitHit: LimitKind | null;
  /** The limits the run had and what enforced them; null when it had none. */
  limits: AppliedLimits | null;
  /** Most processes (cgroup: tasks) and memory, bytes, at once, when the limits' mechanism measured them. */
  peak: { processes: number | null; memoryBytes: number | null };
}

const MAX_TIMER_MS = 2 ** 31 - 1;

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A function, not an inline test: TypeScript would keep a first `aborted` check's narrowing across the awaits after it. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function checkCwd(cwd: string): string | null {
  try {
    return statSync(cwd).isDirectory() ? null : `cwd is not a directory: ${cwd}`;
  } catch {
    return `cwd does not exist: ${cwd}`;
  }
}

function resolveCommand(opts: RunProcessOptions): { file: string; args: string[] } | string {
  if (opts.shellCommand !== undefined && opts.argv !== undefined) return 'give shellCommand or argv, not both';
  if (opts.shellCommand !== undefined) return { file: '/bin/sh', args: ['-c', opts.shellCommand] };
  const [file, ...args] = opts.argv ?? [];
  if (file === undefined || file === '') return 'nothing to run: give shellCommand or a non-empty argv';
  return { file, args };
}

/**
 * Runs a worker in its own process group with stdin on /dev/null, a hard timeout and cancel,
 * both of which kill the WHOLE group (SIGTERM, grace, SIGKILL). Members that outlive the
 * leader are killed too. Resolves only once no live process of the group remains, with a
 * bounded tail of output in memory and the output in a capped log.
 */
export async function runProcess(opts: RunProcessOptions): Promise<ProcessResult> {
  const began = performance.now();
  const tail = new OutputTail(opts.tailBytes ?? DEFAULT_TAIL_BYTES);
  const result: ProcessResult = {
    exitCode: null,
    signal: null,
    timedOut: false,
    isCancelled: false,
    durationMs: 0,
    tail: '',
    cause: null,
    helperLost: null,
    outputBytes: 0,
    pgid: null,
    startedAt: null,
    strayKilled: false,
    isGroupGone: true,
    log: null,
    callbackError: null,
    limitHit: null,
    limits: null,
    peak: { processes: null, memoryBytes: null },
  };
  const finish = (): ProcessResult => {
    result.durationMs = performance.now() - began;
    result.tail = tail.text();
    return result;
  };
  const guard = (call: () => void): void => {
    try {
      call();
    } catch (err) {
      result.callbackError ??= messageOf(err);
    }
  };

  if (isAborted(opts.signal)) {
    result.isCancelled = true;
    return finish();
  }
  const command = resolveCommand(opts);
  const badCwd = checkCwd(opts.cwd);
  if (typeof command === 'string' || badCwd !== null) {
    result.cause = typeof command === 'string' ? command : badCwd;
    return finish();
  }

  const log =
    opts.logFile === undefined
      ? null
      : new CappedLog(opts.logFile, { headBytes: opts.logHeadBytes, tailBytes: opts.logTailBytes });
  const limits = opts.limits === undefined ? defaultRunLimits() : opts.limits;
  const enforcer: LimitEnforcer | null =
    limits === null ? null : prepareLimits(limits, { forceWatchdog: opts.forceLimitWatchdog });
  result.limits = enforcer?.applied ?? null;
  const stdoutLines = new LineSplitter();
  const stderrLines = new LineSplitter(); // its own: a partial stdout line must not absorb stderr text
  const emitLines = (lines: string[]): void => {
    if (lines.length > 0 && opts.onOutput !== undefined) {
      const onOutput = opts.onOutput;
      guard(() => onOutput(lines));
    }
  };
  const onData = (fd: 1 | 2, chunk: Buffer): void => {
    result.outputBytes += chunk.length;
    log?.write(chunk);
    tail.push(chunk);
    emitLines((fd === 1 ? stdoutLines : stderrLines).push(chunk));
    if (opts.onTail !== undefined) {
      const onTail = opts.onTail;
      guard(() => onTail(tail.text()));
    }
  };

  // the user's work gets the user's file modes, not gaffer's private umask (umask.ts)
  const launch = underUserUmask(enforcer?.wrap(command) ?? command);
  const child = launchProcess({ file: launch.file, args: launch.args, cwd: opts.cwd, env: opts.env }, onData);
  const start = await child.started;
  if ('error' in start) {
    await enforcer?.finish(false);
    result.cause = `cannot start ${command.file}: ${start.error}`;
    result.helperLost = child.helperLost;
    result.log = log?.close() ?? null;
    return finish();
  }
  const pgid = start.pid;
  result.pgid = pgid;
  result.startedAt = start.startedAt ?? Date.now() / 1000;
  const startedAt = result.startedAt;
  if (opts.onSpawn !== undefined) {
    const onSpawn = opts.onSpawn;
    guard(() => onSpawn({ pgid, startedAt }));
  }

  const graceMs = opts.graceMs ?? 3000;
  const killWaitMs = opts.killWaitMs ?? 5000;
  let stopping: Promise<boolean> | null = null;
  const stopGroup = (): Promise<boolean> =>
    terminateProcessGroup(pgid, { graceMs, waitMs: killWaitMs }).then(
      (r) => r.isGone,
      () => false,
    );
  const stop = (why: 'timeout' | 'cancel'): void => {
    if (stopping !== null) return;
    if (why === 'timeout') result.timedOut = true;
    else result.isCancelled = true;
    stopping = stopGroup();
  };
  // a limit hit ends the whole run at once: a fork bomb at its cap would otherwise sit there until the timeout
  const stopAtLimit = (kind: LimitKind): void => {
    if (stopping !== null) return;
    result.limitHit = kind;
    stopping = Promise.all([
      enforcer?.killAll(),
      terminateProcessGroup(pgid, { graceMs: 0, waitMs: killWaitMs }).then(
        (r) => r.isGone,
        () => false,
      ),
    ]).then(([, isGone]) => isGone);
  };
  enforcer?.watch(pgid, stopAtLimit);
  const timer = Number.isFinite(opts.timeoutMs)
    ? setTimeout(() => stop('timeout'), Math.min(Math.max(opts.timeoutMs, 0), MAX_TIMER_MS))
    : null;
  const onAbort = (): void => stop('cancel');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (isAborted(opts.signal)) onAbort(); // while the helper was starting it

  const exit = await child.exited;
  if (exit === null && child.helperLost !== null && stopping === null) {
    // the helper died with it running: its end cannot be seen, so it is ended here (spec 04: no orphans)
    result.cause = child.helperLost;
    stopping = stopGroup();
  }
  const isCleanExit = exit?.code === 0 && stopping === null;
  if (exit !== null) {
    result.exitCode = exit.code;
    result.signal = exit.signal;
  }
  if (stopping === null && isProcessGroupAlive(pgid)) {
    // spec 04: no orphans — what the leader left behind in its group goes with it
    result.strayKilled = true;
    stopping = stopGroup();
  }
  if (stopping !== null) result.isGroupGone = await stopping;
  if (timer !== null) clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort);
  if (enforcer !== null) {
    const ended = await enforcer.finish(isCleanExit);
    // a hit seen only at the end (the OOM killer ended the leader between two polls) still ended the run
    if (!result.timedOut && !result.isCancelled) result.limitHit ??= ended.limitHit;
    result.peak = { processes: ended.peakProcesses, memoryBytes: ended.peakMemoryBytes };
    if (ended.escapedKilled > 0) result.strayKilled = true;
  }

  // The pipes close when every holder is gone; one that escaped the group (setsid) may hold
  // them forever, so the wait is bounded and the streams are then dropped.
  const closeWait = new AbortController();
  const isClosed = await Promise.race([
    child.closed.then(() => true),
    sleep(opts.stdioCloseWaitMs ?? 2000, false, { signal: closeWait.signal }).catch(() => false),
  ]);
  closeWait.abort();
  if (!isClosed) child.dropPipes();
  result.helperLost ??= child.helperLost;
  emitLines([...stdoutLines.flush(), ...stderrLines.flush()]);
  result.log = log?.close() ?? null;
  return finish();
}
