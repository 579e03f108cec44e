import type { TaskSpec } from '../../domain/request.js';
import type { SteerMessage, SteerOffer } from '../../domain/steer.js';
import type { JobRow } from '../../store/store.js';

/**
 * Where admission hands a job to be run (issue 12): the in-process queue now (live-jobs.ts: the
 * job runs in this process at once, its workers waiting for the executor's slots); a BullMQ queue
 * later (issue 17). Cancel and "who runs this job" are the queue's answers.
 */
export interface JobQueue {
  /** How many jobs this queue runs now. */
  readonly size: number;
  /** Starts a job just admitted (`created` and `queued` are announced before its run begins). */
  start(job: JobRow): void;
  /** True when this queue runs the job. */
  has(id: string): boolean;
  /** Settles when a job it runs is final (at once for any other job). */
  settled(id: string): Promise<void>;
  /** Cancels a job it runs; false when it runs elsewhere (or nowhere). */
  cancel(id: string): boolean;
  /** Hands a message to a task of a job it runs (issue 16 "steering"); null for any other job. */
  steer(id: string, task: TaskSpec, message: SteerMessage): SteerOffer | null;
  /** Cancels every job it runs (`interrupted` with `reason` when given) and waits for them to settle. */
  stopAll(reason?: string | null): Promise<void>;
}
