import { endsJob } from '../../domain/events.js';
import { isFinalStatus } from '../../domain/status.js';
import type { JobRow, Store } from '../../store/store.js';
import type { JobBus } from '../bus.js';
import { waitForChange } from './changed-watch.js';
import { monotonicMs } from '../clock.js';
import type { CompactJob } from './compact.js';
import type { JobQueries, Caller } from './queries.js';
import { recoverOrphans } from '../maintenance/recovery.js';
import { describeCondition, eventMeets, parseWaitCondition, type WaitCondition } from './wait.js';

/** The answer of a wait (spec 02 `wait_for`). */
export interface WaitAnswer {
  met: boolean;
  condition: string;
  waited_s: number;
  state: CompactJob;
}

/** A waiter in another process reads the store at most this often (spec 02). */
export const CROSS_PROCESS_POLL_MS = 200;

/** What a wait reads: the store, this process's bus, the shared reads, and which jobs run here. */
export interface WaitSources {
  store: Store;
  dataDir: string;
  bus: JobBus;
  queries: JobQueries;
  runsJob: (id: string) => boolean;
}

/**
 * Waits on a job (spec 02 `wait_for`) by the cheapest strategy that can see the condition: the bus
 * for a job this process runs, store polling for one run elsewhere, a workspace watch for `changed`.
 */
export class JobWaits {
  readonly #src: WaitSources;
  #waiters = 0;

  constructor(sources: WaitSources) {
    this.#src = sources;
  }

  /** How many waits are in flight (for /api/health, so a leak can be seen). */
  get waiters(): number {
    return this.#waiters;
  }

  /** Waits until the condition holds or the timeout passes; no poll tick for a job this process runs. */
  async waitFor(
    id: string,
    rawCondition: string | null | undefined,
    timeoutS: number,
    opts: Caller & { signal?: AbortSignal } = {},
  ): Promise<WaitAnswer> {
    const condition = parseWaitCondition(rawCondition);
    const { queries } = this.#src;
    queries.visibleJob(id, opts);
    const started = monotonicMs();
    this.#waiters++;
    try {
      const met =
        condition.kind === 'changed'
          ? await this.#waitChanged(id, timeoutS, opts.signal)
          : this.#src.runsJob(id)
            ? await this.#waitLocal(id, condition, timeoutS, opts.signal)
            : await this.#waitPolling(id, condition, timeoutS, opts.signal);
      return {
        met,
        condition: describeCondition(condition),
        waited_s: Math.round((monotonicMs() - started) / 100) / 10,
        state: queries.compact(queries.visibleJob(id, {})),
      };
    } finally {
      this.#waiters--;
    }
  }

  /** `changed`: anything in the workspace changed on disk since the wait began (throttled rescans). */
  async #waitChanged(id: string, timeoutS: number, signal?: AbortSignal): Promise<boolean> {
    const job = this.#src.queries.visibleJob(id, {});
    if (isFinalStatus(job.status)) return false;
    const deadline = monotonicMs() + timeoutS * 1000;
    const stop = new AbortController();
    // the asker went away: stop at once, leave nothing behind
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) stop.abort();
    const unsubscribe = this.#src.bus.subscribe(id, (e) => {
      if (endsJob(e)) stop.abort();
    });
    const stopped = () =>
      stop.signal.aborted || monotonicMs() >= deadline || isFinalStatus(this.#src.queries.visibleJob(id, {}).status);
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(ms, Math.max(0, deadline - monotonicMs())));
        function done() {
          clearTimeout(timer);
          stop.signal.removeEventListener('abort', done);
          resolve();
        }
        stop.signal.addEventListener('abort', done, { once: true });
      });
    try {
      return await waitForChange(job.workspace, stopped, sleep);
    } finally {
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** A job this process runs: its events arrive on the bus, so the wait costs no timer but its deadline. */
  #waitLocal(id: string, condition: WaitCondition, timeoutS: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolveWait) => {
      let settled = false;
      const finish = (met: boolean) => {
        if (settled) return;
        settled = true;
        unsubscribe();
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolveWait(met);
      };
      // the asker went away: stop at once, leave nothing behind
      const onAbort = () => finish(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      // subscribe before testing, so no update falls between the two
      const unsubscribe = this.#src.bus.subscribe(id, (e) => {
        if (eventMeets(condition, e)) finish(true);
        else if (endsJob(e)) finish(condition.kind === 'done');
      });
      const timer = setTimeout(() => finish(false), timeoutS * 1000);
      const verdict = this.#checkStored(id, condition, 0);
      if (verdict.met !== null) finish(verdict.met);
      else if (signal?.aborted) finish(false);
    });
  }

  /** A job run by another process: read its new events from the store every CROSS_PROCESS_POLL_MS. */
  async #waitPolling(id: string, condition: WaitCondition, timeoutS: number, signal?: AbortSignal): Promise<boolean> {
    const deadline = monotonicMs() + timeoutS * 1000;
    let after = 0;
    for (;;) {
      const verdict = this.#checkStored(id, condition, after);
      if (verdict.met !== null) return verdict.met;
      after = verdict.seq;
      const left = deadline - monotonicMs();
      if (left <= 0 || signal?.aborted) return false;
      await new Promise<void>((resolveSleep) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolveSleep();
        };
        const timer = setTimeout(done, Math.min(CROSS_PROCESS_POLL_MS, left));
        signal?.addEventListener('abort', done, { once: true });
      });
      if (signal?.aborted) return false;
      // the job's process may have died while we waited
      if (!this.#src.runsJob(id)) await recoverOrphans(this.#src.store, this.#src.dataDir);
    }
  }

  /** Tests a condition against the store: met, cannot hold any more (false), or not yet (null). */
  #checkStored(id: string, condition: WaitCondition, after: number): { met: boolean | null; seq: number } {
    const job = this.#src.queries.visibleJob(id, {});
    const final = isFinalStatus(job.status);
    if (condition.kind === 'done') return { met: final ? true : null, seq: job.seq };
    if (condition.kind === 'changed') return { met: final ? false : null, seq: job.seq };
    const events = this.#src.store.listEvents(id, after);
    if (events.some((e) => eventMeets(condition, e))) return { met: true, seq: job.seq };
    return { met: final ? false : null, seq: events.at(-1)?.seq ?? after };
  }
}
