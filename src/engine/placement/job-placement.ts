import type { Approval } from '../admission/approval.js';
import type { JobContext } from '../job-context.js';

/**
 * How a job's approved tasks are carried out in their places (issue 34): one small orchestrator per
 * kind of placement — the shared workspace under its lock, a worktree per task, a checkout of a
 * remote repository — each running the same pipeline (carry-out.ts `carryOut`: checkpoint, attempts,
 * evidence, verification, fix rounds, climbs) in its places. The composition root (compose.ts)
 * picks one per job; nothing else does.
 */
export interface JobPlacement {
  readonly kind: 'shared' | 'worktree' | 'remote';
  /** Carries out the approved tasks and settles the job; throws only when gaffer itself failed. */
  run(ctx: JobContext, approval: Approval): Promise<void>;
}
