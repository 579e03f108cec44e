import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { hasProcFs, listProcessGroupMembers, readProcStat } from './proc-stat.js';
import { isSameStartTime, readProcessStartTime } from './process-start-time.js';

/** How to stop a process group. */
export interface TerminateOptions {
  /** Time between SIGTERM and SIGKILL, ms (default 3000). */
  graceMs?: number;
  /** How long to wait for the group to vanish after SIGKILL, ms (default 5000). */
  waitMs?: number;
  /** Poll interval while waiting, ms (default 25). */
  pollMs?: number;
}

/** What stopping a process group did. */
export interface TerminateResult {
  /** True when no live process of the group remains. */
  isGone: boolean;
  /** True when SIGTERM was not enough and SIGKILL was sent. */
  escalated: boolean;
}

const DEFAULT_GRACE_MS = 3000;
const DEFAULT_WAIT_MS = 5000;
const DEFAULT_POLL_MS = 25;

function assertKillablePgid(pgid: number): void {
  // kill(0, …) is our own group and kill(-1, …) is every process we may signal: never.
  if (!Number.isInteger(pgid) || pgid <= 1)
    throw new RangeError(`process group id must be an integer > 1, got ${pgid}`);
  const own = readProcStat(process.pid);
  if (own !== null && own.pgrp === pgid) throw new RangeError(`refusing to signal gaffer's own process group ${pgid}`);
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

/**
 * True while the group has a live (non-zombie) member. `kill(-pgid, 0)` alone is not enough:
 * an unreaped zombie still counts for it, and an init that does not reap orphans (as in some
 * containers) keeps those zombies forever — they are dead, so /proc decides when it can.
 */
export function isProcessGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return errorCode(err) !== 'ESRCH'; // EPERM: it exists, it is just not ours
  }
  if (!hasProcFs()) return true;
  const members = listProcessGroupMembers(pgid);
  // none listed although kill succeeded: it died between the two reads, or /proc hides it; poll again
  if (members.length === 0) return true;
  return members.some((m) => m.state !== 'Z' && m.state !== 'X');
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if (errorCode(err) !== 'ESRCH') throw err;
  }
}

/**
 * Waits until the group has no live member; false when `timeoutMs` passed first. Polls at 1 ms,
 * then twice as long each time up to `pollMs`: most groups are gone within a few ms of the signal.
 */
export async function waitForProcessGroupExit(
  pgid: number,
  timeoutMs: number,
  pollMs = DEFAULT_POLL_MS,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (let interval = Math.min(1, pollMs); ; interval = Math.min(interval * 2, pollMs)) {
    if (!isProcessGroupAlive(pgid)) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await sleep(Math.min(interval, left));
  }
}

/**
 * Stops a whole process group: SIGTERM (and SIGCONT, so stopped members see it), then
 * SIGKILL after the grace period, then waits (bounded) until no live member remains.
 */
export async function terminateProcessGroup(pgid: number, opts: TerminateOptions = {}): Promise<TerminateResult> {
  assertKillablePgid(pgid);
  const graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  if (!isProcessGroupAlive(pgid)) return { isGone: true, escalated: false };
  signalGroup(pgid, 'SIGTERM');
  signalGroup(pgid, 'SIGCONT');
  if (await waitForProcessGroupExit(pgid, graceMs, pollMs)) return { isGone: true, escalated: false };
  signalGroup(pgid, 'SIGKILL');
  const isGone = await waitForProcessGroupExit(pgid, opts.waitMs ?? DEFAULT_WAIT_MS, pollMs);
  return { isGone, escalated: true };
}

/** What restart recovery found for a recorded process group. */
export type RecoveryOutcome =
  /** The group was ours and was stopped (see `isGone`). */
  | 'killed'
  /** Nothing of the group is alive. */
  | 'not_running'
  /** The pid now belongs to another process (start time differs): nothing was signalled. */
  | 'pid_recycled'
  /** No /proc to check start times against: nothing was signalled. */
  | 'unverifiable';

/** The answer of `killProcessGroupIfAlive`. */
export interface RecoveryResult {
  outcome: RecoveryOutcome;
  /** True when no live member of the group remains (false for `pid_recycled`/`unverifiable`). */
  isGone: boolean;
  /** In words, naming the pid and times. */
  detail: string;
}

/** Options of `killProcessGroupIfAlive`. */
export interface RecoveryOptions extends TerminateOptions {
  /** Start times within this many seconds match (default 1; see `isSameStartTime`). */
  toleranceS?: number;
}

/**
 * Restart recovery (spec 04): kills the survivors of a worker's process group recorded as
 * (`pgid`, `startedAt` epoch s) by an earlier gaffer, and never an unrelated process.
 *
 * - Leader still listed in /proc (alive or zombie): its start time must match the recorded
 *   one, else the pid was recycled and nothing is signalled. (While any member of our group
 *   lives, the kernel keeps the number pinned, so a different process holding it means our
 *   group is gone.)
 * - Leader gone: the group may live on in its members (`kill(-pgid, 0)` / /proc tell). Each
 *   must have started no earlier than the recorded leader did; one that started before
 *   proves the number now names another group, and nothing is signalled.
 * - Without /proc nothing can be verified, so nothing is signalled.
 */
export async function killProcessGroupIfAlive(
  pgid: number,
  startedAt: number,
  opts: RecoveryOptions = {},
): Promise<RecoveryResult> {
  assertKillablePgid(pgid);
  const toleranceS = opts.toleranceS ?? 1;
  if (!hasProcFs()) {
    return { outcome: 'unverifiable', isGone: false, detail: `no /proc: cannot verify process group ${pgid}` };
  }
  const leaderStart = readProcessStartTime(pgid);
  if (leaderStart !== null) {
    if (!isSameStartTime(leaderStart, startedAt, toleranceS)) {
      return {
        outcome: 'pid_recycled',
        isGone: false,
        detail: `pid ${pgid} started at ${leaderStart.toFixed(2)}, recorded ${startedAt.toFixed(2)}: another process`,
      };
    }
  } else {
    const live = listProcessGroupMembers(pgid).filter((m) => m.state !== 'Z' && m.state !== 'X');
    for (const member of live) {
      const start = readProcessStartTime(member.pid);
      if (start !== null && start < startedAt - toleranceS) {
        return {
          outcome: 'pid_recycled',
          isGone: false,
          detail: `process ${member.pid} of group ${pgid} started before the recorded leader: another group`,
        };
      }
    }
  }
  if (!isProcessGroupAlive(pgid)) {
    return { outcome: 'not_running', isGone: true, detail: `process group ${pgid} has no live process` };
  }
  const result = await terminateProcessGroup(pgid, opts);
  return {
    outcome: 'killed',
    isGone: result.isGone,
    detail: `process group ${pgid} ${result.isGone ? 'stopped' : 'still alive after SIGKILL'}${result.escalated ? ' (SIGKILL)' : ''}`,
  };
}
