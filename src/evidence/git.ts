import { isAscii } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { nameOfPathBytes } from '../domain/escaped-path.js';
import { spawnCommand, type SpawnResult } from '../platform/spawner/spawner.js';
import { ownedGitConfig, withoutExternalDiff } from './git-owned-config.js';

/** What one git call did: expected failures are values, not throws. */
export type GitResult = SpawnResult;

export interface GitCallOptions {
  /** Working directory of the call. */
  cwd: string;
  /** Milliseconds before the call is killed. */
  timeoutMs: number;
  /** Extra environment on top of the scrubbed one. */
  env?: Record<string, string>;
  /** Written to stdin, then stdin is closed; an async iterable is streamed as it is produced. */
  input?: Buffer | string | AsyncIterable<string>;
}

/** Default per-call timeout (spec 03: a timeout on every call). */
export const DEFAULT_GIT_TIMEOUT_MS = 120_000;

/**
 * The environment every git call gets: the caller's `GIT_*` variables removed (a caller's
 * GIT_DIR or GIT_INDEX_FILE must never redirect us into the user's repository), no global or
 * system config, no prompts.
 */
export function scrubbedGitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.toUpperCase().startsWith('GIT_')) env[key] = value;
  }
  env.GIT_CONFIG_GLOBAL = '/dev/null';
  env.GIT_CONFIG_SYSTEM = '/dev/null';
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_TERMINAL_PROMPT = '0';
  env.GIT_OPTIONAL_LOCKS = '0';
  env.LC_ALL = 'C';
  // glibc returns memory to the kernel after every file update-index hashes (200k brk calls for
  // 50k files, 2.5x slower than `git add`); a trim threshold and top pad stop that. Ignored elsewhere.
  env.MALLOC_TRIM_THRESHOLD_ = String(256 * 1024 * 1024);
  env.MALLOC_TOP_PAD_ = String(16 * 1024 * 1024);
  // into the object just made: a copy would cost each git call another ~110 keys (the owned config's among them)
  return Object.assign(env, extra);
}

/**
 * One git call as gaffer makes it: the scrubbed env with the config gaffer owns on top (nothing in
 * the repository's config or attributes runs a program: git-owned-config.ts), porcelain diffs
 * without external diffs or textconv; `refusal` when the repository's config is a file git would
 * block on or swell from.
 */
export function ownedGitCall(
  args: readonly string[],
  cwd: string,
  extra: Record<string, string> = {},
): { args: string[]; env: NodeJS.ProcessEnv; refusal: string | null } {
  const owned = ownedGitConfig(cwd, args);
  const env = scrubbedGitEnv(owned.env);
  if (owned.workTree !== null) env.GIT_WORK_TREE = owned.workTree;
  return { args: withoutExternalDiff(args), env: Object.assign(env, extra), refusal: owned.refusal };
}

/**
 * Runs git with an argument array (no shell), the config gaffer owns and a kill-on-timeout —
 * through the spawner helper while an engine uses one (see spawner.ts), else from this process.
 */
export async function runGit(args: string[], opts: GitCallOptions): Promise<GitResult> {
  const call = ownedGitCall(args, opts.cwd, opts.env);
  if (call.refusal !== null)
    return { exitCode: null, stdout: Buffer.alloc(0), stderr: '', timedOut: false, spawnError: call.refusal };
  const result = await spawnCommand({
    cmd: 'git',
    args: call.args,
    cwd: opts.cwd,
    env: call.env,
    timeoutMs: opts.timeoutMs,
    input: opts.input ?? '',
    leavesNothingRunning: true, // the owned config turns off all that could (git-owned-config.ts)
  });
  if (result.spawnError !== undefined) result.spawnError = `could not start git: ${result.spawnError}`;
  return result;
}

/**
 * A small synchronous git call (a roster read at submission, a HEAD check): what `runGit` does,
 * blocking — for calls whose callers cannot wait a turn. Status null when refused or killed.
 */
export function runGitSync(
  args: string[],
  cwd: string,
  timeoutMs = 30_000,
): { status: number | null; stdout: string; stderr: string } {
  const call = ownedGitCall(args, cwd);
  if (call.refusal !== null) return { status: null, stdout: '', stderr: call.refusal };
  const r = spawnSync('git', call.args, {
    cwd,
    env: call.env,
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 1 << 20,
  });
  return {
    status: r.status,
    stdout: r.stdout ?? '',
    stderr: r.error ? `could not start git: ${r.error.message}` : (r.stderr ?? ''),
  };
}

