import type { AttemptRow, JobRow } from '../../store/store.js';
import { epochS } from '../clock.js';

/** Finished jobs of a workspace its pace is read from: the newest PACE_WINDOW that ran to an end. */
export const PACE_WINDOW = 20;
/** The pace is this percentile (nearest rank) of their wall-clock. */
export const PACE_PERCENTILE = 0.9;
/** The pace raises the computed total to at most this many times itself (spec 07). */
export const CEILING_RAISE_MAX = 3;

/**
 * What jobs in one workspace really take (spec 07 "Adaptive ceiling"): the p90 wall-clock
 * (nearest rank) of its last PACE_WINDOW jobs that ran to an end (`done`, `partial`, `error`).
 *
 * Why p90 of the last 20: the ceiling is an upper bound a caller waits against, so the median
 * would leave the slow half of normal jobs outside it, while the maximum lets one outlier (a job
 * that waited hours for a rate-limit reset) set it for good. Past 10 jobs the p90 drops the
 * slowest one or two; under 10 it is the slowest, which the 3× cap still bounds. The newest 20
 * follow a repository whose suite grows slower, and read as one indexed range
 * (`jobs(workspace, finished, …)`, migration 0010). `cancelled` and `interrupted` jobs are left
 * out: one was cut short, the other's `finished` is when a later start noticed it.
 */
export interface WorkspacePace {
  /** The p90 wall-clock of those jobs, in seconds. */
  p90S: number;
  /** How many jobs it was read from (1..PACE_WINDOW). */
  jobs: number;
}

/** The workspace's pace from its jobs' wall-clock seconds (any order); null when none ran here. */
export function paceOf(durations: readonly number[]): WorkspacePace | null {
  if (durations.length === 0) return null;
  const sorted = [...durations].sort((a, b) => a - b);
  const rank = Math.ceil(PACE_PERCENTILE * sorted.length);
  return { p90S: sorted[rank - 1] ?? sorted[sorted.length - 1] ?? 0, jobs: sorted.length };
}

/** A live job's ceiling: what it may still take, and why it was raised (null: the computed one). */
export interface Ceiling {
  /** Seconds the job may still take. */
  seconds: number;
  /** Set when the workspace's pace raised the computed total: from what, to what, on how many jobs. */
  why: string | null;
}

/**
 * The most wall-clock the job can still take (spec 03): per-worker timeout × waves +
 * verification × (1 + fix rounds) + fix workers, raised (never lowered, at most 3×) to the
 * workspace's pace (spec 07), less what has already passed.
 */
export function ceilingOf(
  job: JobRow,
  workerCap: number,
  attempts: readonly AttemptRow[] = [],
  pace: WorkspacePace | null = null,
): Ceiling {
  const spec = job.spec;
  const n = spec.tasks.length;
  const waves = spec.parallel ? Math.ceil(n / Math.max(1, workerCap)) : n;
  const computed =
    spec.timeout_s * waves + spec.verify_timeout_s * (1 + spec.fix_rounds) + spec.timeout_s * spec.fix_rounds;
  const cap = computed * CEILING_RAISE_MAX;
  const total = pace === null ? computed : Math.min(cap, Math.max(computed, pace.p90S));
  const now = epochS();
  const elapsed = job.started === null ? 0 : now - job.started;
  // a rate-limited worker waiting for its reset keeps the job live: the ceiling grows by the wait (spec 04)
  const waiting = Math.max(0, ...attempts.map((a) => (a.state?.retry_at ?? 0) - now));
  return {
    seconds: Math.max(0, Math.round(total - elapsed + waiting)),
    why: total > computed && pace !== null ? raisedWhy(computed, total, pace) : null,
  };
}

function raisedWhy(computed: number, total: number, pace: WorkspacePace): string {
  const p90 = Math.round(pace.p90S);
  const from = `p90 of the last ${pace.jobs} job${pace.jobs === 1 ? '' : 's'} here`;
  return total < p90
    ? `raised from ${Math.round(computed)} s to ${Math.round(total)} s (the 3× cap): ${from} took ${p90} s`
    : `raised from ${Math.round(computed)} s to ${Math.round(total)} s: ${from}`;
}
