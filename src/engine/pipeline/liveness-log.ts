import { join } from 'node:path';
import type { WorkerOutcome, WorkerStatus } from '../../domain/status.js';
import type { JobContext } from '../job-context.js';
import { appendJsonLine } from '../settle/outcome-log.js';

/** The workers' lifecycle beside the outcome log, in the data dir (spec 05 "Liveness"). */
export const WORKER_STATUS_FILE = 'worker_status.jsonl';

/** `running` before an attempt's process starts; `requeued` when a rate limit sends it to wait; `finished` on every end. */
export type WorkerPhase = 'running' | 'requeued' | 'finished';

/** One line of `worker_status.jsonl`. */
export interface WorkerStatusLine {
  /** ISO 8601. */
  ts: string;
  job: string;
  /** The worker (attempt) name: the task's name, or fixer-N. */
  worker: string;
  task: string;
  phase: WorkerPhase;
  /** `finished`: the worker row's status (`error` when gaffer itself failed on the way). */
  status?: WorkerStatus;
  /** `finished`: the worker row's outcome; null when gaffer failed before its end was known. */
  outcome?: WorkerOutcome | null;
  /** `finished` because gaffer failed on the way: what failed. */
  error?: string;
}

/**
 * Appends one lifecycle line for a worker of the job. Best effort: the worker's row and events in
 * the store say the same, and a full disk must not fail the worker this only watches.
 */
export function recordWorkerPhase(
  ctx: JobContext,
  worker: { name: string; task: string },
  line: Pick<WorkerStatusLine, 'phase' | 'status' | 'outcome' | 'error'>,
): void {
  const full: WorkerStatusLine = {
    ts: new Date().toISOString(),
    job: ctx.id,
    worker: worker.name,
    task: worker.task,
    ...line,
  };
  appendJsonLine(join(ctx.services.dataDir, WORKER_STATUS_FILE), full);
}
