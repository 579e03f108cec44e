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
import { readNodeRecords } from './node-record.js';
import { viewOf, type ClusterView } from './cluster-view.js';
import {
  advertisedKey,
  CANCEL_TTL_S,
  cancelChannel,
  cancelKey,
  connectionOf,
  DEFAULT_QUEUE_PREFIX,
  describeQueue,
  entryKey,
  lockKey,
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
  /** The credential every node sends (`GAFFER_NODE_TOKEN`, else the data dir's `node-secret`). */
  nodeToken: string;
  /** Attempts of a runner running at once across the cluster (the runner's queue's global concurrency); a runner not named has no cluster-wide limit. */
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
/** How long the operator's view waits for the Redis before it says the Redis does not answer, ms. */
const VIEW_TIMEOUT_MS = 2_000;

/**
 * The remote Executor (issue 17, spec 09): each attempt becomes a BullMQ job on its runner's queue
 * (`runner-<key>`, a global concurrency per runner across the cluster), taken by a `gaffer node`
 * with the runner and a free slot. The node gets the workspace as a git bundle of its base (HEAD
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
    this.exchange = new AttemptExchange(join(dataDir, 'cluster'), settings.nodeToken, {
      vouch: (runner, key, lock) => this.#vouch(runner, key, lock),
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
    for (const runner of new Set([...existing, ...Object.keys(this.#settings.limits ?? {})])) {
      const queue = this.#queue(runner);
      const limit = this.#settings.limits?.[runner];
      if (limit !== undefined) await queue.setGlobalConcurrency(limit);
      else await queue.removeGlobalConcurrency();
      if (!existing.has(runner)) continue;
      await queue.drain(true);
      for (const job of await queue.getActive()) if (job.id) await this.#publishCancel(job.id);
    }
    await this.#readOffers();
    this.#poll = setInterval(
      () => void this.#pollAll().then(() => Promise.all([this.#tellAddress(), this.#readOffers()])),
      POLL_MS,
    );
    this.#poll.unref();
  }

  /** Whether a live node that can serve offers the runner (its record, read every {@link POLL_MS}). */
  offeredByNodes(runner: string): boolean {
    return this.#offered.has(runner);
  }

  async #readOffers(): Promise<void> {
    if (this.#redis === null) return;
    try {
      const serving = (await readNodeRecords(this.#redis, this.#prefix)).filter((n) => (n.cannot ?? null) === null);
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
          const runners = new Set([...this.#queues.keys(), ...nodes.flatMap((n) => n.runners)]);
          const queues = await Promise.all(
            [...runners].sort().map(async (runner) => {
              const queue = this.#queue(runner);
              const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active');
              const waiting = await queue.getJobs(['waiting', 'prioritized'], 0, 199);
              const oldest = waiting.reduce((m, j) => Math.min(m, j.timestamp), Infinity);
              return {
                runner,
                waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.delayed ?? 0),
                running: counts.active ?? 0,
                oldest_waiting_ms: Number.isFinite(oldest) ? oldest : null,
              };
            }),
          );
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
    // Redis holds an opaque reference: the attempt goes, once, to the node that takes it and claims it
    const entry: QueueEntry = {
      v: 2,
      id: key,
      key,
      prefix: this.#prefix,
      runner: runner.key,
      coordinator: this.#url,
      expires: Date.now() + (this.#settings.entryTtlS ?? DEFAULT_ENTRY_TTL_S) * 1000,
      once: randomBytes(32).toString('base64url'),
    };
    this.exchange.open(key, repo, base, { runner: runner.key, once: entry.once, expires: entry.expires, attempt });
    this.#works.set(key, work);
    // uncommitted work exported: a commit of this moment, which a node fetches from here; its bundle is made while the attempt travels
    if (base !== repo.head) this.exchange.prepare(key);
    try {
      // listening before the add: no event of this job can come before it is heard
      await this.#eventsOf(runner.key);
      await this.#queue(runner.key).add(runner.key, signEntry(entry, this.#settings.nodeToken), {
        jobId: key,
        // a node that fails to claim, fetch or report it gives it back for another node, a bounded number of times
        attempts: NODE_TRIES,
        backoff: { type: 'exponential', delay: 1_000 },
        removeOnComplete: { age: 3_600 },
        removeOnFail: { age: 86_400 },
      });
      work.queued = true;
    } catch (err) {
      await this.#finish(work);
      return launchFailed(
        `the queue at ${describeQueue(this.#settings.queue)} did not take the attempt: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    return { work };
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
              message: `node ${node} stopped answering: BullMQ gives its work to another node`,
            });
            end(
              blankReport({
                status: 'error',
                outcome: 'expected_error',
                stopReason: NODE_LOST,
                error: `node ${node} stopped answering mid-attempt (its BullMQ lock expired): the work was handed to another node as a new attempt`,
              }),
            );
            return;
          }
          opts.onNode?.({
            event: 'requeued',
            node: lastNode,
            message: `node ${lastNode ?? 'unknown'} stopped answering too: BullMQ ends the work`,
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
    if (taken()) return;
    giveUp(report);
    try {
      const job = await withTimeout(Job.fromId(this.#queue(work.runner), work.key), VIEW_TIMEOUT_MS);
      if (job) await withTimeout(job.remove(), VIEW_TIMEOUT_MS);
    } catch {
      // a node took it meanwhile (its lock stops the removal): it runs; else Redis is away and the entry expires unclaimed
    }
    if (taken()) {
      giveUp(null);
      return;
    }
    end(report);
  }

  /** Cancels the work: gone from the queue when no node has it yet, else the node is told (pub/sub, and a key a late taker reads). */
  async #cancel(work: RemoteWork): Promise<void> {
    try {
      const job = await Job.fromId(this.#queue(work.runner), work.key);
      const state = job ? await job.getState() : 'unknown';
      if (job && (state === 'waiting' || state === 'delayed' || state === 'prioritized')) {
        try {
          await job.remove();
          work.settle({ kind: 'gone' });
          return;
        } catch {
          // a node took it meanwhile: tell it
        }
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

  /** Whether `lock` is the BullMQ lock an entry is held with now, how often BullMQ found it stalled, and how often a node gave it back. */
  async #vouch(runner: string, key: string, lock: string): Promise<{ holds: boolean; stalls: number; tries: number }> {
    const redis = this.#redis;
    if (redis === null) return { holds: false, stalls: 0, tries: 0 };
    const [held, counts] = await Promise.all([
      redis.get(lockKey(this.#prefix, runner, key)),
      redis.hmget(entryKey(this.#prefix, runner, key), 'stc', 'atm'),
    ]);
    return { holds: held !== null && held === lock, stalls: Number(counts[0] ?? 0), tries: Number(counts[1] ?? 0) };
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
    this.#works.delete(work.key);
    this.exchange.close(work.key);
    const baseInUse = [...this.#works.values()].some(
      (w) => w.base === work.base && w.repo.commonDir === work.repo.commonDir,
    );
    if (!baseInUse) await serialized(work.repo, () => dropRefs(work.repo, [baseRef(work.base)])).catch(() => undefined);
  }

  #queue(runner: string): Queue {
    let queue = this.#queues.get(runner);
    if (!queue) {
      queue = new Queue(queueName(runner), { connection: this.#connection, prefix: this.#prefix });
      queue.on('error', () => undefined);
      this.#queues.set(runner, queue);
      this.#checkStalls(runner);
    }
    return queue;
  }

  /**
   * BullMQ finds a stalled entry only in a worker's periodic check, and nodes are the only workers:
   * with its node dead (SIGKILL) or stopped (SIGSTOP) and no other node on the runner, nobody looked,
   * and a lost node went unnoticed. The coordinator looks too, every {@link STALL_CHECK_MS}: an entry
   * is stalled only once its lock expired (`--stall-s` after the node last renewed it), so looking
   * often hands nothing over early; a lost node is noticed within its stall window and a check.
   */
  #checkStalls(runner: string): void {
    if (this.#closed || this.#stallCheckers.has(runner)) return;
    const checker = new Worker(
      queueName(runner),
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
    this.#stallCheckers.set(runner, checker);
    void checker.startStalledCheckTimer().catch(() => undefined);
  }

  /**
   * The events of a runner's queue, heard from before its first attempt is added. They are read
   * from the stream's last entry as it stands now: BullMQ's default (`$`) starts at its first
   * XREAD, which comes some round trips after it is ready, and a node's `taken` said meanwhile was
   * lost (seen under load).
   */
  #eventsOf(runner: string): Promise<QueueEvents> {
    let events = this.#events.get(runner);
    if (!events) {
      events = this.#listen(runner);
      // a failure (Redis away) is not kept: the next attempt tries again
      events.catch(() => this.#events.delete(runner));
      this.#events.set(runner, events);
    }
    return events;
  }

  async #listen(runner: string): Promise<QueueEvents> {
    const redis = this.#redis;
    if (redis === null) throw new Error('the cluster executor is not open');
    const [last] = await redis.xrevrange(`${this.#prefix}:${queueName(runner)}:events`, '+', '-', 'COUNT', 1);
    const e = new QueueEvents(queueName(runner), {
      connection: this.#connection,
      prefix: this.#prefix,
      lastEventId: last?.[0] ?? '0-0',
    });
    e.on('error', () => undefined);
    e.on('progress', ({ jobId, data }) => {
      const parsed = wireProgressSchema.safeParse(typeof data === 'string' ? safeJson(data) : data);
      if (parsed.success) this.#works.get(jobId)?.onProgress(parsed.data);
    });
    e.on('stalled', ({ jobId }) => void this.#readStalls(runner, jobId));
    e.on('completed', ({ jobId, returnvalue }) =>
      this.#works.get(jobId)?.settle({ kind: 'completed', value: returnvalue }),
    );
    e.on('failed', ({ jobId, failedReason }) =>
      this.#works.get(jobId)?.settle({ kind: 'failed', reason: failedReason }),
    );
    e.on('removed', ({ jobId }) => this.#works.get(jobId)?.settle({ kind: 'gone' }));
    await e.waitUntilReady();
    return e;
  }

  /** A stall event: BullMQ's count is read, so an event and a poll that both saw it count once. */
  async #readStalls(runner: string, key: string): Promise<void> {
    const work = this.#works.get(key);
    if (!work) return;
    const job = await Job.fromId(this.#queue(runner), key).catch(() => undefined);
    work.noteStalls(job?.stalledCounter ?? work.stalls + 1);
  }

  /** Every live work's job read again: an end or a stall whose event was lost (a reconnect) is found within {@link POLL_MS}. */
  async #pollAll(): Promise<void> {
    for (const work of [...this.#works.values()]) {
      if (!work.queued || work.isSettled) continue;
      try {
        const job = await Job.fromId(this.#queue(work.runner), work.key);
        if (!job) {
          work.settle({ kind: 'gone' });
          continue;
        }
        work.noteStalls(job.stalledCounter);
        const state = await job.getState();
        // the job was read before its state: one that ended in between was read without its answer or reason, so it is read again
        const ended =
          state === 'completed' || state === 'failed'
            ? await Job.fromId(this.#queue(work.runner), work.key)
            : undefined;
        if (state === 'completed')
          work.settle(ended ? { kind: 'completed', value: ended.returnvalue } : { kind: 'gone' });
        else if (state === 'failed')
          work.settle(ended ? { kind: 'failed', reason: ended.failedReason } : { kind: 'gone' });
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
