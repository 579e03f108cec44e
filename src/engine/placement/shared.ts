import { ownProcessIdentity } from '../../platform/process/process-identity.js';
import type { Runner } from '../../runners/contract.js';
import type { Store } from '../../store/store.js';
import type { JobBus } from '../bus.js';
import { recoverDeadHolder } from '../maintenance/recovery.js';
import { Semaphore } from '../semaphore.js';
import type { Place, Placement, PlacementRequest } from './placement.js';

/** Cross-process lock looks: at most every 200 ms (spec 06). */
export const LOCK_POLL_MS = 200;

/**
 * The workspace itself, one job at a time under its lock (spec 06 "shared"): every task's attempts
 * work there, and the job's one evidence trail and verification serve them all.
 */
export class SharedPlacement implements Placement {
  readonly kind = 'shared';
  readonly #store: Store;
  readonly #bus: JobBus;

  constructor(store: Store, bus: JobBus) {
    this.#store = store;
    this.#bus = bus;
  }

  async acquire(job: PlacementRequest): Promise<Place | null> {
    if (!(await this.#lock(job))) return null;
    const exclusive = new Semaphore(1);
    let held = true;
    return {
      workspace: job.workspace,
      turn: (runner: Runner) => (runner.sharesWorkspace ? Promise.resolve(() => undefined) : exclusive.acquire()),
      release: () => {
        if (!held) return;
        held = false;
        this.#store.releaseWorkspace(job.jobId);
        this.#bus.announceRelease(job.jobId);
      },
    };
  }

  /** Waits for the workspace lock; false when the job was cancelled while it waited. */
  async #lock(job: PlacementRequest): Promise<boolean> {
    const me = ownProcessIdentity();
    let announced: string | null = null;
    for (;;) {
      if (job.signal.aborted) return false;
      const attempt = this.#store.tryLockWorkspace(job.workspace, job.jobId, me.pid, me.start);
      if (attempt.ok) return true;
      if (attempt.isHolderDead) {
        // spec 06: the dead holder's survivors go before this job starts, as after a restart
        await recoverDeadHolder(this.#store, attempt.holder);
        continue;
      }
      if (announced !== attempt.holder.jobId) {
        announced = attempt.holder.jobId;
        job.onWait(`waiting for job ${attempt.holder.jobId} in the same workspace`);
      }
      // same process: woken by the release itself; another process: look again every 200 ms
      const crossProcess = attempt.holder.pid !== process.pid;
      await new Promise<void>((resolve) => {
        const done = () => {
          off();
          clearTimeout(timer);
          job.signal.removeEventListener('abort', done);
          resolve();
        };
        const off = this.#bus.onRelease(attempt.holder.jobId, done);
        const timer = crossProcess ? setTimeout(done, LOCK_POLL_MS) : undefined;
        job.signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}
