import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { GafferError } from '../domain/errors.js';
import { describeVerify, LIMITS, parseJobRequest, type JobSpec } from '../domain/request.js';
import { lintJob, type LintReport, type SpecLintMode } from '../domain/spec-lint.js';
import { isFinalStatus, JOB_STATUSES } from '../domain/status.js';
import { fileDiff, pruneSnapshots } from '../evidence/index.js';
import { useSpawner } from '../platform/spawner/spawner.js';
import { waitForChange } from './changed-watch.js';
import { readTail } from './job-files.js';
import type { Runner } from '../runners/contract.js';
import { getRunner, listRunnerKeys } from '../runners/index.js';
import { NO_NETWORK, type SandboxNetwork } from '../platform/sandbox/network.js';
import { describeRunners, type RunnerRow } from '../runners/table.js';
import { ownProcessIdentity } from '../platform/process/process-identity.js';
import { Store, type JobEvent, type JobRow } from '../store/store.js';
import { JobBus } from './bus.js';
import { epochS, monotonicMs } from './clock.js';
import { buildCompact, type CompactJob } from './compact.js';
import { JobContext, type EngineServices } from './job-context.js';
import { runJob } from './job-run.js';
import { hasOrphans, recoverOrphans } from './recovery.js';
import { Semaphore } from './semaphore.js';
import { describeCondition, eventMeets, parseWaitCondition, type WaitCondition } from './wait.js';
import { vetTaskPaths, vetWorkspace, workspacesHolding, type WorkspaceRules } from './workspace-vetting.js';

/** How an engine is set up. */
export interface EngineOptions {
  dataDir: string;
  /** The worker cap (`workers.max_parallel`), default 2. */
  maxParallel?: number;
  /** Runners by key; default: the built-in registry. */
  runners?: ReadonlyMap<string, Runner>;
  /** The configured default runner for tasks that name none. */
  defaultRunner?: string | null;
  /** Finished jobs kept (`retention.jobs`), default 200. */
  retentionJobs?: number;
  /** How often this process looks for cancels asked by other processes, ms. */
  cancelPollMs?: number;
  /** Spec lint at dispatch (spec 07), default `warn`. */
  specLint?: SpecLintMode;
  /** Config `timeouts`: per-worker and verification timeouts (s) for requests that give none. */
  timeouts?: { worker_s: number; verify_s: number };
  /** Config `verification.confirm_full_suite` (default true): a related-scope verification is confirmed by one full-suite run. */
  confirmFullSuite?: boolean;
  /** The verification's network under the sandbox (`verificationNetwork(config)`); default `none`, nothing forwarded. */
  verificationNetwork?: SandboxNetwork;
  /**
   * Start git through the small spawner process (see platform/spawner/spawner.ts): for a long-lived
   * engine (a server, MCP) that runs many jobs; a one-shot command spawns directly. Default false.
   */
  spawner?: boolean;
  /** The config file read and config `protected_paths`: folders no job may be created for (issue 11, workspace-vetting.ts). */
  protect?: Pick<WorkspaceRules, 'configFile' | 'protectedPaths'>;
}

/** Who is asking: an owner sees only their jobs (null: everything, single-user). */
export interface Caller {
  owner?: string | null;
}

/** The answer of a wait (spec 02 `wait_for`). */
export interface WaitAnswer {
  met: boolean;
  condition: string;
  waited_s: number;
  state: CompactJob;
}

/** A waiter in another process reads the store at most this often (spec 02). */
export const CROSS_PROCESS_POLL_MS = 200;
export const IDEMPOTENCY_WINDOW_S = 3_600;
/** How often an engine looks for live jobs whose process died (spec 07: noticed within seconds, no `wait` needed). */
export const ORPHAN_LOOK_MS = 1_000;

