import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * gaffer's secrets leave its environment once read (issue 11): a worker without the sandbox reads
 * `/proc/$PPID/environ`, and every child gaffer starts without an explicit env inherits
 * `process.env`. Deleting from `process.env` is not enough for the first: `/proc/<pid>/environ` is
 * the env block the kernel put on the stack at exec (between `env_start` and `env_end`), which
 * `unsetenv` never touches, and Node has no `execve` to start over. So the value bytes in that block
 * are overwritten through `/proc/self/mem` (a process may write its own memory).
 */

/** What gaffer held back at start, by name; handed out only to a runner allowed the name (env.ts). */
const HELD = new Map<string, string>();

/** What the start-time scrub did, for `gaffer doctor`. */
export interface EnvScrubStatus {
  /** Whether it ran in this process (the CLI runs it at start for every command). */
  ran: boolean;
  /** Names removed from `process.env` and kept in memory. */
  held: string[];
  /** True when their values are gone from `/proc/<pid>/environ` too (or there were none). */
  wiped: boolean;
  /** Why the wipe did not work, in words; null when it did. */
  reason: string | null;
}

let status: EnvScrubStatus = { ran: false, held: [], wiped: false, reason: 'not run in this process' };

/**
 * Moves `names` out of `process.env` into memory (readHeldEnv) and overwrites their values in this
 * process's exec-time env block, so neither a child nor `/proc/<pid>/environ` shows them.
 */
export function holdEnvSecrets(names: Iterable<string>): EnvScrubStatus {
  const taken: string[] = [];
  for (const name of names) {
    const value = process.env[name];
    if (value === undefined) continue;
    HELD.set(name, value);
    delete process.env[name];
    taken.push(name);
  }
  const wipe = wipeEnvironValues(new Set([...HELD.keys()]));
  status = { ran: true, held: [...HELD.keys()].sort(), wiped: wipe === null, reason: wipe };
  return status;
}

/** The value gaffer held back at start under `name`; undefined when it held none. */
export function readHeldEnv(name: string): string | undefined {
  return HELD.get(name);
}

/** The environment as gaffer was started with: `process.env` plus what it held back (for reading config again). */
export function readStartEnv(): NodeJS.ProcessEnv {
  return { ...Object.fromEntries(HELD), ...process.env };
}

/** What the start-time scrub did in this process. */
export function describeEnvScrub(): EnvScrubStatus {
  return status;
}

/** `gaffer doctor`'s line on it: whether `/proc/<pid>/environ` of this gaffer holds none of what it held back. */
export function checkEnvScrub(): { status: 'ok' | 'warn'; detail: string; fix: string | null } {
  if (!status.ran) return { status: 'ok', detail: 'not run in this process (the CLI runs it at start)', fix: null };
  const names =
    status.held.length === 0
      ? 'no secret or credential was in the environment'
      : `${status.held.join(', ')} held in memory, gone from the environment`;
  if (status.wiped) return { status: 'ok', detail: `${names} and from /proc/${process.pid}/environ`, fix: null };
  return {
    status: 'warn',
    detail: `${names}, but /proc/${process.pid}/environ still shows the values: ${status.reason ?? 'unknown'}`,
    fix: 'an unsandboxed worker of the same user can read them: keep the sandbox working (sandbox: auto with bubblewrap), or put the keys in the config file (models.<name>.key) instead of the environment',
  };
}

/**
 * Overwrites with NUL bytes the values of `names` in `/proc/self/environ`'s block; null when done
 * (nothing to do counts), else why not. Only whole `NAME=` entries at entry starts are touched.
 */
function wipeEnvironValues(names: ReadonlySet<string>): string | null {
  let block: Buffer;
  let start: number;
  try {
    block = readFileSync('/proc/self/environ');
    start = readEnvStart(readFileSync('/proc/self/stat', 'utf8'));
  } catch (err) {
    return `cannot read this process's env block: ${errorText(err)}`;
  }
  const spans = findValueSpans(block, names);
  if (spans.length === 0) return null;
  let fd: number | null = null;
  try {
    fd = openSync('/proc/self/mem', 'r+');
    for (const [from, to] of spans) writeSync(fd, Buffer.alloc(to - from), 0, to - from, start + from);
  } catch (err) {
    return `cannot overwrite the env block through /proc/self/mem: ${errorText(err)}`;
  } finally {
    if (fd !== null) closeSync(fd);
  }
  const after = readFileSync('/proc/self/environ');
  return findValueSpans(after, names).some(([from, to]) => after.subarray(from, to).some((b) => b !== 0))
    ? 'the env block still shows the values after the overwrite'
    : null;
}

/** `env_start` (field 50 of `/proc/<pid>/stat`, proc(5)): where the env block starts in memory. */
export function readEnvStart(stat: string): number {
  // comm may hold spaces and parentheses: the fields after it start past the LAST ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[50 - 3]);
  if (!Number.isSafeInteger(start) || start <= 0)
    throw new Error(`no env_start in /proc/self/stat (field 50 reads ${fields[50 - 3] ?? 'nothing'})`);
  return start;
}

/** The byte ranges `[from, to)` of the values of `names` in an env block (`NAME=value\0…`). */
export function findValueSpans(block: Buffer, names: ReadonlySet<string>): [number, number][] {
  const spans: [number, number][] = [];
  let at = 0;
  while (at < block.length) {
    let end = block.indexOf(0, at);
    if (end < 0) end = block.length;
    const eq = block.indexOf(0x3d, at);
    if (eq > at && eq < end && names.has(block.toString('latin1', at, eq)) && end > eq + 1) spans.push([eq + 1, end]);
    at = end + 1;
  }
  return spans;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
