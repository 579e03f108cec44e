import type { JobContext } from './job-context.js';
import { carryOut, failJob, wholeJob } from './job-run.js';
import type { Place } from './placement/placement.js';
import { settleJob } from './settle.js';
import { runWorktreeJob } from './worktree-job.js';

/**
 * Runs a job through its whole life: its place (the Placement) → checkpoint → its tasks' attempts
 * (routed by the Router, run by the Executor) → evidence → verification → fix attempts → settle.
 */
export async function runJob(ctx: JobContext): Promise<void> {
  let place: Place | null = null;
  try {
    // spec 06: a worktree job holds no lock on the workspace but while it applies a verified merge
    if (ctx.spec.isolation === 'worktree') return await runWorktreeJob(ctx);
    place = await ctx.services.placement.acquire({ jobId: ctx.id, workspace: ctx.spec.workspace, signal: ctx.abort.signal, onWait: (message) => ctx.phase(message) });
    if (!place) {
      settleJob(ctx, { workers: [], fixers: [], changes: null, changeSet: null, verification: null, cancelled: true, fixRounds: 0 });
      return;
    }
    settleJob(ctx, await carryOut(ctx, place, wholeJob(ctx)));
  } catch (err) {
    failJob(ctx, err);
  } finally {
    place?.release();
  }
}
