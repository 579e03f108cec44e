/** Who holds a file lock. */
export interface LockHolder {
  /** Unique per run of a worker (two jobs may both have a `worker-1`). */
  id: string;
  /** The worker's name, told to whoever is refused. */
  name: string;
}

/** What a lock attempt answers. */
export type LockResult = { ok: true } | { ok: false; holder: string };

/**
 * Per-file write locks between parallel builtin workers (spec 04 "File locks"). A worker takes
 * the lock of a file the first time it writes it and keeps it until its end; another worker's
 * write to that file is refused, naming the holder. Keys are real paths, so two spellings of a
 * file (or a symlink to it) are one lock. In process: every builtin worker is a loop in this
 * process.
 */
export class FileLocks {
  readonly #holders = new Map<string, LockHolder>();

  /** Takes (or re-takes) the lock of `realPath` for `holder`; refused when someone else holds it. */
  acquire(realPath: string, holder: LockHolder): LockResult {
    const current = this.#holders.get(realPath);
    if (current !== undefined && current.id !== holder.id) return { ok: false, holder: current.name };
    this.#holders.set(realPath, holder);
    return { ok: true };
  }

  /** Releases every lock `holderId` holds; returns how many. */
  releaseAll(holderId: string): number {
    let released = 0;
    for (const [path, holder] of this.#holders) {
      if (holder.id === holderId) {
        this.#holders.delete(path);
        released++;
      }
    }
    return released;
  }

  /** The name of the worker holding `realPath`, when any. */
  holderOf(realPath: string): string | null {
    return this.#holders.get(realPath)?.name ?? null;
  }
}

/** The process-wide lock table every builtin worker shares. */
export const FILE_LOCKS = new FileLocks();
