/** Job statuses of spec 01. */
export const JOB_STATUSES = [
  'queued',
  'awaiting_approval',
  'running',
  'verifying',
  'cancelling',
  'done',
  'partial',
  'error',
  'cancelled',
  'interrupted',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const LIVE_JOB_STATUSES: ReadonlySet<JobStatus> = new Set([
  'queued',
  'awaiting_approval',
  'running',
  'verifying',
  'cancelling',
]);

/** True once a job can never change again. */
export function isFinalStatus(status: JobStatus): boolean {
  return !LIVE_JOB_STATUSES.has(status);
}

/** Worker statuses of spec 01. */
export const WORKER_STATUSES = [
  'queued',
  'running',
  'done',
  'error',
  'timeout',
  'stalled',
  'stuck',
  'stopped',
  'rate_limited',
  'refused',
  'cancelled',
  'interrupted',
] as const;
export type WorkerStatus = (typeof WORKER_STATUSES)[number];

/** The four-value answer a coordinator acts on (spec 01). */
export type WorkerOutcome = 'success' | 'expected_error' | 'cancelled' | 'panic';

export type WorkerRole = 'worker' | 'fixer' | 'reviewer';

export const TASK_TYPES = [
  'design',
  'implement',
  'fix',
  // writes or changes tests: implies `tests_may_change` (issue: the checkpoint's tests judge the work)
  'test',
  'verify',
  'review',
  'sweep',
  'research',
  'judge',
  'triage',
] as const;
export type TaskType = (typeof TASK_TYPES)[number];

/** Types whose work is expected to change the workspace (spec 03 `proved`). */
export const CHANGING_TASK_TYPES: ReadonlySet<TaskType> = new Set(['implement', 'fix', 'sweep', 'design', 'test']);

/** Detected states of spec 04 (reported, never a reason to kill). */
export const DETECTED_STATES = [
  'rate_limited',
  'waiting_for_input',
  'auth_error',
  'stuck',
  'disk_full',
  'oom',
  // issue 15: not read from the output — gaffer holds the attempt before it starts
  'provider_suspended',
  'budget_paused',
] as const;
export type DetectedState = (typeof DETECTED_STATES)[number];
