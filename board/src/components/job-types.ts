// The full answer of one job (`GET /api/jobs/:id?full=1`, spec 03) as the server's own schema types
// it (type-only: nothing of the server is bundled, and there is no second model of the data here).
import type { FullJob, ProgressEntry } from '../../../src/domain/answer.js';
import type { JobStatus } from '../../../src/domain/status.js';

export type { FullJob };
export type FullResult = NonNullable<FullJob['result']>;
export type FullWorker = FullResult['workers'][number];
export type Verification = NonNullable<FullResult['verification']>;
export type Proof = NonNullable<FullResult['proof']>;
export type Worktrees = NonNullable<FullResult['worktrees']>;
export type { ProgressEntry };

/** spec 01's live statuses (LIVE_JOB_STATUSES; a value of the server's is not bundled, the type checks the words). */
const LIVE: ReadonlySet<string> = new Set<JobStatus>([
  'queued',
  'awaiting_approval',
  'running',
  'verifying',
  'cancelling',
]);

/** True while the job can still change. */
export function isLive(status: string): boolean {
  return LIVE.has(status);
}

/** The task a worker row is an attempt of: its own name, or `task+retry`, `task+<entry>`, `task+fix-N`; null for a job-wide fixer. */
export function taskOfWorker(job: FullJob, worker: string): FullJob['tasks'][number] | null {
  return job.tasks.find((t) => worker === t.name || worker.startsWith(`${t.name}+`)) ?? null;
}
