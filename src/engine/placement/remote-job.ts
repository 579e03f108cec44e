import { checkOutRemote, dropRemoteCheckout } from './remote-checkout.js';
import type { JobPlacement } from './job-placement.js';

/**
 * A job on a remote repository (spec 09): a checkout of the ref made now is its workspace, where
 * `inner` carries it out as it would a local one; the checkout goes when the job ends.
 */
export function remoteCheckoutJob(inner: JobPlacement): JobPlacement {
  return {
    kind: 'remote',
    run: async (ctx, approval) => {
      const repo = ctx.spec.repo;
      if (!repo) throw new Error('a remote checkout job without a repo');
      try {
        await checkOutRemote(ctx, repo);
        await inner.run(ctx, approval);
      } finally {
        await dropRemoteCheckout(ctx.services.dataDir, repo, ctx.id, ctx.spec.workspace).catch(() => undefined);
      }
    },
  };
}
