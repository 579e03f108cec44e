import type { ApprovalAnswer, AskJson } from '../domain/approval.js';
import type { ProviderState } from './admission/operations.js';
import { answerAsks } from './admission/approval.js';
import { resolve } from 'node:path';
import { GafferError } from '../domain/errors.js';
import type { LintReport } from '../domain/spec-lint.js';
import { isFinalStatus } from '../domain/status.js';
import { useSpawner } from '../platform/spawner/spawner.js';
import { keepSpares } from '../platform/files/spare-entries.js';
import type { RunnerRow } from '../runners/table.js';
import { Store, type JobEvent } from '../store/store.js';
import { Admission } from './admission/admission.js';
import type { SteerAnswer } from '../domain/answer.js';
import { deliverQueuedSteers, steerTask } from './admission/steer.js';
import { monotonicMs } from './clock.js';
import type { CompactJob } from './queries/compact.js';
import { composeQueue, composeServices, configOf, type EngineOptions } from './compose.js';
import { describeSpine, type SpineReport } from './maintenance/doctor-spine.js';
import type { GafferConfig } from '../config/config.js';
import type { EngineServices } from './job-context.js';
import { JobWaits, type WaitAnswer } from './queries/job-waits.js';
import { Maintenance } from './maintenance/maintenance.js';
import { JobQueries, type Caller, type StatsAnswer } from './queries/queries.js';
import type { JobQueue } from './queue/job-queue.js';
import { recoverOrphans } from './maintenance/recovery.js';
import { listWorktrees, pruneWorktrees, type PruneAnswer, type WorktreeEntry } from './maintenance/worktree-admin.js';
import { sweepRemoteCheckouts } from './placement/remote-checkout.js';
import { BullmqExecutor } from './execution/bullmq.js';
import type { NodeExchange } from './execution/exchange.js';
import type { ClusterView } from './execution/cluster-view.js';

/** A coordinator's side of its cluster: what the HTTP API offers the nodes, and where it tells them to reach it. */
export interface CoordinatorSide {
  readonly exchange: NodeExchange;
  /** Tells the attempts put on the queue from now on where the coordinator's HTTP API is. */
  advertise(url: string): void;
  /** The live nodes, the runner queues and what is wrong with the cluster (`gaffer nodes`). */
  view(): Promise<ClusterView>;
}

// the pieces' names, for the callers that know only the engine
export type { Caller, StatsAnswer } from './queries/queries.js';

/**
 * `GET /api/roster`: what `gaffer doctor` says of routing — the roster in effect and where it was
 * read, each task type's ladder and where a task starts on it, what learned routing reads and
 * skips, and who asks before a task starts. Budgets and the breaker are the stats' (`OperationsStats`).
 */
export type RosterAnswer = Pick<SpineReport, 'roster' | 'ladders' | 'learning' | 'approval' | 'store_note'>;

/** What `gaffer stats` adds from operations (issue 15): each provider's budgets, suspension and waiting jobs, and the breaker. */
export interface OperationsStats {
  providers: ProviderState[];
  breaker: { open: boolean; failures: number; retry_after_s: number; why: string };
}
export { CROSS_PROCESS_POLL_MS, type WaitAnswer } from './queries/job-waits.js';
export { IDEMPOTENCY_WINDOW_S } from './admission/admission.js';
export { ORPHAN_LOOK_MS } from './maintenance/maintenance.js';
export type { EngineOptions } from './compose.js';
export type { NodeExchange } from './execution/exchange.js';
export type { ClusterView, NodeView, QueueView } from './execution/cluster-view.js';

/**
 * One engine per process: runs jobs, answers for them, and shares the data dir with other processes.
 * A facade: admission, queries, waits, the live jobs and maintenance each live in their own file;
 * this class builds them, hands each what it needs, and owns the engine's open/closed lifecycle.
 */
export class Engine {
  readonly store: Store;
  readonly dataDir: string;
  readonly #services: EngineServices;
  readonly #queries: JobQueries;
  readonly #live: JobQueue;
  readonly #maintenance: Maintenance;
  readonly #waits: JobWaits;
  readonly #admission: Admission;
  readonly #config: GafferConfig;
  readonly #startedAt = monotonicMs();
  #closed = false;
  #storeClosed = false;
  /** Releases the spawner process when this engine used it. */
  readonly #releaseSpawner: () => void;
  /** Lets go of the data dir's spare folders and files (platform/files/spare-entries.ts). */
  readonly #releaseSpares: () => Promise<void>;

