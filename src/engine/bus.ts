import type { JobEvent } from '../domain/events.js';

type Listener = (event: JobEvent) => void;

/** In-process fan-out of job events and workspace releases: what wakes waiters without a poll tick. */
export class JobBus {
  readonly #byJob = new Map<string, Set<Listener>>();
  /** Waiters for a workspace lock, by the job holding it. */
  readonly #releases = new Map<string, Set<() => void>>();
  readonly #all = new Set<(jobId: string, event: JobEvent) => void>();

  /** Listens to one job's events; returns the unsubscribe function. */
  subscribe(jobId: string, listener: Listener): () => void {
    return addListener(this.#byJob, jobId, listener);
  }

  /** Listens to every job's events (the board's lists). */
  subscribeAll(listener: (jobId: string, event: JobEvent) => void): () => void {
    this.#all.add(listener);
    return () => this.#all.delete(listener);
  }

  publish(event: JobEvent & { jobId: string }): void {
    const { jobId, ...rest } = event;
    for (const listener of [...(this.#byJob.get(jobId) ?? [])]) listener(rest as JobEvent);
    for (const listener of [...this.#all]) listener(jobId, rest as JobEvent);
  }

  /**
   * Called when job `holderId` of this process releases its workspace lock. Only the jobs it
   * kept waiting wake up (not every waiter of every workspace, which made a busy server retry
   * the lock table dozens of times per release).
   */
  onRelease(holderId: string, listener: () => void): () => void {
    return addListener(this.#releases, holderId, listener);
  }

  announceRelease(holderId: string): void {
    for (const listener of [...(this.#releases.get(holderId) ?? [])]) listener();
  }

  /** Listener count, so a leak can be seen. */
  get listenerCount(): number {
    let n = this.#all.size;
    for (const set of this.#byJob.values()) n += set.size;
    for (const set of this.#releases.values()) n += set.size;
    return n;
  }
}

/** Adds a listener under a key; the returned function removes it (and the key once it is empty). */
function addListener<T>(byKey: Map<string, Set<T>>, key: string, listener: T): () => void {
  let set = byKey.get(key);
  if (!set) byKey.set(key, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && byKey.get(key) === set) byKey.delete(key);
  };
}
