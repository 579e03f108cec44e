import type { Approval } from '../admission/approval.js';
import type { JobContext } from '../job-context.js';
import { carryOut, inRequestOrder, wholeJob, type Scope } from '../pipeline/carry-out.js';
import { settleJob, stoppedBeforeWork } from '../settle/settle.js';
import type { JobPlacement } from './job-placement.js';
import type { Place, Placement } from './placement.js';

/**
 * The shared workspace (spec 06): the whole job in the workspace, under its lock, one place for
 * every task. A climb to a rung that needs a yes lets go of the workspace until it is answered.
 */
export function sharedJob(placement: Placement): JobPlacement {
  return { kind: 'shared', run: (ctx, approval) => runShared(ctx, approval, placement) };
}

async function runShared(ctx: JobContext, { approved, refused }: Approval, placement: Placement): Promise<void> {
  const acquire = () =>
    placement.acquire({
      jobId: ctx.id,
      workspace: ctx.spec.workspace,
      signal: ctx.abort.signal,
      onWait: (message) => ctx.phase(message),
    });
  let place: Place | null = await acquire();
  try {
    if (!place) return settleJob(ctx, stoppedBeforeWork(refused));
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
  } finally {
    place?.release();
  }
}
