import { join } from 'node:path';
import { pruneSnapshots } from '../../evidence/index.js';
import { recycleFolder } from '../../platform/files/spare-entries.js';
import type { Store } from '../../store/store.js';
import { hasOrphans, recoverOrphans } from './recovery.js';

/** How often an engine looks for live jobs whose process died (spec 07: noticed within seconds, no `wait` needed). */
export const ORPHAN_LOOK_MS = 1_000;

/**
 * While jobs are live, retention looks after every this many job ends (and whenever none is live);
 * and the snapshots of pruned jobs wait until this many (or `retention.jobs`, when fewer) are owed.
 */
const PRUNE_EVERY = 32;

/** How the engine's background upkeep is set up. */
export interface MaintenanceOptions {
  /** Finished jobs kept (`retention.jobs`). */
  retentionJobs: number;
}

/**
 * The engine's background upkeep, none of it asked for by a caller: jobs whose process died, and
 * retention of finished jobs and their snapshots. (Cancels other processes ask for are the job
 * queue's: live-jobs.ts.)
 */
export class Maintenance {
  readonly #store: Store;
  readonly #dataDir: string;
  readonly #opts: MaintenanceOptions;
  #orphanTimer: NodeJS.Timeout | null = null;
  /** The recovery in flight, one at a time. */
  #recovering: Promise<unknown> | null = null;
  /** The prune in flight (old jobs' folders, then their snapshots), one at a time. */
  #pruning: Promise<void> = Promise.resolve();
  /** Jobs ended since retention last looked (while jobs were live). */
  #endsSincePrune = 0;
  /** Jobs pruned whose snapshots have not been pruned since. */
  #snapshotsOwed = 0;
  /** A prune of snapshots waits its turn behind the prune in flight: it takes whatever is owed by then. */
  #snapshotsQueued = false;
  #stopped = false;

  constructor(store: Store, dataDir: string, opts: MaintenanceOptions) {
    this.#store = store;
    this.#dataDir = dataDir;
    this.#opts = opts;
  }

  /** Resolves once the background prune in flight is done. */
  async pruned(): Promise<void> {
    await this.#pruning;
  }

  /** Before the engine closes: prunes the snapshots still owed (when nothing is live), and waits for it. */
  async pruneOwed(): Promise<void> {
    if (this.#snapshotsOwed > 0) this.#pruneSnapshots();
    await this.#pruning;
  }

  /** A job whose process died (another CLI, a killed server) is recovered by whoever is alive: one indexed read a second. */
  watchOrphans(): void {
    const report = (err: unknown) =>
      void process.stderr.write(
        `gaffer: recovering dead jobs failed: ${err instanceof Error ? err.message : String(err)}\n`,
      );
    this.#orphanTimer = setInterval(() => {
      if (this.#stopped || this.#recovering !== null || !this.#store.db.open) return;
      try {
        if (!hasOrphans(this.#store)) return;
      } catch (err) {
        report(err);
        return;
      }
      this.#recovering = recoverOrphans(this.#store, this.#dataDir)
        .catch(report)
        .finally(() => (this.#recovering = null));
    }, ORPHAN_LOOK_MS);
    this.#orphanTimer.unref();
  }

  /**
   * Retention after a job ends: drops the oldest finished jobs past the limit, then their snapshots
   * while nothing is live. While jobs run it looks once every PRUNE_EVERY ends, not after each
   * (a busy server keeps up to that many more than the limit for a while); their folders are
   * removed on libuv's pool, off the engine's thread that runs the next job, and kept as spares
   * for the next jobs' folders and files while there is room (platform/files/spare-entries.ts).
   * Their snapshots go once PRUNE_EVERY jobs (or `retention.jobs`, when fewer) are owed, and when
   * the engine closes: each prune runs `git gc` in every shadow repository, and a coordinator that
   * sends one job at a time would otherwise pay one after each job, its next job waiting on it.
   */
  afterJob(): void {
    const idle = !this.#store.hasLiveJobs();
    if (!idle && ++this.#endsSincePrune < PRUNE_EVERY) return;
    this.#endsSincePrune = 0;
    const pruned = this.#store.pruneFinishedJobs(this.#opts.retentionJobs);
    this.#snapshotsOwed += pruned.length;
    if (pruned.length > 0)
      this.#background(() => Promise.all(pruned.map((id) => recycleFolder(join(this.#dataDir, 'jobs', id)))));
    if (idle && this.#snapshotsOwed >= Math.min(PRUNE_EVERY, this.#opts.retentionJobs)) this.#pruneSnapshots();
  }

  /**
   * The snapshots of every job the store no longer holds, after the prunes before it; skipped (and
   * still owed) when a job is live by then.
   */
  #pruneSnapshots(): void {
    if (this.#snapshotsQueued) return;
    this.#snapshotsQueued = true;
    this.#background(async () => {
      this.#snapshotsQueued = false;
      // spec 03: no gc during a job — the shadow repos only while nothing is live; the keep list is read
      // again inside each shadow repo's lock: a job submitted meanwhile keeps its snapshots
      if (this.#store.hasLiveJobs()) return;
      this.#snapshotsOwed = 0;
      await pruneSnapshots(this.#dataDir, () => this.#store.listJobIds());
    });
  }

  /** Runs a prune step after the ones before it; a failure is reported and ends only that step. */
  #background(step: () => Promise<unknown>): void {
    this.#pruning = this.#pruning.then(step).then(
      () => undefined,
      (err: unknown) =>
        void process.stderr.write(
          `gaffer: pruning old jobs failed: ${err instanceof Error ? err.message : String(err)}\n`,
        ),
    );
  }

  /** Stops both watches and waits for a recovery in flight: after it, nothing here touches the store. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#orphanTimer) clearInterval(this.#orphanTimer);
    await this.#recovering;
  }
}