  private constructor(opts: EngineOptions, store: Store) {
    this.dataDir = resolve(opts.dataDir);
    this.store = store;
    this.#config = configOf(opts);
    this.#services = composeServices(opts, store);
    const { runners, executor } = this.#services;
    this.#queries = new JobQueries(store, runners, executor.cap, { remote: executor instanceof BullmqExecutor });
    this.#live = composeQueue(opts, this.#services, {
      onEnd: () => {
        if (!this.#closed) this.#maintenance.afterJob();
      },
      // issue 16: what was queued for a task while the job ran goes to it as a follow-up
      onSettled: (ctx) =>
        deliverQueuedSteers(ctx, (id, task, body, caller) => this.#admission.followUp(id, task, body, caller)),
    });
    this.#maintenance = new Maintenance(store, this.dataDir, { retentionJobs: opts.retentionJobs ?? 200 });
    this.#waits = new JobWaits({
      store,
      dataDir: this.dataDir,
      bus: this.#services.bus,
      queries: this.#queries,
      runsJob: (id) => this.#live.has(id),
    });
    const admission = {
      dataDir: this.dataDir,
      runners,
      defaultRunner: opts.defaultRunner ?? null,
      roster: opts.roster ?? null,
      billing: this.#services.billing,
      specLint: opts.specLint ?? 'warn',
      learn: opts.routing?.learn === true ? { minAcceptance: opts.routing.minAcceptance ?? 0.8 } : null,
      timeouts: opts.timeouts ?? null,
      protect: opts.protect ?? {},
      operations: this.#services.operations,
      remoteRepos: executor instanceof BullmqExecutor,
      ...(executor instanceof BullmqExecutor ? { offeredByNodes: (r: string) => executor.offeredByNodes(r) } : {}),
    };
    this.#admission = new Admission(store, this.#queries, admission, {
      isClosed: () => this.#closed,
      start: (job) => this.#live.start(job),
    });
    this.#releaseSpawner = opts.spawner === true ? useSpawner() : () => undefined;
    this.#releaseSpares = keepSpares(this.dataDir);
  }

  /** Opens the store and turns jobs whose process died into `interrupted` (spec 07 "Store and restart"); a cluster's queue is connected. */
  static async open(opts: EngineOptions): Promise<Engine> {
    const store = new Store(resolve(opts.dataDir));
    // an engine writes a job's step in one turn: one commit for its events, attempt and job row
    store.groupCommits();
    const engine = new Engine(opts, store);
    await recoverOrphans(engine.store, engine.dataDir);
    try {
      await engine.#services.executor.open?.();
      if (engine.cluster) await sweepRemoteCheckouts(engine.dataDir, (id) => engine.#live.has(id));
    } catch (err) {
      await engine.close();
      throw err;
    }
    engine.#maintenance.watchOrphans();
    return engine;
  }

  /** What a coordinator offers its worker nodes (spec 09, `gaffer serve --queue`); null when the attempts run in this process. */
  get cluster(): CoordinatorSide | null {
    const executor = this.#services.executor;
    return executor instanceof BullmqExecutor ? executor : null;
  }

  /** Validates and starts a job; an idempotency key already used returns the first job (`created: false`). */
  submit(
    body: unknown,
    opts: Caller & { idempotencyKey?: string | null; cwd?: string | null } = {},
  ): { job: CompactJob; created: boolean } {
    return this.#admission.submit(body, opts);
  }

  /** The spec-lint report of a request, without dispatching (`gaffer lint`, `POST /api/lint`). */
  lint(body: unknown): LintReport {
    return this.#admission.lint(body);
  }

  /** A new job for the tasks of this one that did not end `done`, same settings. */
  redispatch(id: string, opts: Caller = {}): { job: CompactJob; created: boolean } {
    return this.#admission.redispatch(id, opts);
  }

  /** A follow-up of a finished job's task: a new job told the review's comments and note (issue 16). */
  followUp(id: string, task: string, body: unknown, opts: Caller = {}): Promise<{ job: CompactJob; created: boolean }> {
    return this.#admission.followUp(id, task, body, opts);
  }

  /**
   * A message to a task of a job (issue 16 "steering"): a live builtin worker reads it before its next
   * model call; for a worker that takes no input mid-run it is queued as the task's follow-up, started
   * when the job ends; a job that has ended gets that follow-up now.
   */
  steer(id: string, task: string, body: unknown, opts: Caller = {}): Promise<SteerAnswer> {
    return steerTask(
      {
        visibleJob: (jobId, caller) => this.#queries.visibleJob(jobId, caller),
        offer: (jobId, t, message) => this.#live.steer(jobId, t, message),
        followUp: (jobId, t, b, caller) => this.#admission.followUp(jobId, t, b, caller),
        record: (jobId, events) => {
          for (const e of this.store.appendEvents(jobId, events)) this.#services.bus.publish({ ...e, jobId });
        },
      },
      id,
      task,
      body,
      opts,
    );
  }

  /** gaffer's worktrees and branches with their job, state, age and size (`gaffer worktrees ls`, spec 06). */
  worktrees(): Promise<WorktreeEntry[]> {
    return listWorktrees(this.#services);
  }

  /** Prunes merged and expired worktrees and branches (`gaffer worktrees prune`); unmerged branches only when asked. */
  pruneWorktrees(opts: { unmerged?: boolean } = {}): Promise<PruneAnswer> {
    return pruneWorktrees(this.#services, opts);
  }

  /**
   * Starts a job that merges a finished worktree job's passing branches (or one task's), verified
   * before it is applied (`gaffer merge`); at its end the original job's `worktrees` says what was merged.
   */
  merge(id: string, task: string | null, opts: Caller = {}): Promise<{ job: CompactJob; created: boolean }> {
    return this.#admission.merge(id, task, opts);
  }

  /** The unified diff of one changed path: against the checkpoint, or a worktree job's `task` branch against its base (binary: a size line). */
  async diff(id: string, path: string, opts: Caller & { task?: string | undefined } = {}): Promise<string> {
    return this.#queries.diff(id, path, opts);
  }

  /** The last `tailBytes` of a worker's output log. */
  workerLog(id: string, worker: string, tailBytes: number, opts: Caller = {}): string {
    return this.#queries.workerLog(id, worker, tailBytes, opts);
  }

  /** The runner table. */
  runners(): RunnerRow[] {
    return this.#queries.runners();
  }

  /** The roster, ladders, learning and approval as `gaffer doctor` shows them (its own reading: describeSpine). */
  roster(): RosterAnswer {
    const { roster, ladders, learning, approval, store_note } = describeSpine(this.#config, this.dataDir);
    return { roster, ladders, learning, approval, store_note };
  }

  /** The acceptance rate per (type, model) from the outcome log (spec 05) and `recent` job counts (spec 07), of the caller's jobs. */
  stats(opts: Caller = {}): StatsAnswer & OperationsStats {
    const breaker = this.#services.operations.breaker();
    // budgets and suspensions are the data dir's, shared by all; the jobs waiting are shown to their owner only
    const owner = opts.owner ?? null;
    const providers = this.#services.operations
      .providers()
      .map((p) =>
        owner === null ? p : { ...p, waiting: p.waiting.filter((id) => this.store.getJob(id)?.owner === owner) },
      );
    return {
      ...this.#queries.stats(opts),
      providers,
      breaker: {
        open: breaker.open,
        failures: breaker.failures.length,
        retry_after_s: breaker.retry_after_s,
        why: breaker.why,
      },
    };
  }

  /** The compact answer of a job. */
  get(id: string, opts: Caller & { full?: boolean } = {}): CompactJob {
    return this.#queries.get(id, opts);
  }

  /** Recent jobs, newest first, as briefs (compact without `result`). */
  list(opts: Caller & { limit?: number; status?: string } = {}): CompactJob[] {
    return this.#queries.list(opts);
  }

  /** The job's events after `after` and how many it produced. */
  events(id: string, opts: Caller & { after?: number } = {}): { events: JobEvent[]; produced: number } {
    return this.#queries.events(id, opts);
  }

  /** Listens to a job's events as this process produces them. */
  subscribe(id: string, listener: (e: JobEvent) => void): () => void {
    return this.#services.bus.subscribe(id, listener);
  }

  /** Listens to every job this process runs. */
  subscribeAll(listener: (jobId: string, e: JobEvent) => void): () => void {
    return this.#services.bus.subscribeAll(listener);
  }

  /** True when this process runs the job. */
  runsJob(id: string): boolean {
    return this.#live.has(id);
  }

  /** Settles when a job this process runs is final. */
  async settled(id: string): Promise<void> {
    await this.#live.settled(id);
  }

  /** Cancels a job: `cancelling` until its workers are dead and its evidence collected, then `cancelled`. */
  cancel(id: string, opts: Caller = {}): CompactJob {
    const job = this.#queries.visibleJob(id, opts);
    if (isFinalStatus(job.status))
      throw new GafferError('conflict', `job ${id} is already ${job.status}; nothing to cancel`);
    if (!this.#live.cancel(id)) {
      this.store.requestCancel(id);
      // the process that runs it may have died: then it is interrupted, not cancelled
      void recoverOrphans(this.store, this.dataDir);
    }
    return this.#queries.compact(this.#queries.visibleJob(id, {}));
  }

  /**
   * Answers a job's approval asks (spec 05): `true`/`false` for every open one, or a yes/no per
   * task. `conflict` when the job is not awaiting approval; the job moves on once every ask is
   * answered (here at once; in another process within half a second).
   */
  approve(id: string, answer: ApprovalAnswer, opts: Caller & { note?: string | null } = {}): CompactJob {
    const job = this.#queries.visibleJob(id, opts);
    answerAsks(this.store, job, answer, opts.note ?? null);
    return this.#queries.compact(this.#queries.visibleJob(id, {}));
  }

  /** The open approval asks of the jobs visible to the caller that await approval, oldest first, each with its job. */
  openAsks(opts: Caller = {}): { job_id: string; title: string; ask: AskJson }[] {
    return this.store.listOpenAsks().flatMap((row) => {
      const job = this.store.getJob(row.jobId);
      // a job that stopped while it waited (interrupted, cancelled) has nothing left to answer
      if (
        !job ||
        job.status !== 'awaiting_approval' ||
        (opts.owner !== undefined && opts.owner !== null && job.owner !== opts.owner)
      )
        return [];
      return [{ job_id: row.jobId, title: job.title, ask: row.ask }];
    });
  }

  /** Waits until the condition holds or the timeout passes (spec 02 `wait_for`); no poll tick in this process. */
  async waitFor(
    id: string,
    rawCondition: string | null | undefined,
    timeoutS: number,
    opts: Caller & { signal?: AbortSignal } = {},
  ): Promise<WaitAnswer> {
    return this.#waits.waitFor(id, rawCondition, timeoutS, opts);
  }

  /** Counts for /api/health, so a leak can be seen. */
  /** `GET /api/nodes`: the cluster's live nodes and runner queues; refused, named, on one machine. */
  async nodes(): Promise<ClusterView> {
    const cluster = this.cluster;
    if (cluster === null)
      throw new GafferError(
        'not_supported',
        'this server runs every attempt itself and has no nodes: start it with gaffer serve --queue redis://HOST:6379 for a cluster',
      );
    return cluster.view();
  }

  health(): { live_jobs: number; waiters: number; listeners: number } {
    return { live_jobs: this.#live.size, waiters: this.#waits.waiters, listeners: this.#services.bus.listenerCount };
  }

  /**
   * Stops accepting jobs, stops the live jobs' workers, collects their evidence and records them
   * `interrupted` with `reason`, then closes the store unless asked not to (a server's SIGTERM, spec 02).
   */
  async shutdown(
    reason = 'interrupted by a shutdown of gaffer',
    opts: { keepStoreOpen?: boolean } = {},
  ): Promise<void> {
    this.#closed = true;
    await this.#live.stopAll(reason);
    // a server keeps the store open until its streams have written their `end` events
    if (!opts.keepStoreOpen) await this.close();
  }

  /** Seconds since this engine opened. */
  get uptimeS(): number {
    return Math.round((monotonicMs() - this.#startedAt) / 1000);
  }

  /** Resolves once the background prune of old jobs in flight (their snapshots: when nothing is live) is done. */
  async maintenanceDone(): Promise<void> {
    await this.#maintenance.pruned();
  }

  /** Cancels this process's live jobs, waits for them to settle, and closes the store. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#live.stopAll();
    await this.#maintenance.pruneOwed(); // it reads the store
    if (this.#storeClosed) return;
    this.#storeClosed = true;
    this.#releaseSpawner();
    await this.#releaseSpares();
    await this.#maintenance.stop();
    await this.#services.executor.close?.();
    this.store.close();
  }
}
