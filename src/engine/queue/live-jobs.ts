import type { TaskSpec } from '../../domain/request.js';
import type { SteerMessage, SteerOffer } from '../../domain/steer.js';
import type { JobRow } from '../../store/store.js';
import { JobContext, type EngineServices } from '../job-context.js';
import { noticeJob, notifyJob } from '../settle/notify.js';
import type { JobQueue } from './job-queue.js';
import { offerSteer } from '../admission/steer.js';
import { forgetOutsideRecords } from '../../evidence/index.js';

/**
 * The in-process job queue: the jobs this process runs, by id — starting one, cancelling one, and
 * stopping them all. Cancel polling, waits and shutdown all need the same answer to "does this
 * process run that job". A job starts at once; its attempts wait for the executor's slots.
 */
export class LiveJobs implements JobQueue {
  readonly #services: EngineServices;
  readonly #jobs = new Map<string, JobContext>();
  readonly #onEnd: () => void;
  readonly #onSettled: (ctx: JobContext) => Promise<void>;
  readonly #run: (ctx: JobContext) => Promise<void>;
  readonly #cancelPollMs: number;
  #cancelTimer: NodeJS.Timeout | null = null;

  /**
   * `onEnd` runs after each job settles and has left the live set (retention runs there);
   * `onSettled` before that, once the job is final (its queued steers become follow-ups), and the
   * job's `done` waits for it; `run` carries a job out (job-life.ts, in the placement the composition root picked for it);
   * `cancelPollMs`: how often cancels other processes wrote to the store are looked for.
   */
  constructor(
    services: EngineServices,
    opts: {
      onEnd: () => void;
      onSettled?: (ctx: JobContext) => Promise<void>;
      run: (ctx: JobContext) => Promise<void>;
      cancelPollMs: number;
    },
  ) {
    this.#services = services;
    this.#run = opts.run;
    this.#onEnd = opts.onEnd;
    this.#onSettled = opts.onSettled ?? (() => Promise.resolve());
    this.#cancelPollMs = opts.cancelPollMs;
  }

  /** How many jobs this process runs now. */
  get size(): number {
    return this.#jobs.size;
  }

  /** True when this process runs the job. */
  has(id: string): boolean {
    return this.#jobs.has(id);
  }

  /** Starts running a job just admitted: `created` and `queued` are announced before its run begins. */
  start(job: JobRow): void {
    const ctx = new JobContext(this.#services, job);
    this.#jobs.set(job.id, ctx);
    ctx.emitAll([
      { name: 'job', event: 'created', message: job.title },
      { name: 'job', event: 'phase', message: 'queued' },
    ]);
    ctx.done = this.#run(ctx).finally(async () => {
      this.#jobs.delete(job.id);
      // its changes are computed: nothing compares its records of the places outside the evidence again
      forgetOutsideRecords(job.id);
      // what becomes of each queued steer is an event on the job; nothing there may stop the job's end
      await this.#onSettled(ctx).catch(() => undefined);
      notifyJob(this.#services.notify, { event: 'job_ended', job: noticeJob(ctx.job) }, ctx.jobDir);
      this.#onEnd();
    });
    this.#watchCancels();
  }

  /** Cancels asked for by other processes reach this one through the store, polled while a job is live here. */
  #watchCancels(): void {
    if (this.#cancelTimer) return;
    const timer = setInterval(() => {
      if (this.#jobs.size === 0) {
        clearInterval(timer);
        this.#cancelTimer = null;
        return;
      }
      for (const id of this.#services.store.listCancelRequested(process.pid)) this.cancel(id);
    }, this.#cancelPollMs);
    timer.unref();
    this.#cancelTimer = timer;
  }

  /** Settles when a job this process runs is final (at once for any other job). */
  async settled(id: string): Promise<void> {
    await this.#jobs.get(id)?.done;
  }

  /** Hands a message to a task of a job this process runs (issue 16); null for any other job. */
  steer(id: string, task: TaskSpec, message: SteerMessage): SteerOffer | null {
    const ctx = this.#jobs.get(id);
    return ctx ? offerSteer(ctx, task, message) : null;
  }

  /** Cancels the job when this process runs it; false when it runs elsewhere (or nowhere). */
  cancel(id: string): boolean {
    const ctx = this.#jobs.get(id);
    if (ctx) cancelContext(ctx);
    return ctx !== undefined;
  }

  /** Cancels every live job (`interrupted` with `reason` when given, else `cancelled`) and waits for them to settle. */
  async stopAll(reason: string | null = null): Promise<void> {
    for (const ctx of this.#jobs.values()) {
      if (reason !== null) ctx.interruptReason = reason;
      cancelContext(ctx);
    }
    await Promise.all([...this.#jobs.values()].map((ctx) => ctx.done));
    if (this.#cancelTimer) clearInterval(this.#cancelTimer);
    this.#cancelTimer = null;
  }
}

/** `cancelling` until the job's workers are dead and its evidence collected; a second cancel changes nothing. */
function cancelContext(ctx: JobContext): void {
  if (ctx.isCancelled) return;
  ctx.enter('cancelling', ctx.interruptReason ? 'stopping: gaffer is shutting down' : 'cancelling');
  ctx.abort.abort(new Error('cancelled'));
}
