import { appendFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { Job, Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { GafferError } from '../../domain/errors.js';
import type { RemoteRepo } from '../../domain/remote-repo.js';
import type { RunnerReport } from '../../domain/runner-report.js';
import { baseRef, dropRefs, exportBase } from '../../evidence/cluster-git.js';
import { readRepo, serialized } from '../../evidence/worktree-git.js';
import type { Runner, RunnerInput } from '../../runners/contract.js';
import { blankReport } from '../../runners/report.js';
import { Semaphore } from '../semaphore.js';
import { DEPENDENCY_DIRS } from '../placement/worktree.js';
import { AttemptExchange } from './exchange.js';
import { NODE_LOST, type Executor, type RunOptions } from './executor.js';
import { RemoteWork } from './remote-work.js';
import { cancelledReport, takeBack } from './take-back.js';
import { NamespaceClaim } from './namespace-claim.js';
import { readNodeRecords, type NodeRecord } from './node-record.js';
import { NodeCredentials } from '../../config/node-credentials.js';
import { viewOf, type ClusterView } from './cluster-view.js';
import {
  advertisedKey,
  CANCEL_TTL_S,
  cancelChannel,
  cancelKey,
  connectionOf,
  DEFAULT_QUEUE_PREFIX,
  describeQueue,
  NODE_TRIES,
  queueName,
  safeJson,
  signEntry,
  withTimeout,
  wireProgressSchema,
  type QueueEntry,
  type WireAttempt,
} from './wire.js';

/** A coordinator's cluster (spec 09): `gaffer serve --queue`. */
export interface ClusterSettings {
  /** The Redis URL (`redis://host:6379`). */
  queue: string;
  /** Attempts of a runner offered or running at once across the cluster; a runner not named has no cluster-wide limit. */
  limits?: Readonly<Record<string, number>>;
  /** Attempts on the queue at once (the executor's cap); default 64. */
  cap?: number;
  /** The namespace of the cluster's keys on the Redis (`--queue-prefix`, BullMQ's prefix); default `gaffer`. One coordinator holds it. */
  prefix?: string;
  /** How long a queue entry may wait for a node before it runs nothing, s (`--entry-ttl-s`); default a day. */
  entryTtlS?: number;
  /** One line for the operator (the coordinator's stderr): refused claims, a namespace lost. */
  say?: (line: string) => void;
}

/** How long a queue entry stays runnable by default, s: as long as BullMQ keeps a failed one. */
export const DEFAULT_ENTRY_TTL_S = 86_400;

/** How long a node has to confirm a cancel before the attempt ends cancelled without its word, ms. */
const CANCEL_CONFIRM_MS = 10_000;
/** How often each live attempt's BullMQ job is read besides its events (an event lost to a reconnect), ms. */
const POLL_MS = 2_000;
/** How long work whose node was lost waits for the task's next attempt to take it over before it is cancelled, ms. */
const ADOPT_MS = 30_000;
/** After its second stall, how long BullMQ has to fail the job (a node must take it to) before the attempt ends without it, ms. */
const SECOND_STALL_MS = 60_000;
/** The most of a remote worker's output the coordinator's log of it keeps, bytes (the node keeps its whole log). */
const LOG_CAP_BYTES = 10 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 10_000;
/** How long an attempt waits for a node before the job's phase says it waits for one, ms. */
const WAITING_SAY_MS = 2_000;
/** The stop reason of an attempt no node took within its timeout. */
const NO_NODE = 'no_node';
/** How often the coordinator looks for stalled entries (a node lost), ms. */
const STALL_CHECK_MS = 1_000;
/** How often waiting attempts are offered to the live nodes with a free slot (their records read again), ms. */
const DISPATCH_MS = 500;
/** How long an offer may go unclaimed before it goes to another node (its node paused, lost, or its entry taken by another), ms. */
const OFFER_CLAIM_MS = 15_000;
/** BullMQ's own reason for a job that stalled past `maxStalledCount`: the attempt's end after its second lost node. */
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';
/** How long the operator's view waits for the Redis before it says the Redis does not answer, ms. */
const VIEW_TIMEOUT_MS = 2_000;

/**
 * The remote Executor (issue 17, spec 09): the coordinator offers each attempt to one live node it
 * chose (from the nodes' records: the runner, a free slot by its own count, a live credential) as a
 * BullMQ job on that node's queue (`node-<name>`), signed with that node's key; only that node's
 * credential may claim it, so a node that reads or rewrites every Redis key gets nothing of
 * another's work. An offer not claimed, failed, or whose node stalled goes to another node (bounded). The node gets the workspace as a git bundle of its base (HEAD
 * plus uncommitted work, exported here), runs the runner in a worktree of its own, and sends its
 * commit back as a bundle. This executor applies that commit to the workspace before it returns,
 * so the attempt's evidence, verification and proof are made exactly as for a local attempt —
 * from the coordinator's own snapshot of its own disk; the node's report is a claim.
 */
export class BullmqExecutor implements Executor {
  readonly cap: number;
  /** What the HTTP API offers the nodes. */
  readonly exchange: AttemptExchange;
  readonly #settings: ClusterSettings;
  readonly #connection: ReturnType<typeof connectionOf>;
  readonly #slots: Semaphore;
  readonly #queues = new Map<string, Queue>();
  /** Per runner queue, a BullMQ worker that takes nothing and only looks for stalled entries: a lost node is noticed with no other node alive. */
  readonly #stallCheckers = new Map<string, Worker>();
  readonly #events = new Map<string, Promise<QueueEvents>>();
  readonly #works = new Map<string, RemoteWork>();
  /** The work behind each BullMQ job id of a current offer (an earlier offer's job is no one's). */
  readonly #byJob = new Map<string, RemoteWork>();
  /** BullMQ's hints on claimed attempts already told the operator (attempt, job, what). */
  readonly #hinted = new Set<string>();
  /** Attempts waiting for an offer, oldest first. */
  #pending: RemoteWork[] = [];
  /** The live nodes' records, as last read. */
  #records: NodeRecord[] = [];
  readonly #credentials: NodeCredentials;
  #dispatching: Promise<void> | null = null;
  #redispatch = false;
  #dispatchTimer: NodeJS.Timeout | null = null;
  /** Turns among equally loaded nodes. */
  #turn = 0;
  readonly #lost = new Map<string, { work: RemoteWork; timer: NodeJS.Timeout }>();
  readonly #repoKey: (commonDir: string) => string;
  readonly #prefix: string;
  readonly #dataDir: string;
  readonly #say: (line: string) => void;
  #redis: Redis | null = null;
  #claim: NamespaceClaim | null = null;
  #url: string | null = null;
  #poll: NodeJS.Timeout | null = null;
  #closed = false;
  /** The runners the live nodes announced, as last read. */
  #offered: ReadonlySet<string> = new Set();

  constructor(settings: ClusterSettings, dataDir: string) {
    this.#settings = settings;
    this.#connection = connectionOf(settings.queue);
    this.cap = settings.cap ?? 64;
    this.#slots = new Semaphore(this.cap);
    this.#prefix = settings.prefix ?? DEFAULT_QUEUE_PREFIX;
    this.#dataDir = dataDir;
    this.#say = settings.say ?? (() => undefined);
    this.#credentials = new NodeCredentials(dataDir);
    this.exchange = new AttemptExchange(join(dataDir, 'cluster'), this.#credentials, {
      claimed: (key, node) => this.#works.get(key)?.onTaken(node),
      progress: (key, p) => this.#works.get(key)?.onProgress(p),
      report: (key, result) => this.#works.get(key)?.settle({ kind: 'completed', value: result }),
      released: (key, node, why) => {
        const work = this.#works.get(key);
        if (work !== undefined && work.offeredTo === node) this.#offerAgain(work, `node ${node} gave it back: ${why}`);
      },
      say: this.#say,
    });
    // a node's cache of a repository is keyed by this coordinator's data dir and the repository: one cache per workspace repository
    this.#repoKey = (commonDir) => createHash('sha256').update(`${dataDir}\0${commonDir}`).digest('hex').slice(0, 32);
  }

  /** Where the nodes reach this coordinator's HTTP API (known once the server listens); told on the Redis too, for a node's check before it takes anything. */
  advertise(url: string): void {
    this.#url = url;
    void this.#tellAddress();
  }

  async #tellAddress(): Promise<void> {
    if (this.#url === null || this.#redis === null || this.#claim?.lost) return;
    await this.#redis
      .set(advertisedKey(this.#prefix), JSON.stringify({ url: this.#url, host: os.hostname() }))
      .catch(() => undefined);
  }

  /**
   * Connects to Redis (refusing, named, when it does not answer), takes the queue namespace
   * (refusing, named, when another coordinator holds it), sets each runner's cluster-wide limit,
   * and clears what an earlier coordinator of this namespace left on the queues: its jobs were
   * recorded interrupted when this one started, so their waiting attempts go and their running ones
   * are cancelled.
   */
  async open(): Promise<void> {
    const redis = new Redis(this.#settings.queue, { maxRetriesPerRequest: null, lazyConnect: true });
    // ioredis reconnects by itself; an unheard `error` event would only be printed
    redis.on('error', () => undefined);
    try {
      await withTimeout(redis.connect(), CONNECT_TIMEOUT_MS);
    } catch (err) {
      redis.disconnect();
      throw new GafferError(
        'invalid_request',
        `the queue at ${describeQueue(this.#settings.queue)} does not answer: ${err instanceof Error ? err.message : String(err)} — start redis-server there, or fix --queue`,
        'queue',
      );
    }
    try {
      this.#claim = await NamespaceClaim.take(redis, {
        prefix: this.#prefix,
        queue: this.#settings.queue,
        dataDir: this.#dataDir,
        onLost: (why) => this.#say(why),
      });
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    this.#redis = redis;
    const existing = new Set<string>();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${this.#prefix}:${queueName('*')}:meta`, 'COUNT', 200);
      cursor = next;
      for (const k of keys) existing.add(k.slice(`${this.#prefix}:${queueName('')}`.length, -':meta'.length));
    } while (cursor !== '0');
    for (const node of existing) {
      const queue = this.#queue(node);
      await queue.drain(true);
      for (const job of await queue.getActive()) {
        const key = (job.data as { entry?: { key?: unknown } } | null)?.entry?.key;
        if (typeof key === 'string') await this.#publishCancel(key);
      }
    }
    await this.#dropSharedTokenQueues(redis);
    await this.#readOffers();
    this.#poll = setInterval(
      () => void this.#pollAll().then(() => Promise.all([this.#tellAddress(), this.#readOffers()])),
      POLL_MS,
    );
    this.#poll.unref();
    this.#dispatchTimer = setInterval(() => {
      if (this.#pending.length > 0) void this.#readOffers().then(() => this.#dispatch());
    }, DISPATCH_MS);
    this.#dispatchTimer.unref();
  }

  /**
   * The runner queues of the shared-token era (`runner-<key>`), which no node takes from any more:
   * removed with their entries (each an attempt's reference, signed with the token that is gone),
   * so nothing of them lingers on the Redis nor shows as work waiting.
   */
  async #dropSharedTokenQueues(redis: Redis): Promise<void> {
    const old = new Set<string>();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${this.#prefix}:runner-*:meta`, 'COUNT', 200);
      cursor = next;
      for (const k of keys) old.add(k.slice(`${this.#prefix}:`.length, -':meta'.length));
    } while (cursor !== '0');
    for (const name of old) {
      const queue = new Queue(name, { connection: this.#connection, prefix: this.#prefix });
      queue.on('error', () => undefined);
      try {
        await queue.obliterate({ force: true });
        this.#say(`removed the queue ${name} of the shared node token (no node takes from it any more)`);
      } catch {
        // Redis away: the next start tries again
      } finally {
        await queue.close().catch(() => undefined);
      }
    }
  }

  /** Whether a live node that can serve offers the runner (its record, read every {@link POLL_MS}). */
  offeredByNodes(runner: string): boolean {
    return this.#offered.has(runner);
  }

  async #readOffers(): Promise<void> {
    if (this.#redis === null) return;
    try {
      this.#records = await readNodeRecords(this.#redis, this.#prefix);
      const serving = this.#records.filter((n) => (n.cannot ?? null) === null);
      this.#offered = new Set(serving.flatMap((n) => n.runners));
    } catch {
      // Redis away: the last reading stands until the next poll
    }
  }

  slot(signal?: AbortSignal): Promise<() => void> {
    return this.#slots.acquire(signal);
  }

  async run(runner: Runner, input: RunnerInput, opts: RunOptions = {}): Promise<RunnerReport> {
    const adopted = opts.continues !== undefined ? this.#adopt(`${input.jobId}\0${opts.continues}`) : null;
    let work = adopted;
    if (work === null) {
      const placed = await this.#place(runner, input, opts.remote);
      if ('report' in placed) return placed.report;
      work = placed.work;
    }
    const report = await this.#follow(work, input, opts, adopted !== null);
    if (report.stopReason === NODE_LOST) this.#park(`${input.jobId}\0${input.workerName}`, work);
    else await this.#finish(work);
    return report;
  }

  /**
   * What the operator sees of the cluster (`gaffer nodes`, `GET /api/nodes`): each live node's
   * record, each runner queue's depth and its oldest waiting entry's age, and whether the Redis
   * answered. Never throws: a Redis that does not answer within {@link VIEW_TIMEOUT_MS} is said so.
   */
  async view(): Promise<ClusterView> {
    const redis = this.#redis;
    const base = { queue: describeQueue(this.#settings.queue), prefix: this.#prefix };
    if (redis === null) return viewOf({ ...base, redis: 'the cluster executor is not open', nodes: [], queues: [] });
    try {
      return await withTimeout(
        (async () => {
          const nodes = await readNodeRecords(redis, this.#prefix);
          const live = [...this.#works.values()].filter((w) => !w.isSettled);
          const runners = new Set([...live.map((w) => w.runner), ...nodes.flatMap((n) => n.runners)]);
          const queues = [...runners].sort().map((runner) => {
            const mine = live.filter((w) => w.runner === runner);
            // waiting: for an offer, or offered and not claimed yet; running: claimed by its node
            const waiting = mine.filter((w) => !this.exchange.isClaimed(w.key));
            const oldest = waiting.reduce((m, w) => Math.min(m, w.placedAt), Infinity);
            return {
              runner,
              waiting: waiting.length,
              running: mine.length - waiting.length,
              oldest_waiting_ms: Number.isFinite(oldest) ? oldest : null,
            };
          });
          return viewOf({ ...base, redis: null, nodes, queues, lost: this.#claim?.lost ?? null });
        })(),
        VIEW_TIMEOUT_MS,
      );
    } catch (err) {
      return viewOf({
        ...base,
        redis: `the queue at ${base.queue} does not answer: ${err instanceof Error ? err.message : String(err)}`,
        nodes: [],
        queues: [],
      });
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#poll) clearInterval(this.#poll);
    if (this.#dispatchTimer) clearInterval(this.#dispatchTimer);
    for (const { work, timer } of this.#lost.values()) {
      clearTimeout(timer);
      await this.#publishCancel(work.key).catch(() => undefined);
    }
    this.#lost.clear();
    await Promise.all([...this.#events.values()].map((e) => e.then((events) => events.close()).catch(() => undefined)));
    await Promise.all([...this.#stallCheckers.values()].map((w) => w.close().catch(() => undefined)));
    await Promise.all([...this.#queues.values()].map((q) => q.close().catch(() => undefined)));
    await this.#claim?.release();
    await this.#redis?.quit().catch(() => undefined);
  }

  /** Exports the workspace's base and puts the attempt on its runner's queue; a report when it cannot. */
  async #place(
    runner: Runner,
    input: RunnerInput,
    remote: RemoteRepo | undefined,
  ): Promise<{ work: RemoteWork } | { report: RunnerReport }> {
    const launchFailed = (error: string) => ({
      report: blankReport({ status: 'error', outcome: 'expected_error', stopReason: 'spawn_failed', error }),
    });
    if (this.#closed || this.#redis === null) return launchFailed('the cluster executor is closed');
    if (this.#url === null)
      return launchFailed("the coordinator's address is not known yet (gaffer serve sets it once it listens)");
    const lost = this.#claim?.lost ?? null;
    if (lost !== null) return launchFailed(lost);
    const repo = await readRepo(input.workspace);
    if ('refused' in repo)
      return launchFailed(`cluster mode hands nodes the workspace through git, but the workspace ${repo.refused}`);
    let base: string;
    try {
      base = await serialized(repo, () => exportBase(repo));
    } catch (err) {
      return launchFailed(
        `the workspace could not be exported for a node: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    // one BullMQ job per run of the attempt (a rate-limited attempt runs again): its own key
    const key = `${input.jobId}.${input.workerName}.${randomBytes(4).toString('hex')}`;
    const branch = `gaffer/${input.jobId}/${input.workerName}`;
    // ignored, so not in the base: the node installs them as a local worktree job links them
    const deps = DEPENDENCY_DIRS.filter((d) => existsSync(join(input.workspace, d.dir))).map((d) => d.dir);
    const work = new RemoteWork({ key, runner: runner.key, repo, base, branch, ...(remote ? { remote } : {}) });
    const attempt: Omit<WireAttempt, 'ticket'> = {
      v: 1,
      key,
      coordinator: this.#url,
      base,
      repo: this.#repoKey(repo.commonDir),
      prefix: repo.prefix,
      branch,
      ...(remote ? { remote } : {}),
      runner: runner.key,
      ...(deps.length > 0 ? { deps } : {}),
      input: {
        jobId: input.jobId,
        workerName: input.workerName,
        attempt: input.attempt,
        role: input.role,
        instruction: input.instruction,
        command: input.command,
        model: input.model,
        ...(input.endpoint !== undefined ? { endpoint: input.endpoint } : {}),
        timeoutMs: input.timeoutMs,
        maxRounds: input.maxRounds,
        resume: input.resume,
        files: input.files,
        ...(input.outputs !== undefined ? { outputs: input.outputs } : {}),
        sandbox: input.sandbox,
      },
    };
    const expires = Date.now() + (this.#settings.entryTtlS ?? DEFAULT_ENTRY_TTL_S) * 1000;
    work.expires = expires;
    this.exchange.open(key, repo, base, { runner: runner.key, expires, attempt });
    this.#works.set(key, work);
    // uncommitted work exported: a commit of this moment, which a node fetches from here; its bundle is made while the attempt travels
    if (base !== repo.head) this.exchange.prepare(key);
    work.queued = true;
    this.#pending.push(work);
    void this.#dispatch();
    return { work };
  }

  /** Offers waiting attempts to live nodes with a free slot; one pass at a time, another after it when asked meanwhile. */
  #dispatch(): Promise<void> {
    if (this.#dispatching !== null) {
      this.#redispatch = true;
      return this.#dispatching;
    }
    this.#dispatching = (async () => {
      do {
        this.#redispatch = false;
        await this.#dispatchOnce().catch(() => undefined);
      } while (this.#redispatch && !this.#closed);
    })().finally(() => (this.#dispatching = null));
    return this.#dispatching;
  }

  async #dispatchOnce(): Promise<void> {
    if (this.#closed || this.#pending.length === 0 || (this.#claim?.lost ?? null) !== null) return;
    const load = new Map<string, number>();
    const running = new Map<string, number>();
    const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
    for (const w of this.#works.values())
      if (w.offeredTo !== null && !w.isSettled) {
        add(load, `${w.offeredTo}\0${w.runner}`);
        add(running, w.runner);
      }
    for (const work of [...this.#pending]) {
      if (work.isSettled) {
        this.#unpend(work);
        continue;
      }
      const limit = this.#settings.limits?.[work.runner];
      if (limit !== undefined && (running.get(work.runner) ?? 0) >= limit) continue;
      const loadOf = (n: NodeRecord) => (load.get(`${n.name}\0${work.runner}`) ?? 0) / Math.max(1, n.slots);
      const free = this.#records.filter(
        (n) =>
          (n.cannot ?? null) === null &&
          n.runners.includes(work.runner) &&
          (load.get(`${n.name}\0${work.runner}`) ?? 0) < n.slots &&
          this.#credentials.signingKey(n.name) !== null,
      );
      // a node the attempt failed on, or was lost on, last of all
      const fresh = free.filter((n) => !work.avoid.has(n.name));
      const choice = (fresh.length > 0 ? fresh : free)
        .map((n, i) => ({ n, order: (i + this.#turn) % Math.max(1, free.length) }))
        .sort((a, b) => loadOf(a.n) - loadOf(b.n) || a.order - b.order)[0]?.n;
      if (choice === undefined) continue;
      this.#turn++;
      if (!(await this.#offer(work, choice.name))) return;
      this.#unpend(work);
      add(load, `${choice.name}\0${work.runner}`);
      add(running, work.runner);
    }
  }

  #unpend(work: RemoteWork): void {
    this.#pending = this.#pending.filter((w) => w !== work);
  }

  /** Puts the attempt on `node`'s queue, signed with its key, with a new one-time value; false when the Redis did not take it. */
  async #offer(work: RemoteWork, node: string): Promise<boolean> {
    const signingKey = this.#credentials.signingKey(node);
    if (signingKey === null || this.#url === null) return false;
    const jobId = `${work.key}.o${work.offers + 1}`;
    const entry: QueueEntry = {
      v: 3,
      id: jobId,
      key: work.key,
      prefix: this.#prefix,
      runner: work.runner,
      node,
      coordinator: this.#url,
      expires: work.expires,
      once: randomBytes(32).toString('base64url'),
    };
    this.exchange.offer(work.key, node, entry.once);
    work.offers += 1;
    work.offeredTo = node;
    work.jobId = jobId;
    work.offeredAt = Date.now();
    this.#byJob.set(jobId, work);
    try {
      // listening before the add: no event of this job can come before it is heard
      await this.#eventsOf(node);
      await this.#queue(node).add(work.runner, signEntry(entry, signingKey), {
        jobId,
        // a failed try is offered again by the coordinator, to another node
        attempts: 1,
        removeOnComplete: { age: 3_600 },
        removeOnFail: { age: 86_400 },
      });
      return true;
    } catch {
      // Redis away: the attempt waits for the next pass
      this.#byJob.delete(jobId);
      this.exchange.withdraw(work.key);
      work.offers -= 1;
      work.offeredTo = null;
      work.jobId = null;
      return false;
    }
  }

  /** Takes the attempt's current offer back: its entry leaves its node's queue when it can, and stops being claimable either way. */
  #withdraw(work: RemoteWork, opts: { remove: boolean } = { remove: true }): void {
    const { jobId, offeredTo } = work;
    this.#unpend(work);
    this.exchange.withdraw(work.key);
    work.offeredTo = null;
    work.jobId = null;
    if (jobId === null || offeredTo === null) return;
    this.#byJob.delete(jobId);
    if (!opts.remove) return;
    void Job.fromId(this.#queue(offeredTo), jobId)
      .then((job) => job?.remove())
      .catch(() => undefined);
  }

  /**
   * The attempt's offer failed (`why`): it is offered to another node, up to {@link NODE_TRIES}
   * tries (a stall is not a try: it has its own bound), else its work ends failed with why.
   */
  #offerAgain(work: RemoteWork, why: string, opts: { stall?: boolean } = {}): void {
    if (work.isSettled) return;
    const node = work.offeredTo;
    this.#withdraw(work);
    if (node !== null) work.avoid.add(node);
    if (!opts.stall) work.tries += 1;
    if (Date.now() >= work.expires) {
      work.settle({ kind: 'failed', reason: `its entry expired at ${new Date(work.expires).toISOString()}: ${why}` });
      return;
    }
    if (!opts.stall && work.tries >= NODE_TRIES) {
      work.settle({ kind: 'failed', reason: `offered ${work.tries} times, the last: ${why}` });
      return;
    }
    this.#say(`${work.key}: offered again${node !== null ? ` (not to node ${node})` : ''}: ${why}`);
    this.#pending.push(work);
    void this.#dispatch();
  }

  /** The current offer's node was lost (unheard past its stall window; before a claim, its BullMQ lock expired): the first time its work goes to another node, the second it ends. */
  #stalled(work: RemoteWork): void {
    if (work.isSettled) return;
    work.noteStalls(work.stalls + 1);
    if (work.stalls >= 2) {
      this.#withdraw(work);
      work.settle({ kind: 'failed', reason: STALLED_TOO_OFTEN });
    } else
      this.#offerAgain(work, `node ${work.node ?? work.offeredTo ?? 'unknown'} stopped answering`, { stall: true });
  }

  /** Follows the work to its end: the node's events onto the attempt, cancel to the node, its commit into the workspace. */
  #follow(work: RemoteWork, input: RunnerInput, opts: RunOptions, adopted: boolean): Promise<RunnerReport> {
    const logged = { bytes: 0 };
    return new Promise<RunnerReport>((resolve) => {
      let ended = false;
      const timers: NodeJS.Timeout[] = [];
      const end = (report: RunnerReport) => {
        if (ended) return;
        ended = true;
        for (const t of timers) clearTimeout(t);
        input.signal.removeEventListener('abort', onAbort);
        work.detach();
        resolve(report);
      };
      const onAbort = () => {
        timers.push(
          setTimeout(
            () => end(cancelledReport(`the node did not confirm the cancel within ${CANCEL_CONFIRM_MS / 1000} s`)),
            CANCEL_CONFIRM_MS,
          ),
        );
        void this.#cancel(work);
      };
      let lastNode = work.node;
      let everTaken = work.node !== null;
      // the end an attempt no node took is given, set before its entry is removed: the removal's `gone` ends it so
      let givenUp: RunnerReport | null = null;
      // no node took it soon: the job's phase says what it waits for; no node in its timeout: the attempt ends, saying why
      // work taken over from a lost node waits on the queue again: the same holds for it
      if (!everTaken) {
        timers.push(
          setTimeout(() => {
            if (!everTaken && !ended)
              opts.onNode?.({ event: 'waiting', node: null, message: `waiting for a node for ${work.runner}` });
          }, WAITING_SAY_MS),
          setTimeout(
            () =>
              void this.#giveUpWaiting(
                work,
                input.timeoutMs,
                () => everTaken,
                (report) => (givenUp = report),
                end,
              ),
            input.timeoutMs,
          ),
        );
      }
      work.attach({
        taken: (node) => {
          everTaken = true;
          lastNode = node;
          opts.onNode?.({ event: 'taken', node, message: `taken by node ${node}` });
        },
        progress: (p) => {
          if (p.type === 'output') {
            appendLog(input.logFile, p.lines, logged);
            input.onOutput?.(p.lines);
          } else input.onState?.(p.detection as Parameters<NonNullable<RunnerInput['onState']>>[0]);
        },
        stalled: (stalls) => {
          if (!adopted && stalls === 1) {
            const node = lastNode ?? 'unknown';
            opts.onNode?.({
              event: 'lost',
              node: lastNode,
              message: `node ${node} stopped answering: its work goes to another node`,
            });
            end(
              blankReport({
                status: 'error',
                outcome: 'expected_error',
                stopReason: NODE_LOST,
                error: `node ${node} stopped answering mid-attempt (unheard past its stall window): the work was handed to another node as a new attempt`,
              }),
            );
            return;
          }
          opts.onNode?.({
            event: 'requeued',
            node: lastNode,
            message: `node ${lastNode ?? 'unknown'} stopped answering too: the work ends`,
          });
          timers.push(setTimeout(() => end(lostAgain(stalls)), SECOND_STALL_MS));
        },
        settled: (outcome) => {
          if (givenUp !== null && outcome.kind === 'gone') {
            end(givenUp);
            return;
          }
          void takeBack(work, outcome, { exchange: this.exchange, cancelled: input.signal.aborted }).then(
            end,
            (err: unknown) =>
              end(
                blankReport({
                  status: 'error',
                  outcome: 'panic',
                  stopReason: 'result_not_applied',
                  error: `the node's work could not be taken back: ${err instanceof Error ? err.message : String(err)}`,
                }),
              ),
          );
        },
      });
      // taken over after its second stall already: BullMQ fails it once a node takes it, else the attempt ends on its own
      if (adopted && work.stalls >= 2 && !work.isSettled)
        timers.push(setTimeout(() => end(lostAgain(work.stalls)), SECOND_STALL_MS));
      if (input.signal.aborted) onAbort();
      else input.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * An attempt no node took within its timeout: taken off the queue (unless a node takes it in the
   * very moment) and ended `error`, naming the runner and whether any live node serves it.
   */
  async #giveUpWaiting(
    work: RemoteWork,
    timeoutMs: number,
    taken: () => boolean,
    giveUp: (report: RunnerReport | null) => void,
    end: (report: RunnerReport) => void,
  ): Promise<void> {
    if (taken() || work.isSettled) return;
    // why first: once the entry is removed, its `removed` event would end the attempt as "gone" without it
    const view = await this.view();
    const serving = view.queues.find((q) => q.runner === work.runner)?.nodes ?? [];
    const why = !view.redis.ok
      ? view.redis.error
      : serving.length === 0
        ? `no live node takes ${work.runner}: start one with gaffer node --runners ${work.runner}`
        : `the nodes that take ${work.runner} (${serving.join(', ')}) were busy`;
    const report = blankReport({
      status: 'error',
      outcome: 'expected_error',
      stopReason: NO_NODE,
      error: `no node took the attempt within its timeout (${Math.round(timeoutMs / 1000)} s): ${why}`,
      timedOut: true,
    });
    // claimed meanwhile: it runs; else its offer stops being claimable at once, whatever the Redis says
    if (taken() || this.exchange.isClaimed(work.key) || work.isSettled) return;
    giveUp(report);
    this.#withdraw(work);
    end(report);
  }

  /** Cancels the work: gone from the queue when no node has it yet, else the node is told (pub/sub, and a key a late taker reads). */
  async #cancel(work: RemoteWork): Promise<void> {
    try {
      // not claimed: withdrawn, so no node can claim it any more
      if (!work.isSettled && !this.exchange.isClaimed(work.key)) {
        this.#withdraw(work);
        work.settle({ kind: 'gone' });
        return;
      }
      await this.#publishCancel(work.key);
    } catch {
      // Redis away: the confirm timer ends the attempt
    }
  }

  async #publishCancel(key: string): Promise<void> {
    const redis = this.#redis;
    if (redis === null) return;
    await redis.set(cancelKey(this.#prefix, key), '1', 'EX', CANCEL_TTL_S);
    await redis.publish(cancelChannel(this.#prefix), key);
  }

  /** Keeps work whose node was lost for the task's next attempt; cancelled when none takes it over in time. */
  #park(run: string, work: RemoteWork): void {
    const timer = setTimeout(() => {
      this.#lost.delete(run);
      void this.#publishCancel(work.key).catch(() => undefined);
      void this.#finish(work);
    }, ADOPT_MS);
    timer.unref();
    this.#lost.set(run, { work, timer });
  }

  #adopt(run: string): RemoteWork | null {
    const lost = this.#lost.get(run);
    if (!lost) return null;
    clearTimeout(lost.timer);
    this.#lost.delete(run);
    return lost.work;
  }

  /** The work is over: its ticket, uploads and refs go. */
  async #finish(work: RemoteWork): Promise<void> {
    // its job stays as BullMQ keeps it (a completed or failed one for a while): a copy of it is refused by the node and by this exchange
    this.#withdraw(work, { remove: false });
    this.#works.delete(work.key);
    for (const said of this.#hinted) if (said.startsWith(`${work.key}\0`)) this.#hinted.delete(said);
    this.exchange.close(work.key);
    const baseInUse = [...this.#works.values()].some(
      (w) => w.base === work.base && w.repo.commonDir === work.repo.commonDir,
    );
    if (!baseInUse) await serialized(work.repo, () => dropRefs(work.repo, [baseRef(work.base)])).catch(() => undefined);
  }

  #queue(node: string): Queue {
    let queue = this.#queues.get(node);
    if (!queue) {
      queue = new Queue(queueName(node), { connection: this.#connection, prefix: this.#prefix });
      queue.on('error', () => undefined);
      this.#queues.set(node, queue);
      this.#checkStalls(node);
    }
    return queue;
  }

  /**
   * BullMQ finds a stalled entry only in a worker's periodic check, and nodes are the only workers:
   * with its node dead (SIGKILL) or stopped (SIGSTOP) and no other node on the runner, nobody looked.
   * The coordinator looks too, every {@link STALL_CHECK_MS}: an entry is stalled only once its lock
   * expired (`--stall-s` after the node last renewed it), so looking often hands nothing over early.
   * It decides only for an entry not yet claimed; a claimed one's stall is a hint (#onJob).
   */
  #checkStalls(node: string): void {
    if (this.#closed || this.#stallCheckers.has(node)) return;
    const checker = new Worker(
      queueName(node),
      (): Promise<unknown> => Promise.reject(new Error('the coordinator takes no attempts')),
      {
        connection: this.#connection,
        prefix: this.#prefix,
        name: 'coordinator-stall-check',
        autorun: false,
        stalledInterval: STALL_CHECK_MS,
        // as on the nodes (node.ts): one hand-over, then BullMQ fails the entry
        maxStalledCount: 1,
      },
    );
    checker.on('error', () => undefined);
    this.#stallCheckers.set(node, checker);
    void checker.startStalledCheckTimer().catch(() => undefined);
  }

  /**
   * The events of a runner's queue, heard from before its first attempt is added. They are read
   * from the stream's last entry as it stands now: BullMQ's default (`$`) starts at its first
   * XREAD, which comes some round trips after it is ready, and a node's `taken` said meanwhile was
   * lost (seen under load).
   */
  #eventsOf(node: string): Promise<QueueEvents> {
    let events = this.#events.get(node);
    if (!events) {
      events = this.#listen(node);
      // a failure (Redis away) is not kept: the next attempt tries again
      events.catch(() => this.#events.delete(node));
      this.#events.set(node, events);
    }
    return events;
  }

  async #listen(node: string): Promise<QueueEvents> {
    const redis = this.#redis;
    if (redis === null) throw new Error('the cluster executor is not open');
    const [last] = await redis.xrevrange(`${this.#prefix}:${queueName(node)}:events`, '+', '-', 'COUNT', 1);
    const e = new QueueEvents(queueName(node), {
      connection: this.#connection,
      prefix: this.#prefix,
      lastEventId: last?.[0] ?? '0-0',
    });
    e.on('error', () => undefined);
    // what rides here is the node's word on its BullMQ job only: its output and report come over the node routes
    e.on('stalled', ({ jobId }) => this.#onJob(jobId, 'stalled'));
    e.on('completed', ({ jobId }) => {
      this.#onJob(jobId, 'completed');
      // the node has let go of that entry: a waiting attempt is offered now, not at the next round (by
      // this coordinator's own count of what each node holds, so a forged event offers nothing more)
      if (this.#pending.length > 0) void this.#dispatch();
    });
    e.on('failed', ({ jobId, failedReason }) => this.#onJob(jobId, 'failed', failedReason));
    e.on('removed', ({ jobId }) => this.#onJob(jobId, 'removed'));
    await e.waitUntilReady();
    return e;
  }

  /**
   * What became of the BullMQ job of an attempt's current offer (a job of an earlier offer is no
   * one's). Once its node claimed it, BullMQ's word is a hint only: anyone who can write the Redis
   * can delete a lock (a "stall") or end a job, so a claimed attempt is lost only when its node has
   * gone unheard on the node routes past its stall window (#pollAll), and given back only by the
   * node itself (`release`).
   */
  #onJob(jobId: string, what: 'stalled' | 'completed' | 'failed' | 'removed', reason = ''): void {
    const work = this.#byJob.get(jobId);
    if (!work || work.isSettled) return;
    const node = work.offeredTo ?? 'unknown';
    const heard = this.exchange.lastHeard(work.key);
    if (heard !== null) {
      const said = `${work.key}\0${jobId}\0${what}`;
      if (!this.#hinted.has(said)) {
        this.#hinted.add(said);
        this.#say(
          `${work.key}: BullMQ says its entry on node ${node}'s queue ${what === 'stalled' ? 'stalled' : `was ${what}`}${reason ? ` (${reason})` : ''}, but node ${node} claimed it and was heard ${Math.round((Date.now() - heard.at) / 1000)} s ago: it stays node ${node}'s until that node gives it back, reports, or goes unheard for ${Math.round(heard.stallMs / 1000)} s`,
        );
      }
      return;
    }
    if (what === 'stalled') this.#stalled(work);
    else if (what === 'failed') this.#offerAgain(work, `node ${node} failed it: ${reason}`);
    else if (what === 'removed') this.#offerAgain(work, `its entry on node ${node}'s queue was removed outside gaffer`);
    // its report comes over the node routes before its job ends: a job ended without one was not this node's to end
    else this.#offerAgain(work, `node ${node} ended its job without reporting the attempt`);
  }

  /**
   * Every offered work's job read again: an end or a stall whose event was lost (a reconnect) is
   * found within {@link POLL_MS}; an offer its node has not claimed in {@link OFFER_CLAIM_MS}, or
   * whose node is no longer live and serving, goes to another node.
   */
  async #pollAll(): Promise<void> {
    for (const work of [...this.#works.values()]) {
      const { jobId, offeredTo } = work;
      if (jobId === null || offeredTo === null || work.isSettled) continue;
      // claimed: lost only on the coordinator's own evidence, its node unheard past its stall window (a deleted lock, a
      // forged stall or a node record gone from the Redis say nothing of it)
      const heard = this.exchange.lastHeard(work.key);
      if (heard !== null && Date.now() - heard.at > heard.stallMs) {
        this.#say(
          `${work.key}: node ${offeredTo} was last heard ${Math.round((Date.now() - heard.at) / 1000)} s ago (its stall window ${Math.round(heard.stallMs / 1000)} s): lost`,
        );
        this.#stalled(work);
        continue;
      }
      if (!this.exchange.isClaimed(work.key)) {
        const record = this.#records.find((n) => n.name === offeredTo);
        if (record === undefined || (record.cannot ?? null) !== null) {
          this.#offerAgain(
            work,
            `node ${offeredTo} is not live and serving (${record?.cannot ?? 'no record'}) and did not claim it`,
            { stall: true },
          );
          continue;
        }
        if (Date.now() - work.offeredAt > OFFER_CLAIM_MS) {
          this.#offerAgain(work, `node ${offeredTo} did not claim it within ${OFFER_CLAIM_MS / 1000} s`);
          continue;
        }
      }
      try {
        const job = await Job.fromId(this.#queue(offeredTo), jobId);
        if (work.jobId !== jobId) continue;
        if (!job) {
          this.#onJob(jobId, 'removed');
          continue;
        }
        const state = await job.getState();
        // claimed, then back on the queue: BullMQ's stall check moved it (its event lost to a reconnect)
        if (state === 'waiting' && this.exchange.isClaimed(work.key)) this.#onJob(jobId, 'stalled');
        else if (state === 'completed') this.#onJob(jobId, 'completed');
        else if (state === 'failed') this.#onJob(jobId, 'failed', job.failedReason);
      } catch {
        // Redis away for now: the next poll looks again
      }
    }
  }
}

function lostAgain(stalls: number): RunnerReport {
  const error = `its node stopped answering again after the work had been handed over once (${stalls} stalls), and no node failed it within ${SECOND_STALL_MS / 1000} s`;
  return blankReport({ status: 'error', outcome: 'expected_error', stopReason: 'node_lost_again', error });
}

/** Appends a remote worker's output to the coordinator's log of it (`gaffer logs`), up to {@link LOG_CAP_BYTES}. */
function appendLog(file: string, lines: readonly string[], logged: { bytes: number }): void {
  if (logged.bytes >= LOG_CAP_BYTES || lines.length === 0) return;
  try {
    if (logged.bytes === 0) {
      mkdirSync(dirname(file), { recursive: true });
      logged.bytes = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    }
    const text = `${lines.join('\n')}\n`;
    appendFileSync(file, text, { mode: 0o600 });
    logged.bytes += Buffer.byteLength(text);
  } catch {
    // a log that cannot be written loses output, never the attempt
  }
}
