// A job's live events (spec 02 "Live events"): the engine appends them, the store keeps them, every
// door streams them. Plain data here so a door reads events without importing the store.
import { isFinalStatus, JOB_STATUSES, type JobStatus } from './status.js';

/** A job event as kept and streamed. Extra fields ride along. */
export interface JobEvent {
  /** The job's own event number, from 1. */
  seq: number;
  /** Epoch seconds. */
  ts: number;
  /** `job` or a worker's name. */
  name: string;
  /** What happened (`phase`, `started`, `output`, `settled`, …). */
  event: string;
  /** One line for a person. */
  message: string;
  [extra: string]: unknown;
}

/** An event to append: the store stamps `seq` and (unless given) `ts`. */
export interface NewJobEvent {
  /** `job` or a worker's name. */
  name: string;
  /** What happened. */
  event: string;
  /** One line for a person. */
  message: string;
  /** Epoch seconds; the store's clock when absent. */
  ts?: number;
  [extra: string]: unknown;
}

/** The job status a `status` event announces; null for any other event. */
export function statusOfEvent(e: Pick<JobEvent, 'event'> & { status?: unknown }): JobStatus | null {
  if (e.event !== 'status') return null;
  return JOB_STATUSES.find((s) => s === e.status) ?? null;
}

/** True for the event that announces a job's final status. */
export function endsJob(e: Pick<JobEvent, 'event'> & { status?: unknown }): boolean {
  const status = statusOfEvent(e);
  return status !== null && isFinalStatus(status);
}
