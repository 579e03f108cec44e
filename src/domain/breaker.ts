// spec 07 "the breaker": N unattended jobs in a row that failed outright (status `error`, or not one
// worker done) open it; unattended jobs are then refused with `breaker_open` until a cool-down has
// passed since the newest failure or an unattended job succeeds. Cancelled, interrupted and mixed
// results neither trip nor clear it. Pure: read from the jobs the store has, nothing kept apart.
import type { JobStatus } from './status.js';

export interface BreakerSettings {
  /** Failed-outright unattended jobs in a row that open it (default 3). */
  trip_after: number;
  /** Seconds after the newest of them before an unattended job may try again (default 30 min). */
  cooldown_s: number;
}

export const DEFAULT_BREAKER: BreakerSettings = { trip_after: 3, cooldown_s: 1800 };

/** A finished unattended job, as the breaker reads it. */
export interface UnattendedEnd {
  id: string;
  status: JobStatus;
  /** Epoch seconds. */
  finished: number;
  /** Its task workers that ended `done`, and all of them. */
  workersDone: number;
  workers: number;
}

/** How one finished unattended job counts: `failed` trips, `succeeded` clears, `neutral` neither. */
export function breakerReading(job: UnattendedEnd): 'failed' | 'succeeded' | 'neutral' {
  if (job.status === 'cancelled' || job.status === 'interrupted') return 'neutral';
  if (job.status === 'error' || job.workersDone === 0) return 'failed';
  if (job.status === 'done') return 'succeeded';
  return 'neutral';
}

export interface BreakerState {
  open: boolean;
  /** Failed-outright jobs in a row, newest first, since the last success. */
  failures: string[];
  /** Seconds until the cool-down ends; 0 when closed. */
  retry_after_s: number;
  why: string;
}

/** The breaker now, from finished unattended jobs newest first. */
export function breakerState(
  newestFirst: readonly UnattendedEnd[],
  settings: BreakerSettings,
  now: number,
): BreakerState {
  const failures: UnattendedEnd[] = [];
  for (const job of newestFirst) {
    const reading = breakerReading(job);
    if (reading === 'succeeded') break;
    if (reading === 'failed') failures.push(job);
  }
  const newest = failures[0];
  const ids = failures.map((j) => j.id);
  if (newest === undefined || failures.length < settings.trip_after) {
    return {
      open: false,
      failures: ids,
      retry_after_s: 0,
      why: `${failures.length} unattended job(s) in a row failed outright (opens at ${settings.trip_after})`,
    };
  }
  const left = newest.finished + settings.cooldown_s - now;
  if (left <= 0)
    return {
      open: false,
      failures: ids,
      retry_after_s: 0,
      why: `cool-down over: the next unattended job may try again (${failures.length} failed in a row)`,
    };
  return {
    open: true,
    failures: ids,
    retry_after_s: Math.ceil(left),
    why: `the breaker is open: ${failures.length} unattended jobs in a row failed outright (${ids.slice(0, settings.trip_after).join(', ')}); unattended jobs are refused for ${Math.ceil(left)} s (the cool-down), or until an unattended job already running succeeds`,
  };
}
