import { readFileSync } from 'node:fs';
import { readProcStat } from './proc-stat.js';

// USER_HZ, the unit of /proc/<pid>/stat times, is 100 on every Linux architecture
// Node supports; sysconf(_SC_CLK_TCK) is not reachable from Node without a subprocess.
const CLOCK_TICKS_PER_SECOND = 100;

let cachedBootTime: number | null | undefined;

/** Boot time in epoch seconds (`btime` of /proc/stat), read once per process; null without /proc. */
export function readBootTime(): number | null {
  if (cachedBootTime !== undefined) return cachedBootTime;
  try {
    const match = /^btime\s+(\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    cachedBootTime = match?.[1] !== undefined ? Number(match[1]) : null;
  } catch {
    cachedBootTime = null;
  }
  return cachedBootTime;
}

/**
 * Start time of a process in epoch seconds (0.01 s resolution), from /proc; null when the
 * process does not exist or /proc is not there. Together with the pid it names one process:
 * a recycled pid has a different start time.
 */
export function readProcessStartTime(pid: number): number | null {
  const stat = readProcStat(pid);
  return stat === null ? null : startTimeFromTicks(stat.startTicks);
}

/** A start time read elsewhere (field 22 of /proc/<pid>/stat, clock ticks since boot) in epoch seconds; null without /proc. */
export function startTimeFromTicks(startTicks: number): number | null {
  const bootTime = readBootTime();
  return bootTime === null ? null : bootTime + startTicks / CLOCK_TICKS_PER_SECOND;
}

/** Start time of this very process in epoch seconds (from /proc, else from its uptime). */
export function readOwnStartTime(): number {
  return readProcessStartTime(process.pid) ?? Date.now() / 1000 - process.uptime();
}

/**
 * True when two start times name the same process. `btime` is derived from the wall clock
 * and can move by a second between reads (or across an NTP step between two gaffer runs),
 * so times within `toleranceS` match; a recycled pid would also need to start within that
 * window AND lead a process group to be mistaken, which pid wrap-around makes implausible.
 */
export function isSameStartTime(a: number, b: number, toleranceS = 1): boolean {
  return Math.abs(a - b) <= toleranceS;
}