/** Runs git and returns stdout, throwing a descriptive Error on any failure. */
export async function runGitOk(args: string[], opts: GitCallOptions): Promise<Buffer> {
  const result = await runGit(args, opts);
  if (result.exitCode === 0) return result.stdout;
  throw new Error(describeGitFailure(args, result));
}

/** One line naming the git call and why it failed. */
export function describeGitFailure(args: string[], result: GitResult): string {
  const call = `git ${args.filter((a) => !a.startsWith('--git-dir=') && !a.startsWith('--work-tree=')).join(' ')}`;
  if (result.spawnError !== undefined) return `${call}: ${result.spawnError}`;
  if (result.timedOut) return `${call}: timed out and was killed`;
  const why = result.stderr.trim().split('\n').slice(-3).join(' | ');
  return `${call}: exit ${result.exitCode ?? 'signal'}${why ? `: ${why}` : ''}`;
}

/**
 * Splits NUL-separated git output (`-z`) into strings, dropping the trailing empty one. A path
 * that is not valid UTF-8 (a file name of other bytes) comes back C-quoted as git would show it
 * (`"caf\351.txt"`, domain/escaped-path.ts), never with its bytes replaced. `pathAt` says where
 * the path starts in each part: 0 (the whole part), after the first tab (`ls-files -s`,
 * `ls-tree`: `'tab'`), or after a tag of N bytes (`ls-files -t`: 2).
 */
export function splitNul(buf: Buffer, pathAt: number | 'tab' = 0): string[] {
  if (buf.length === 0) return [];
  const text = buf.toString('utf8');
  const parts = text.includes('\uFFFD') ? splitNulExact(buf, pathAt) : text.split('\0');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts;
}

function splitNulExact(buf: Buffer, pathAt: number | 'tab'): string[] {
  const parts: string[] = [];
  const named = (part: Buffer): string => {
    const at = Math.min(part.length, pathAt === 'tab' ? part.indexOf(9) + 1 : pathAt);
    return part.toString('latin1', 0, at) + nameOfPathBytes(part.subarray(at));
  };
  let start = 0;
  for (let end = buf.indexOf(0); end >= 0; end = buf.indexOf(0, start)) {
    parts.push(named(buf.subarray(start, end)));
    start = end + 1;
  }
  parts.push(named(buf.subarray(start)));
  return parts;
}

/**
 * Reads NUL-separated git output (`-z`) entry by entry: `each` gets the offset an entry starts at
 * and its path, from `pathAt(start, end)` bytes into the entry on. Each path is decoded on its
 * own, a string of that path alone: splitNul's parts are slices of one string of the whole output,
 * which every path kept keeps alive (17 MB for 250,000 `ls-files -s` entries). A name that is not
 * UTF-8 comes back C-quoted, as splitNul gives it.
 */
export function forEachNulPath(
  buf: Buffer,
  pathAt: (start: number, end: number) => number,
  each: (path: string, start: number) => void,
): void {
  const ascii = isAscii(buf);
  for (let start = 0; start < buf.length;) {
    let end = buf.indexOf(0, start);
    if (end < 0) end = buf.length;
    const at = Math.min(end, start + pathAt(start, end));
    each(ascii ? buf.toString('latin1', at, end) : nameOfPathBytes(buf.subarray(at, end)), start);
    start = end + 1;
  }
}

const versions = new Map<string, Promise<readonly [number, number] | null>>();

/** The major and minor version of the `git` the current PATH starts (asked once per PATH value); null when none starts. */
export function gitVersion(): Promise<readonly [number, number] | null> {
  const key = process.env.PATH ?? '';
  let known = versions.get(key);
  if (known === undefined) {
    // os.tmpdir(): the process cwd may have been deleted, which would make the spawn fail
    known = runGit(['--version'], { cwd: os.tmpdir(), timeoutMs: 10_000 }).then((r) => {
      if (r.exitCode !== 0) return null;
      const m = /(\d+)\.(\d+)/.exec(r.stdout.toString('utf8'));
      return m === null ? [0, 0] : [Number(m[1]), Number(m[2])];
    });
    versions.set(key, known);
  }
  return known;
}

/** Whether a `git` binary can be started with the current PATH (cached per PATH value). */
export async function isGitAvailable(): Promise<boolean> {
  return (await gitVersion()) !== null;
}

/** Whether the PATH's git is at least `major.minor`. */
export async function isGitAtLeast(major: number, minor: number): Promise<boolean> {
  const v = await gitVersion();
  return v !== null && (v[0] > major || (v[0] === major && v[1] >= minor));
}
