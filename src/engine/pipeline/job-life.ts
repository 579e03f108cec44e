import type { JobContext } from '../job-context.js';
import { failJob, refusedTask } from './carry-out.js';
import type { JobPlacement } from '../placement/job-placement.js';
import { settleJob, stoppedBeforeWork } from '../settle/settle.js';
import { seekApproval } from '../admission/approval.js';

/**
 * Runs a job through its whole life: the yes-gate, then its placement (picked for it by the
 * composition root) carries out its tasks' attempts — checkpoint, attempts routed by the Router and
 * run by the Executor, evidence, verification, fix attempts — and settles it.
 */
export async function runJob(ctx: JobContext, placement: JobPlacement): Promise<void> {
  try {
    // spec 05: the yes comes before the workspace is taken; nothing runs or waits on it meanwhile
    const approval = await seekApproval(ctx, (task, why) => refusedTask(ctx, task, why));
    if (approval === null) return settleJob(ctx, stoppedBeforeWork());
    if (approval.approved.length === 0)
      return settleJob(ctx, { ...stoppedBeforeWork(approval.refused), verdict: 'not approved' });
    await placement.run(ctx, approval);
  } catch (err) {
    failJob(ctx, err);
  }
}
