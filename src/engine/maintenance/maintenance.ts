import { readdirSync, rmdirSync, rmSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { pruneSnapshots } from '../../evidence/index.js';
import { removeFile } from '../../evidence/remove-file.js';
import type { Store } from '../../store/store.js';
import { hasOrphans, recoverOrphans } from './recovery.js';

/** How often an engine looks for live jobs whose process died (spec 07: noticed within seconds, no `wait` needed). */
export const ORPHAN_LOOK_MS = 1_000;

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
  /** The shadow-repo prune in flight, one at a time. */
  #pruning: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(store: Store, dataDir: string, opts: MaintenanceOptions) {
    this.#store = store;
    this.#dataDir = dataDir;
    this.#opts = opts;
  }

  /** Resolves once the background prune of old jobs' snapshots is done. */
  async pruned(): Promise<void> {
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

  /** Retention after a job ends: drops the oldest finished jobs past the limit, then their snapshots while nothing is live. */
  afterJob(): void {
    const pruned = this.#store.pruneFinishedJobs(this.#opts.retentionJobs);
    if (pruned.length === 0) return;
    for (const id of pruned) removeJobDir(join(this.#dataDir, 'jobs', id));
    // spec 03: no gc during a job — prune the shadow repos only while nothing is live
    if (!this.#store.hasLiveJobs()) {
      // the keep list is read again inside each shadow repo's lock: a job submitted meanwhile keeps its snapshots
      const previous = this.#pruning;
      this.#pruning = previous
        .then(() => pruneSnapshots(this.#dataDir, () => this.#store.listJobIds()))
        .then(
          () => undefined,
          (err: unknown) =>
            void process.stderr.write(
              `gaffer: pruning snapshots failed: ${err instanceof Error ? err.message : String(err)}\n`,
            ),
        );
    }
  }

  /** Stops both watches and waits for a recovery in flight: after it, nothing here touches the store. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#orphanTimer) clearInterval(this.#orphanTimer);
    await this.#recovering;
  }
}

/**
 * Removes a pruned job's folder (`rm -rf`): its files — logs, instruction files — unlinked, then the
 * folder. `rmSync`'s recursive walk first lstats each path and tries to remove every folder before
 * reading it, ~0.1 ms more a job once retention prunes one per job; anything unusual (a folder in
 * it, one that does not empty) is still left to it.
 */
function removeJobDir(dir: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const entry of entries) {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) rmSync(file, { recursive: true, force: true });
    else removeFile(file);
  }
  try {
    rmdirSync(dir);
  } catch {
    rmSync(dir, { recursive: true, force: true });
  }
}
