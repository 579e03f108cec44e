import type { JobContext } from './job-context.js';
import { carryOut, failJob, inRequestOrder, refusedTask, wholeJob, type Scope } from './job-run.js';
import type { Place } from './placement/placement.js';
import { settleJob } from './settle.js';
import { runWorktreeJob } from './worktree-job.js';
import { seekApproval } from './approval.js';
import { checkOutRemote, dropRemoteCheckout } from './remote-checkout.js';

/**
 * Runs a job through its whole life: its place (the Placement) → checkpoint → its tasks' attempts
 * (routed by the Router, run by the Executor) → evidence → verification → fix attempts → settle.
 */
export async function runJob(ctx: JobContext): Promise<void> {
  let place: Place | null = null;
  try {
    // spec 05: the yes comes before the workspace is taken; nothing runs or waits on it meanwhile
    const approval = await seekApproval(ctx, (task, why) => refusedTask(ctx, task, why));
    const cancelled = { workers: [], fixers: [], changes: null, changeSet: null, verification: null, cancelled: true, fixRounds: 0 };
    if (approval === null) return settleJob(ctx, cancelled);
    const { approved, refused } = approval;
    if (approved.length === 0) return settleJob(ctx, { ...cancelled, workers: refused, verdict: 'not approved' });
    // spec 09: a job on a remote repository works in a checkout of it made now, from the ref as it is now
    if (ctx.spec.repo) await checkOutRemote(ctx, ctx.spec.repo);
    // spec 06: a worktree job holds no lock on the workspace but while it applies a verified merge
    if (ctx.spec.isolation === 'worktree') return await runWorktreeJob(ctx, approval);
    const acquire = () => ctx.services.placement.acquire({ jobId: ctx.id, workspace: ctx.spec.workspace, signal: ctx.abort.signal, onWait: (message) => ctx.phase(message) });
    place = await acquire();
    if (!place) return settleJob(ctx, { ...cancelled, workers: refused });
    const scope: Scope = {
      ...wholeJob(ctx, approved),
      // spec 05: a climb to a rung that needs a yes releases the workspace until it is answered
      yieldPlace: async (wait) => {
        place?.release();
        place = null;
        const yes = await wait();
        if (yes === true) place = await acquire();
        return { yes, place };
      },
    };
    const outcome = await carryOut(ctx, place, scope);
    settleJob(ctx, { ...outcome, workers: inRequestOrder(ctx, [...outcome.workers, ...refused]) });
  } catch (err) {
    failJob(ctx, err);
  } finally {
    place?.release();
    if (ctx.spec.repo) await dropRemoteCheckout(ctx.services.dataDir, ctx.spec.repo, ctx.id, ctx.spec.workspace).catch(() => undefined);
  }
}

