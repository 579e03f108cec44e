import { killProcessGroupIfAlive } from '../runners/process/terminate.js';
import { buildVerdict } from '../domain/verdict.js';
import type { JobResult } from '../domain/result.js';
import { isSameProcessAlive } from '../store/process-identity.js';
import type { Store } from '../store/store.js';
import { epochS } from './clock.js';

export const INTERRUPTED_VERDICT = 'interrupted by a restart of gaffer — re-dispatch the remaining work';

/**
 * Turns every live job whose process is dead into `interrupted` (spec 07): kills the survivors of
 * its workers, closes its open attempts, releases its workspace; its evidence so far stays.
 * A job whose process is alive is never touched.
 */
export async function recoverOrphans(store: Store, _dataDir: string, verdict = INTERRUPTED_VERDICT): Promise<string[]> {
  const orphans = store.listLiveJobs().filter((job) => job.pid === null || !isSameProcessAlive(job.pid, job.pidStart));
  for (const job of orphans) {
    const attempts = store.listAttempts(job.id);
    for (const a of attempts) {
      if (a.finished !== null) continue;
      if (a.pgid !== null && a.pgStart !== null) await killProcessGroupIfAlive(a.pgid, a.pgStart);
      store.updateAttempt(job.id, a.worker, { status: 'interrupted', outcome: 'cancelled', finished: epochS(), lastEvent: 'interrupted' });
    }
    const result = job.result as JobResult | null;
    // another process may be recovering the same job: only the first one writes
    const claimed = store.db
      .prepare(`UPDATE jobs SET status = 'interrupted', finished = ?, error = ?, phase = 'settled' WHERE id = ? AND status = ?`)
      .run(epochS(), verdict, job.id, job.status).changes;
    if (claimed === 0) continue;
    store.updateJob(job.id, {
      verdict: buildVerdict({
        status: 'interrupted',
        error: verdict,
        workerStatuses: store.listAttempts(job.id).filter((a) => a.role === 'worker').map((a) => a.status),
        filesChanged: result?.changes?.count ?? null,
        verification: result?.verification ?? null,
        fixRoundsRun: result?.fix_rounds_run ?? 0,
        converged: false,
        proof: null,
        claimedOnly: [],
        criteriaUnmet: [],
        reportedStates: [],
      }),
    });
    store.appendEvent(job.id, { name: 'job', event: 'status', message: 'interrupted', status: 'interrupted' });
    store.releaseWorkspace(job.id);
  }
  return orphans.map((j) => j.id);
}
