import type { TestFramework } from './parsers/types.js';
import { closeSync, fstatSync, lstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { describeLimitHit, type LimitKind } from '../platform/process/limits.js';
import { runProcess } from '../platform/process/run-process.js';
import { buildWorkerEnv } from '../platform/process/env.js';
import type { SandboxNetwork } from '../platform/sandbox/network.js';
import {
  buildRefusalArgv,
  createSandbox,
  isRefused,
  type Sandbox,
  type SandboxResult,
} from '../platform/sandbox/sandbox.js';
import { LINKED_DEPENDENCY_DIRS } from './baseline.js';
import { parseTestOutput } from './parsers/index.js';
import { findSandboxRefusals } from './sandbox-refusals.js';
import type { ParsedRun } from './parsers/types.js';

/** How much of a run's log is read back for parsing: the log keeps head + newest tail. */
export const PARSE_BYTES = 4 * 1024 * 1024;

/** One run of a test command: how it ended and what its output says. */
export interface SuiteRun {
  command: string;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  isCancelled: boolean;
  /** Why it could not start, when it could not. */
  cause: string | null;
  durationMs: number;
  /** Newest output, for the answer and the fixer. */
  tail: string;
  /** Where the whole output was logged (issue 33: a failing test's report is read from it, with `readLog`). */
  logFile?: string;
  parsed: ParsedRun;
  /** The expected landmark appeared in the output (undefined when none was asked for). */
  landmarkSeen: boolean | undefined;
  /** Sandboxed runs: paths outside the workspace whose write the read-only sandbox refused (its output says so). */
  sandboxRefused?: string[];
  /** The limit (issue 11) that ended the run, and in words with its value; absent when none did. */
  limit?: { kind: LimitKind; words: string };
}

/** A process group a run started: its id and its leader's start time (epoch s). */
export interface SpawnedGroup {
  pgid: number;
  startedAt: number;
}

/** Told when each run's process group starts and once it is gone, with the run's name. */
export interface SuiteProcessHooks {
  onSpawn: (group: SpawnedGroup, what: string) => void;
  onExit: (group: SpawnedGroup, what: string) => void;
}

/** The `onSpawn`/`onExit` of one run named `what` (nothing without hooks). */
export function processHooksFor(
  hooks: SuiteProcessHooks | undefined,
  what: string,
): Pick<SuiteInput, 'onSpawn' | 'onExit'> {
  if (hooks === undefined) return {};
  return { onSpawn: (group) => hooks.onSpawn(group, what), onExit: (group) => hooks.onExit(group, what) };
}

/** What a suite run needs. */
export interface SuiteInput {
  command: string;
  cwd: string;
  kind: string | null;
  /** The runner behind the command (issue 33: `npm test` runs tape, read from the checkpoint's manifest): its output, cut short, is still its. */
  framework?: TestFramework | null;
  timeoutMs: number;
  signal: AbortSignal;
  logFile: string;
  expectedOutput?: string | null;
  /** Extra environment (e.g. a flaky-state dir in tests). */
  env?: NodeJS.ProcessEnv;
  /** Once its process group exists (to record it: a crash must not leave it running, spec 07). */
  onSpawn?: (group: SpawnedGroup) => void;
  /** Once that group is gone (the record can go). */
  onExit?: (group: SpawnedGroup) => void;
  /**
   * Run under the workers' sandbox (spec 03: the verification runs as sandboxed as they did): the
   * engine's `Sandbox`, or true for bubblewrap under `auto` (unsandboxed where it does not work).
   */
  sandbox?: boolean | Sandbox;
  /** Its network in the sandbox (config `network.verification`, `loopback_ports`); default `none`. */
  network?: SandboxNetwork;
  /**
   * The job's own workspace, whose dependency folders gaffer links into a copy or a worktree (`cwd`
   * when not given): a dependency link in `cwd` is bound only where it leads to one of them.
   */
  dependencyRoot?: string;
}

/** Runs a test command through `sh -c` in `cwd` with comparable settings (spec 03) and parses its output. */
export async function runSuite(input: SuiteInput): Promise<SuiteRun> {
  let landmarkSeen = false;
  const landmark = input.expectedOutput ?? null;
  const wrapped = wrapSuite(input);
  const result = await runProcess({
    ...(wrapped === null
      ? { shellCommand: input.command }
      : { argv: isRefused(wrapped) ? buildRefusalArgv(wrapped.refused) : wrapped.argv }),
    cwd: input.cwd,
    // spec 03: CI=true, TZ=UTC, PYTHONHASHSEED=0 so runs are comparable
    env: { ...buildWorkerEnv(process.env), ...input.env, CI: 'true', TZ: 'UTC', PYTHONHASHSEED: '0' },
    timeoutMs: input.timeoutMs,
    signal: input.signal,
    logFile: input.logFile,
    ...(input.onSpawn ? { onSpawn: input.onSpawn } : {}),
    ...(landmark !== null
      ? { onOutput: (lines: string[]) => (landmarkSeen ||= lines.some((l) => l.includes(landmark))) }
      : {}),
  });
  // a group that outlived even SIGKILL stays recorded: recovery looks at it again
  if (result.pgid !== null && result.startedAt !== null && result.isGroupGone)
    input.onExit?.({ pgid: result.pgid, startedAt: result.startedAt });
  const output = readLog(input.logFile) ?? result.tail;
  return {
    command: input.command,
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    isCancelled: result.isCancelled,
    cause: result.cause,
    durationMs: result.durationMs,
    tail: result.tail,
    logFile: input.logFile,
    parsed: parseTestOutput(output, {
      kind: input.kind,
      command: input.command,
      workspace: input.cwd,
      ...(input.framework ? { framework: input.framework } : {}),
    }),
    landmarkSeen: landmark === null ? undefined : landmarkSeen || result.tail.includes(landmark),
    ...(wrapped?.sandboxed === true ? { sandboxRefused: findSandboxRefusals(output, input.cwd) } : {}),
    ...(result.limitHit === null
      ? {}
      : { limit: { kind: result.limitHit, words: describeLimitHit(result.limitHit, result.limits) } }),
  };
}

const AUTO_SANDBOX = createSandbox('auto');

/** The run's command through its sandbox; null when it runs unsandboxed (as it is). */
function wrapSuite(input: SuiteInput): SandboxResult | null {
  if (input.sandbox === undefined || input.sandbox === false) return null;
  const sandbox = input.sandbox === true ? AUTO_SANDBOX : input.sandbox;
  const wrapped = sandbox.wrap({
    shellCommand: input.command,
    workspace: input.cwd,
    ...linkedDependencyDirs(input.cwd, input.dependencyRoot ?? input.cwd),
    ...(input.network ? { network: input.network } : {}),
  });
  return isRefused(wrapped) || wrapped.sandboxed ? wrapped : null;
}

/**
 * The dependency folders linked into `cwd` (a baseline or original-tests copy links them from the
 * workspace, a worktree from the job's workspace): bound writable into the sandbox at their real
 * place, or a workspace under /tmp (or a tmpfs HOME) would vanish behind the sandbox's private one
 * (vite writes `node_modules/.vite-temp`). Only where the link ends at `root`'s own folder of that
 * name, itself a real folder (issue 32): a worker can repoint a link in a worktree or make its
 * workspace's `node_modules` a link to `~/.ssh` or another project's dependencies, and what it
 * chose is then bound nowhere (a dependency folder that is itself a link out is not bound either).
 */
function linkedDependencyDirs(cwd: string, root: string): { writable: string[] } {
  const out = { writable: [] as string[] };
  for (const name of LINKED_DEPENDENCY_DIRS) {
    try {
      const link = join(cwd, name);
      if (!lstatSync(link).isSymbolicLink()) continue;
      const own = join(realpathSync(root), name);
      if (!lstatSync(own).isDirectory()) continue;
      if (realpathSync(link) === own) out.writable.push(own);
    } catch {
      // not there, or a dangling link: nothing to bind
    }
  }
  return out;
}

/** The log for parsing: all of it, or its head and its newest bytes when it is longer than PARSE_BYTES. */
export function readLog(file: string): string | null {
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const read = (length: number, position: number) => {
        const buf = Buffer.alloc(length);
        readSync(fd, buf, 0, length, position);
        return buf.toString('utf8');
      };
      if (size <= PARSE_BYTES) return read(size, 0);
      const head = 64 * 1024;
      // framework summaries sit at the end: keep the newest bytes, and the head for early errors
      return `${read(head, 0)}\n${read(PARSE_BYTES - head, size - (PARSE_BYTES - head))}`;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}