/** One engine per process: runs jobs, answers for them, and shares the data dir with other processes. */
export class Engine {
  readonly store: Store;
  readonly dataDir: string;
  readonly #services: EngineServices;
  readonly #live = new Map<string, JobContext>();
  readonly #retention: number;
  readonly #defaultRunner: string | null;
  #cancelTimer: NodeJS.Timeout | null = null;
  #orphanTimer: NodeJS.Timeout | null = null;
  /** The recovery in flight, one at a time. */
  #recovering: Promise<unknown> | null = null;
  readonly #cancelPollMs: number;
  readonly #specLint: SpecLintMode;
  readonly #timeouts: { worker_s: number; verify_s: number } | null;
  readonly #startedAt = monotonicMs();
  /** The shadow-repo prune in flight, one at a time. */
  #pruning: Promise<void> = Promise.resolve();
  #waiters = 0;
  #closed = false;
  #storeClosed = false;
  /** Releases the spawner process when this engine used it. */
  readonly #releaseSpawner: () => void;
  readonly #protect: Pick<WorkspaceRules, 'configFile' | 'protectedPaths'>;

  private constructor(opts: EngineOptions, store: Store) {
    this.dataDir = resolve(opts.dataDir);
    this.store = store;
    const runners = opts.runners ?? new Map(listRunnerKeys().map((k) => [k, getRunner(k) as Runner]));
    const workerCap = opts.maxParallel ?? 2;
    this.#services = {
      store,
      bus: new JobBus(),
      slots: new Semaphore(workerCap),
      runners,
      dataDir: this.dataDir,
      workerCap,
      confirmFullSuite: opts.confirmFullSuite ?? true,
      verificationNetwork: opts.verificationNetwork ?? NO_NETWORK,
    };
    this.#retention = opts.retentionJobs ?? 200;
    this.#defaultRunner = opts.defaultRunner ?? null;
    this.#cancelPollMs = opts.cancelPollMs ?? 250;
    this.#specLint = opts.specLint ?? 'warn';
    this.#timeouts = opts.timeouts ?? null;
    this.#releaseSpawner = opts.spawner === true ? useSpawner() : () => undefined;
    this.#protect = opts.protect ?? {};
  }

  /** Opens the store and turns jobs whose process died into `interrupted` (spec 07 "Store and restart"). */
  static async open(opts: EngineOptions): Promise<Engine> {
    const engine = new Engine(opts, new Store(resolve(opts.dataDir)));
    await recoverOrphans(engine.store, engine.dataDir);
    engine.#watchOrphans();
    return engine;
  }

  /** Validates and starts a job; an idempotency key already used returns the first job (`created: false`). */
  submit(body: unknown, opts: Caller & { idempotencyKey?: string | null; cwd?: string | null } = {}): { job: CompactJob; created: boolean } {
    if (this.#closed) throw new GafferError('internal', 'the engine is shutting down');
    const spec = this.#parse(body);
    // opts.cwd: the client's working directory; inside a live job's workspace, the request comes from that job
    const spawnedFrom = opts.cwd ? workspacesHolding(opts.cwd, this.store.listLiveJobs().map((j) => j.spec.workspace)) : [];
    spec.workspace = vetWorkspace(spec.workspace, { dataDir: this.dataDir, ...this.#protect, spawnedFrom });
    vetTaskPaths(spec.workspace, spec);
    this.#vetRunners(spec);
    if (this.#specLint !== 'off') {
      const report = lintJob(spec, this.#specLint);
      if (!report.ok && this.#specLint === 'enforce') {
        throw new GafferError('needs_detail', `the request needs detail before it runs: ${report.needs_detail.map((f) => `${f.task}: ${f.message}`).join('; ')}`, 'tasks', { lint: report });
      }
      if (!report.ok) spec.spec_lint = { mode: report.mode, needs_detail: report.needs_detail, codes: report.codes };
    }
    const headerKey = opts.idempotencyKey ?? null;
    // the same limits as client_request_id: an empty key would tie every keyless-looking request together
    if (headerKey !== null && (headerKey.trim() === '' || headerKey.length > LIMITS.clientRequestId)) {
      throw new GafferError('invalid_request', `Idempotency-Key: must be 1..${LIMITS.clientRequestId} characters, got ${headerKey.trim() === '' ? 'an empty key' : `${headerKey.length} characters`}`, 'Idempotency-Key');
    }
    if (headerKey !== null && spec.client_request_id !== null && headerKey !== spec.client_request_id) {
      throw new GafferError(
        'invalid_request',
        `the Idempotency-Key header (${JSON.stringify(headerKey)}) and client_request_id (${JSON.stringify(spec.client_request_id)}) disagree — send one, or the same in both`,
        'client_request_id',
      );
    }
    const idemKey = headerKey ?? spec.client_request_id;
    const requestHash = hashSpec(spec);
    const me = ownProcessIdentity();
    const { job, created } = this.store.insertJob({
      id: randomBytes(6).toString('hex'),
      owner: opts.owner ?? null,
      spec,
      created: epochS(),
      idemKey,
      requestHash,
      idemWindowS: IDEMPOTENCY_WINDOW_S,
      pid: me.pid,
      pidStart: me.start,
    });
    if (!created) {
      if (job.requestHash !== requestHash) {
        throw new GafferError('conflict', `idempotency key ${JSON.stringify(idemKey)} was used for job ${job.id} with a different request — use a new key`, 'client_request_id');
      }
      return { job: this.#compact(job), created: false };
    }
    this.#start(job);
    return { job: this.#compact(job), created: true };
  }

  #parse(body: unknown): JobSpec {
    const timeouts = this.#timeouts === null ? {} : { timeoutS: this.#timeouts.worker_s, verifyTimeoutS: this.#timeouts.verify_s };
    return parseJobRequest(body, { defaultRunner: this.#defaultRunner, available: [...this.#services.runners.keys()], ...timeouts });
  }

  /** The spec-lint report of a request, without dispatching (`gaffer lint`, `POST /api/lint`). */
  lint(body: unknown): LintReport {
    // a request that would be refused at dispatch is refused here too, with the same error
    const spec = this.#parse(body);
    this.#vetRunners(spec);
    return lintJob(spec, this.#specLint === 'off' ? 'warn' : this.#specLint);
  }

  #vetRunners(spec: JobSpec): void {
    spec.tasks.forEach((task, i) => {
      this.#services.runners.get(task.runner)?.vet?.({ model: task.model }, `tasks[${i}].runner`);
    });
  }

  /** A new job for the tasks of this one that did not end `done`, same settings. */
  redispatch(id: string, opts: Caller = {}): { job: CompactJob; created: boolean } {
    const job = this.#visibleJob(id, opts);
    if (!isFinalStatus(job.status)) throw new GafferError('conflict', `job ${id} is still ${job.status}; wait for it or cancel it first`);
    const attempts = this.store.listAttempts(id);
    const done = new Set(attempts.filter((a) => a.role === 'worker' && a.status === 'done').map((a) => a.task));
    const tasks = job.spec.tasks.filter((t) => !done.has(t.name));
    if (tasks.length === 0) throw new GafferError('conflict', `every task of job ${id} ended done; nothing to re-dispatch`);
    const { spec_lint: _lint, client_request_id: _key, verify, ...rest } = job.spec;
    const body = {
      ...rest,
      verify: describeVerify(verify),
      title: `${job.title} (re-dispatch of ${id})`,
      isolation: 'shared',
      tasks: tasks.map(({ runner, model, command, ...t }) => ({ ...t, runner, ...(model ? { model } : {}), ...(command ? { command } : {}) })),
    };
    return this.submit(body, opts);
  }

  /** The unified diff of one changed path against the checkpoint (binary: a size line). */
  async diff(id: string, path: string, opts: Caller = {}): Promise<string> {
    const job = this.#visibleJob(id, opts);
    const snaps = job.checkpoint;
    if (!snaps?.pre) throw new GafferError('conflict', `job ${id} has no checkpoint yet (${job.status})`);
    return fileDiff(snaps.pre, isFinalStatus(job.status) ? (snaps.post ?? null) : null, path);
  }

  /** The last `tailBytes` of a worker's output log. */
  workerLog(id: string, worker: string, tailBytes: number, opts: Caller = {}): string {
    this.#visibleJob(id, opts);
    const attempt = this.store.listAttempts(id).find((a) => a.worker === worker);
    if (!attempt?.logFile) throw new GafferError('not_found', `job ${id} has no worker ${JSON.stringify(worker)}`, 'name');
    return readTail(attempt.logFile, tailBytes);
  }

  /** The runner table. */
  runners(): RunnerRow[] {
    return describeRunners(this.#services.runners);
  }

  /** `recent` outcome counts (spec 07); acceptance rates come with the outcome log. */
  stats(opts: Caller = {}): { acceptance: Record<string, never>; recent: Record<string, number> } {
    return { acceptance: {}, recent: this.store.countRecent(opts.owner ?? null) };
  }

  #start(job: JobRow): void {
    const ctx = new JobContext(this.#services, job);
    this.#live.set(job.id, ctx);
    ctx.emit({ name: 'job', event: 'created', message: job.title });
    ctx.emit({ name: 'job', event: 'phase', message: 'queued' });
    ctx.done = runJob(ctx).finally(() => {
      this.#live.delete(job.id);
      this.#afterJob();
    });
    this.#watchCancels();
  }

  /** The compact answer of a job. */
  get(id: string, opts: Caller & { full?: boolean } = {}): CompactJob {
    return this.#compact(this.#visibleJob(id, opts), opts.full);
  }

  /** Recent jobs, newest first, as briefs (compact without `result`). */
  list(opts: Caller & { limit?: number; status?: string } = {}): CompactJob[] {
    if (opts.status !== undefined && !(JOB_STATUSES as readonly string[]).includes(opts.status)) {
      throw new GafferError('invalid_request', `status: must be one of ${JOB_STATUSES.join(', ')}, got ${JSON.stringify(opts.status)}`, 'status');
    }
    const rows = this.store.listJobs({ limit: Math.min(Math.max(opts.limit ?? 50, 1), 1_000), status: opts.status, owner: opts.owner });
    return rows.map((row) => {
      const { result: _result, ...brief } = this.#compact(row);
      return brief;
    });
  }

  /** The job's events after `after` and how many it produced. */
  events(id: string, opts: Caller & { after?: number } = {}): { events: JobEvent[]; produced: number } {
    const job = this.#visibleJob(id, opts);
    return { events: this.store.listEvents(id, opts.after ?? 0), produced: job.seq };
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
    await this.#live.get(id)?.done;
  }

  /** Cancels a job: `cancelling` until its workers are dead and its evidence collected, then `cancelled`. */
  cancel(id: string, opts: Caller = {}): CompactJob {
    let job = this.#visibleJob(id, opts);
    if (isFinalStatus(job.status)) throw new GafferError('conflict', `job ${id} is already ${job.status}; nothing to cancel`);
    const ctx = this.#live.get(id);
    if (ctx) this.#cancelLocal(ctx);
    else {
      this.store.requestCancel(id);
      // the process that runs it may have died: then it is interrupted, not cancelled
      void recoverOrphans(this.store, this.dataDir);
    }
    job = this.#visibleJob(id, {});
    return this.#compact(job);
  }

  #cancelLocal(ctx: JobContext): void {
    if (ctx.isCancelled) return;
    ctx.setStatus('cancelling');
    ctx.phase(ctx.interruptReason ? 'stopping: gaffer is shutting down' : 'cancelling');
    ctx.abort.abort(new Error('cancelled'));
  }

  /** Waits until the condition holds or the timeout passes (spec 02 `wait_for`); no poll tick in this process. */
  async waitFor(id: string, rawCondition: string | null | undefined, timeoutS: number, opts: Caller & { signal?: AbortSignal } = {}): Promise<WaitAnswer> {
    const condition = parseWaitCondition(rawCondition);
    this.#visibleJob(id, opts);
    const started = monotonicMs();
    this.#waiters++;
    try {
      const met =
        condition.kind === 'changed'
          ? await this.#waitChanged(id, timeoutS, opts.signal)
          : this.#live.has(id)
            ? await this.#waitLocal(id, condition, timeoutS, opts.signal)
            : await this.#waitPolling(id, condition, timeoutS, opts.signal);
      return {
        met,
        condition: describeCondition(condition),
        waited_s: Math.round((monotonicMs() - started) / 100) / 10,
        state: this.#compact(this.#visibleJob(id, {})),
      };
    } finally {
      this.#waiters--;
    }
  }

  /** `changed`: anything in the workspace changed on disk since the wait began (throttled rescans). */
  async #waitChanged(id: string, timeoutS: number, signal?: AbortSignal): Promise<boolean> {
    const job = this.#visibleJob(id, {});
    if (isFinalStatus(job.status)) return false;
    const deadline = monotonicMs() + timeoutS * 1000;
    const stop = new AbortController();
    // the asker went away: stop at once, leave nothing behind
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) stop.abort();
    const unsubscribe = this.#services.bus.subscribe(id, (e) => {
      if (e.event === 'status' && isFinalStatus(e.status as JobRow['status'])) stop.abort();
    });
    const stopped = () => stop.signal.aborted || monotonicMs() >= deadline || isFinalStatus(this.#visibleJob(id, {}).status);
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
      const unsubscribe = this.#services.bus.subscribe(id, (e) => {
        if (eventMeets(condition, e)) finish(true);
        else if (e.event === 'status' && isFinalStatus(e.status as JobRow['status'])) finish(condition.kind === 'done');
      });
      const timer = setTimeout(() => finish(false), timeoutS * 1000);
      const verdict = this.#checkStored(id, condition, 0);
      if (verdict.met !== null) finish(verdict.met);
      else if (signal?.aborted) finish(false);
    });
  }

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
      if (!this.#live.has(id)) await recoverOrphans(this.store, this.dataDir);
    }
  }

  /** Tests a condition against the store: met, cannot hold any more (false), or not yet (null). */
  #checkStored(id: string, condition: WaitCondition, after: number): { met: boolean | null; seq: number } {
    const job = this.#visibleJob(id, {});
    const final = isFinalStatus(job.status);
    if (condition.kind === 'done') return { met: final ? true : null, seq: job.seq };
    if (condition.kind === 'changed') return { met: final ? false : null, seq: job.seq };
    const events = this.store.listEvents(id, after);
    if (events.some((e) => eventMeets(condition, e))) return { met: true, seq: job.seq };
    return { met: final ? false : null, seq: events.at(-1)?.seq ?? after };
  }

  /** Counts for /api/health, so a leak can be seen. */
  health(): { live_jobs: number; waiters: number; listeners: number } {
    return { live_jobs: this.#live.size, waiters: this.#waiters, listeners: this.#services.bus.listenerCount };
  }

  /**
   * Stops accepting jobs, stops the live jobs' workers, collects their evidence and records them
   * `interrupted` with `reason`, then closes the store unless asked not to (a server's SIGTERM, spec 02).
   */
  async shutdown(reason = 'interrupted by a shutdown of gaffer', opts: { keepStoreOpen?: boolean } = {}): Promise<void> {
    this.#closed = true;
    for (const ctx of this.#live.values()) {
      ctx.interruptReason = reason;
      this.#cancelLocal(ctx);
    }
    await Promise.all([...this.#live.values()].map((ctx) => ctx.done));
    // a server keeps the store open until its streams have written their `end` events
    if (!opts.keepStoreOpen) await this.close();
  }

  /** Seconds since this engine opened. */
  get uptimeS(): number {
    return Math.round((monotonicMs() - this.#startedAt) / 1000);
  }

  /** Resolves once the background prune of old jobs' snapshots (run when nothing is live) is done. */
  async maintenanceDone(): Promise<void> {
    await this.#pruning;
  }

  /** Cancels this process's live jobs, waits for them to settle, and closes the store. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const ctx of this.#live.values()) this.#cancelLocal(ctx);
    await Promise.all([...this.#live.values()].map((ctx) => ctx.done));
    await this.#pruning; // it reads the store
    if (this.#storeClosed) return;
    this.#storeClosed = true;
    this.#releaseSpawner();
    if (this.#cancelTimer) clearInterval(this.#cancelTimer);
    if (this.#orphanTimer) clearInterval(this.#orphanTimer);
    await this.#recovering;
    this.store.close();
  }

  #visibleJob(id: string, opts: Caller): JobRow {
    const job = this.store.getJob(id);
    if (!job || (opts.owner != null && job.owner !== opts.owner)) {
      throw new GafferError('not_found', `no job ${JSON.stringify(id)}${opts.owner != null ? ' visible to this owner' : ''} — see gaffer list`, 'job_id');
    }
    return job;
  }

  #compact(job: JobRow, full = false): CompactJob {
    return buildCompact(job, this.store.listAttempts(job.id), { full, workerCap: this.#services.workerCap });
  }

  /** Cancels asked for by other processes reach this one through the store. */
  #watchCancels(): void {
    if (this.#cancelTimer) return;
    this.#cancelTimer = setInterval(() => {
      if (this.#live.size === 0) {
        clearInterval(this.#cancelTimer as NodeJS.Timeout);
        this.#cancelTimer = null;
        return;
      }
      for (const id of this.store.listCancelRequested(process.pid)) {
        const ctx = this.#live.get(id);
        if (ctx) this.#cancelLocal(ctx);
      }
    }, this.#cancelPollMs);
    this.#cancelTimer.unref();
  }

  /** A job whose process died (another CLI, a killed server) is recovered by whoever is alive: one indexed read a second. */
  #watchOrphans(): void {
    const report = (err: unknown) => void process.stderr.write(`gaffer: recovering dead jobs failed: ${err instanceof Error ? err.message : String(err)}\n`);
    this.#orphanTimer = setInterval(() => {
      if (this.#storeClosed || this.#recovering !== null || !this.store.db.open) return;
      try {
        if (!hasOrphans(this.store)) return;
      } catch (err) {
        report(err);
        return;
      }
      this.#recovering = recoverOrphans(this.store, this.dataDir)
        .catch(report)
        .finally(() => (this.#recovering = null));
    }, ORPHAN_LOOK_MS);
    this.#orphanTimer.unref();
  }

  #afterJob(): void {
    if (this.#closed) return;
    const pruned = this.store.pruneFinishedJobs(this.#retention);
    if (pruned.length === 0) return;
    for (const id of pruned) rmSync(join(this.dataDir, 'jobs', id), { recursive: true, force: true });
    // spec 03: no gc during a job — prune the shadow repos only while nothing is live
    if (!this.store.hasLiveJobs()) {
      // the keep list is read again inside each shadow repo's lock: a job submitted meanwhile keeps its snapshots
      const previous = this.#pruning;
      this.#pruning = previous
        .then(() => pruneSnapshots(this.dataDir, () => this.store.listJobIds()))
        .then(
          () => undefined,
          (err: unknown) => void process.stderr.write(`gaffer: pruning snapshots failed: ${err instanceof Error ? err.message : String(err)}\n`),
        );
    }
  }
}

/** What makes two requests the same: the spec without its key (a header key and a body key are one key). */
function hashSpec(spec: JobSpec): string {
  const { client_request_id: _key, ...request } = spec;
  return createHash('sha256').update(JSON.stringify(request)).digest('hex');
}
