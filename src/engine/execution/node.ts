import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { RunnerReport } from '../../domain/runner-report.js';
import {
  addNodeWorktree,
  bundleNodeWork,
  commitNodeWork,
  fetchBase,
  fetchRemoteRef,
  hasCommit,
  openCache,
  pushBranch,
  removeNodeWorktree,
} from '../../evidence/cluster-git.js';
import type { Runner } from '../../runners/contract.js';
import { blankReport } from '../../runners/report.js';
import { GafferError } from '../../domain/errors.js';
import { credentialDigest } from '../../config/node-credentials.js';
import { beatEveryMs, dropNodeRecord, writeNodeRecord, type NodeRecord } from './node-record.js';
import { checkCoordinator, readAdvertised } from './node-check.js';
import { prepareNodeDeps } from './node-deps.js';
import {
  cancelChannel,
  cancelKey,
  connectionOf,
  describeQueue,
  queueName,
  safeJson,
  TICKET_HEADER,
  UPLOAD_HEADER,
  verifyEntry,
  wireAttemptSchema,
  withTimeout,
  type QueueEntry,
  type Release,
  type WireAttempt,
  type WireProgress,
  type WireResult,
} from './wire.js';

/** How a `gaffer node` runs (spec 09). */
export interface NodeOptions {
  /** The Redis URL the coordinator's queues are on. */
  queue: string;
  /** The runners this node takes attempts for, by key (a queue each). */
  runners: ReadonlyMap<string, Runner>;
  /** Attempts of each runner this node runs at once (its BullMQ worker's concurrency). */
  slots: number;
  /** Its caches, worktrees, logs and bundles. */
  workDir: string;
  /** This node's own credential (`<name>.<secret>`, issued by `gaffer nodes issue NAME` on the coordinator). */
  token: string;
  /** The coordinator's queue namespace (`--queue-prefix`, BullMQ's prefix). */
  prefix: string;
  /** Its name: the one its credential names. */
  name: string;
  /** How long this node may go silent before its work is given to another node, ms (BullMQ's lock duration). */
  stallMs: number;
  /** The coordinator's address when the one in each attempt is not reachable from here (a tunnel, a proxy). */
  coordinator?: string | null;
  /** The node's `worktrees.install["*"]`: how it installs an attempt's dependencies (null: by lockfile, `npm ci` …). */
  install?: string | null;
  /** `worktrees.deps`: installed dependencies hard-linked into each worktree (`link`), or copied. */
  deps?: 'link' | 'copy';
  /** One line for a person (the node's stderr). */
  say(line: string): void;
}

/** How often a running attempt's cancel key is looked at, besides the pub/sub message (lost to a reconnect), ms. */
const CANCEL_LOOK_MS = 1_000;
/** Output updates at most this often per attempt, ms (the coordinator coalesces to its own 250 ms). */
const OUTPUT_EVERY_MS = 200;
const OUTPUT_MAX_LINES = 200;
const CONNECT_TIMEOUT_MS = 10_000;
/** How often a node that cannot serve its coordinator checks again, ms. */
const RECHECK_MS = 5_000;
/** How long an entry a node that cannot serve took by mistake (a fetch in flight) waits before it is handed out again, ms. */
const GIVE_BACK_MS = 1_000;
/** Where a node keeps the tip it last fetched of a job's remote repository (its objects stay in the cache). */
const REMOTE_TIP = 'refs/gaffer/remote-tip';

/**
 * A worker node (spec 09): takes attempts for its runners from their BullMQ queues, gets each
 * attempt's workspace as a git bundle from the coordinator (a bare cache per repository under
 * `--work-dir`; a base it has already is not fetched again), runs the runner in a worktree on
 * `gaffer/<job>/<worker>`, commits what it left, sends the commit back as a bundle, and reports
 * the runner's report — which the coordinator treats as a claim. Output and detected states go
 * back as BullMQ progress; a cancel arrives by pub/sub (and a key, for an attempt taken after it).
 */
export class WorkerNode {
  readonly name: string;
  readonly #opts: NodeOptions;
  readonly #workers: Worker[] = [];
  readonly #running = new Map<string, AbortController>();
  /** The attempts it runs, for its record: runner and when taken. */
  readonly #taken = new Map<string, { runner: string; since: string }>();
  readonly #startedAt = new Date().toISOString();
  #beat: NodeJS.Timeout | null = null;
  /** Attempts whose BullMQ lock this node lost (a partition): their work is another node's now; nothing of it is sent. */
  readonly #lockLost = new Set<string>();
  readonly #lanes = new Map<string, Promise<unknown>>();
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  #cancelLook: NodeJS.Timeout | null = null;
  /** Why this node cannot serve its coordinator now (it takes nothing meanwhile); null while it can. */
  #cannot: string | null = 'not checked yet';
  /** The check under way: one at a time. */
  #checking: Promise<void> | null = null;
  /** Its queue workers have run (after the first check that passed): later checks resume them. */
  #started = false;
  #closed = false;
  #wake: (() => void) | null = null;
  /** The key the coordinator signs this node's entries with (its credential's digest). */
  readonly #key: string;

  private constructor(opts: NodeOptions) {
    this.#opts = opts;
    this.name = opts.name;
    this.#key = credentialDigest(opts.token);
    const options = { maxRetriesPerRequest: null, lazyConnect: true } as const;
    this.#redis = new Redis(opts.queue, options);
    this.#subscriber = new Redis(opts.queue, options);
    for (const r of [this.#redis, this.#subscriber]) r.on('error', () => undefined);
  }

  /** Connects (refusing, named, when Redis does not answer), listens for cancels, and starts taking attempts. */
  static async start(opts: NodeOptions): Promise<WorkerNode> {
    const node = new WorkerNode(opts);
    try {
      await withTimeout(Promise.all([node.#redis.connect(), node.#subscriber.connect()]), CONNECT_TIMEOUT_MS);
    } catch (err) {
      node.#redis.disconnect();
      node.#subscriber.disconnect();
      throw new GafferError(
        'invalid_request',
        `the queue at ${describeQueue(opts.queue)} does not answer: ${err instanceof Error ? err.message : String(err)} — is redis-server running there? fix --queue`,
        'queue',
      );
    }
    await node.#start();
    return node;
  }

  async #start(): Promise<void> {
    const opts = this.#opts;
    const connection = connectionOf(opts.queue);
    this.#subscriber.on('message', (_channel: string, key: string) =>
      this.#running.get(key)?.abort(new Error('cancelled by the coordinator')),
    );
    await this.#subscriber.subscribe(cancelChannel(opts.prefix));
    this.#cancelLook = setInterval(() => void this.#lookForCancels(), CANCEL_LOOK_MS);
    this.#cancelLook.unref();
    for (const w of ['repos', 'worktrees', 'jobs', 'tmp', 'deps'])
      mkdirSync(join(opts.workDir, w), { recursive: true, mode: 0o700 });
    // one queue, this node's own: the coordinator puts there only what it offers this node, at most `slots` per runner
    {
      const worker = new Worker<unknown, { v: 1 }>(
        queueName(this.name),
        (job, token, signal) => this.#process(job, token, signal),
        {
          connection,
          prefix: opts.prefix,
          name: this.name,
          concurrency: opts.slots * opts.runners.size,
          lockDuration: opts.stallMs,
          stalledInterval: Math.max(1_000, Math.round(opts.stallMs / 2)),
          maxStalledCount: 1,
          // nothing is taken before the node has checked its token and its path to the coordinator
          autorun: false,
        },
      );
      worker.on('error', (err) => opts.say(`queue ${queueName(this.name)}: ${err.message}`));
      // the lock is BullMQ's, on the Redis: the coordinator's ticket says whether the attempt is still this node's
      worker.on('lockRenewalFailed', (ids: string[]) =>
        opts.say(
          `the BullMQ lock of ${ids.join(', ')} could not be renewed: the coordinator decides whether it is still this node's`,
        ),
      );
      this.#workers.push(worker);
    }
    await Promise.all(this.#workers.map((w) => w.waitUntilReady()));
    await this.#announce();
    this.#beat = setInterval(() => void this.#announce(), beatEveryMs(opts.stallMs));
    this.#beat.unref();
    void this.#serve(null);
  }

  /**
   * This node's record on the Redis, renewed on a timer, on each attempt taken or ended and when it
   * starts or stops being able to serve; it expires after the stall window. The coordinator reads
   * it for `gaffer nodes` and, from the nodes that can serve, which runners its cluster offers.
   */
  async #announce(): Promise<void> {
    const record: NodeRecord = {
      name: this.name,
      host: os.hostname(),
      pid: process.pid,
      runners: [...this.#opts.runners.keys()],
      slots: this.#opts.slots,
      stall_s: Math.round(this.#opts.stallMs / 1000),
      running: [...this.#taken].map(([key, t]) => ({ key, ...t })),
      started: this.#startedAt,
      cannot: this.#cannot,
      beat: new Date().toISOString(),
    };
    await writeNodeRecord(this.#redis, this.#opts.prefix, record).catch(() => undefined);
  }

  /**
   * Takes attempts once this node can serve its coordinator — its path to it and its token checked
   * (node-check.ts) — and until then says why, checking again every {@link RECHECK_MS}. After a
   * failed call (`failed`: why), it first stops taking attempts (the running ones go on) and waits.
   */
  #serve(failed: { why: string; url: string } | null): Promise<void> {
    if (failed !== null) {
      if (this.#cannot === null) this.#opts.say(`stopped taking attempts: ${failed.why}; checking the coordinator`);
      this.#cannot = failed.why;
      for (const w of this.#workers) void w.pause(true).catch(() => undefined);
      void this.#announce();
    }
    this.#checking ??= this.#checkUntilAble(failed).finally(() => (this.#checking = null));
    return this.#checking;
  }

  async #checkUntilAble(failed: { why: string; url: string } | null): Promise<void> {
    let said: string | null = null;
    let wait = failed !== null;
    while (!this.#closed) {
      if (wait)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RECHECK_MS);
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      wait = true;
      if (this.#closed) return;
      const { url, why } = await this.#checkOnce(failed?.url ?? null);
      if (this.#closed) return;
      if (why === null) {
        this.#opts.say(`checked the coordinator at ${url}: it accepts this node's credential; taking attempts`);
        this.#cannot = null;
        await this.#announce();
        for (const w of this.#workers) {
          if (this.#started) await w.resume();
          else void w.run().catch((err: unknown) => this.#opts.say(`queue ${w.name}: ${String(err)}`));
        }
        this.#started = true;
        return;
      }
      this.#cannot = why;
      if (why !== said) {
        this.#opts.say(`cannot take attempts: ${why} (checking again every ${RECHECK_MS / 1000} s)`);
        await this.#announce();
      }
      said = why;
    }
  }

  /** One check of the path to the coordinator and the token; `fallback` is an address to try when the coordinator's is not on the Redis (a restart without its data). */
  async #checkOnce(fallback: string | null): Promise<{ url: string; why: string | null }> {
    const advertised = await readAdvertised(this.#redis, this.#opts.prefix);
    return checkCoordinator({
      explicit: this.#opts.coordinator ?? null,
      advertised: advertised ?? (fallback ? { url: fallback, host: '' } : null),
      token: this.#opts.token,
      prefix: this.#opts.prefix,
      queue: describeQueue(this.#opts.queue),
    });
  }

  /** Stops taking attempts, lets the running ones finish, and disconnects. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await Promise.all(this.#workers.map((w) => w.close()));
    if (this.#cancelLook) clearInterval(this.#cancelLook);
    if (this.#beat) clearInterval(this.#beat);
    await dropNodeRecord(this.#redis, this.#opts.prefix, this.name).catch(() => undefined);
    await Promise.all([this.#redis.quit().catch(() => undefined), this.#subscriber.quit().catch(() => undefined)]);
  }

  /**
   * One attempt, start to end: its report goes to the coordinator over the node routes (with the
   * claim's ticket), never on the Redis. A failure of the node's own (git, the coordinator away)
   * fails the BullMQ job, and the coordinator offers the attempt to another node.
   */
  async #process(
    job: Job<unknown, { v: 1 }>,
    lockToken: string | undefined,
    bullSignal: AbortSignal | undefined,
  ): Promise<{ v: 1 }> {
    const refuse = (why: string): never => {
      const line = `refused queue entry ${job.id ?? '?'}: ${why}; nothing ran`;
      this.#opts.say(line);
      throw new UnrecoverableError(`node ${this.name} ${line}`);
    };
    // taken while this node cannot serve (a fetch in flight as it stopped): back to the queue
    const giveBack = async (): Promise<never> => {
      await job.moveToDelayed(Date.now() + GIVE_BACK_MS, lockToken);
      throw new DelayedError();
    };
    if (this.#cannot !== null) return giveBack();
    const verified = verifyEntry(job.data, this.#key, {
      id: job.id,
      prefix: this.#opts.prefix,
      node: this.name,
      now: Date.now(),
    });
    if ('refused' in verified) {
      // an entry signed under another key: this node's credential may be the stale one (reissued on the coordinator)
      if (verified.refused.startsWith('its signature')) {
        const { url, why } = await this.#checkOnce(null);
        if (why !== null) {
          void this.#serve({ why, url });
          return giveBack();
        }
      }
      return refuse(verified.refused);
    }
    const claimed = await this.#claim(verified.entry);
    if ('unable' in claimed) {
      void this.#serve({ why: claimed.unable, url: claimed.url });
      throw new Error(
        `node ${this.name} could not claim ${verified.entry.key}: ${claimed.unable}; the coordinator offers it to another node`,
      );
    }
    if ('refused' in claimed) return refuse(claimed.refused);
    const a = claimed.attempt;
    const progress = (p: WireProgress) => this.#post(a, 'progress', p).catch(() => undefined);
    const stop = new AbortController();
    const onBull = () => stop.abort(bullSignal?.reason);
    bullSignal?.addEventListener('abort', onBull, { once: true });
    this.#running.set(a.key, stop);
    this.#taken.set(a.key, { runner: a.runner, since: new Date().toISOString() });
    void this.#announce();
    // the coordinator's evidence that this node still runs the attempt: its BullMQ lock is anyone's to delete on the Redis
    const beat = setInterval(
      () =>
        void this.#post(a, 'beat', {}).catch((err: unknown) => {
          if (!(err instanceof UnrecoverableError) || stop.signal.aborted) return;
          this.#opts.say(
            `${a.key}: the coordinator no longer takes this node's word on it (${err.message}): stopping it`,
          );
          stop.abort(err);
        }),
      beatEveryMs(this.#opts.stallMs),
    );
    try {
      const result = await this.#runAttempt(a, stop, progress);
      try {
        await this.#post(a, 'report', result);
      } catch (err) {
        throw this.#callFailed(a, 'report the attempt', err);
      }
      return { v: 1 };
    } catch (err) {
      // given back at once when the coordinator can be told (else it finds this node silent within its stall window)
      if (!(err instanceof UnrecoverableError))
        await this.#post(a, 'release', { why: err instanceof Error ? err.message : String(err) }).catch(
          () => undefined,
        );
      else this.#opts.say(`${a.key}: ${err.message}`);
      throw err;
    } finally {
      clearInterval(beat);
      this.#running.delete(a.key);
      this.#taken.delete(a.key);
      void this.#announce();
      bullSignal?.removeEventListener('abort', onBull);
    }
  }

  /** Runs a claimed attempt in a worktree of its own and sends its commit; the report to give the coordinator. */
  async #runAttempt(
    a: WireAttempt,
    stop: AbortController,
    progress: (p: WireProgress) => Promise<unknown>,
  ): Promise<WireResult> {
    const answer = (
      report: RunnerReport,
      commit: string | null = null,
      sent: Pick<WireResult, 'upload' | 'pushed' | 'pushRefused'> = { upload: null },
    ): WireResult => ({ v: 1, node: this.name, report, commit, ...sent });
    {
      if ((await this.#redis.exists(cancelKey(this.#opts.prefix, a.key))) === 1)
        return answer(
          blankReport({ status: 'cancelled', outcome: 'cancelled', stopReason: 'cancelled', isCancelled: true }),
        );
      const runner = this.#opts.runners.get(a.runner);
      if (!runner)
        return answer(
          blankReport({
            status: 'refused',
            outcome: 'expected_error',
            stopReason: 'refused',
            error: `runner ${a.runner} is not on node ${this.name}`,
          }),
        );
      this.#opts.say(`${a.key}: ${a.runner} worker starting`);
      const cache = join(this.#opts.workDir, 'repos', `${a.repo}.git`);
      const dir = join(this.#opts.workDir, 'worktrees', a.key);
      await this.#lane(cache, async () => {
        await openCache(cache);
        // a job's remote repository first (spec 09); the coordinator's bundle holds what the remote does not (a fix round's base)
        if (a.remote && !(await hasCommit(cache, a.base))) {
          const fetched = await fetchRemoteRef(cache, a.remote.url, a.remote.ref, REMOTE_TIP);
          if ('refused' in fetched)
            this.#opts.say(
              `${a.key}: ${a.remote.ref} of ${a.remote.url} could not be fetched (${fetched.refused}): the base comes from the coordinator`,
            );
        }
        if (!(await hasCommit(cache, a.base))) await this.#fetchBase(a, cache);
        await addNodeWorktree(cache, dir, a.branch, a.base);
      });
      try {
        const workspace = a.prefix === '' ? dir : join(dir, a.prefix);
        mkdirSync(workspace, { recursive: true });
        const logDir = join(this.#opts.workDir, 'jobs', a.input.jobId);
        const deps = await prepareNodeDeps({
          workspace,
          dirs: a.deps ?? [],
          cacheRoot: join(this.#opts.workDir, 'deps'),
          install: this.#opts.install ?? null,
          mode: this.#opts.deps ?? 'link',
          logFile: (d) => join(logDir, `${a.input.workerName}.install-${d}.log`),
          say: (line) => this.#opts.say(`${a.key}: ${line}`),
        });
        for (const note of deps.notes) this.#opts.say(`${a.key}: ${note}`);
        if (deps.notes.length > 0)
          await progress({ type: 'output', lines: deps.notes.map((n) => `gaffer node ${this.name}: ${n}`) });
        if (deps.failure !== null)
          return answer(
            blankReport({
              status: 'error',
              outcome: 'expected_error',
              stopReason: 'setup_failed',
              error: `on node ${this.name}: ${deps.failure}`,
            }),
          );
        const output = new OutputBatches((lines) => progress({ type: 'output', lines }));
        let report: RunnerReport;
        try {
          report = await runner.run({
            ...a.input,
            workspace,
            // the node's own environment: nothing of the coordinator's crosses the wire
            env: process.env,
            logFile: join(logDir, `${a.input.workerName}.log`),
            instructionFile: join(logDir, `${a.input.workerName}.instruction.txt`),
            signal: stop.signal,
            onOutput: (lines) => output.push(lines),
            onState: (detection) => void progress({ type: 'state', detection }),
          });
        } catch (err) {
          report = blankReport({
            status: 'error',
            outcome: 'panic',
            stopReason: 'runner_error',
            error: `runner failed: ${err instanceof Error ? err.message : String(err)}`,
          });
        }
        await output.close();
        // what the node put there is not the work
        for (const p of deps.placed) rmSync(join(workspace, p), { recursive: true, force: true });
        const tip = await commitNodeWork(
          dir,
          `gaffer: job ${a.input.jobId}, ${a.input.workerName} on node ${this.name}`,
        );
        this.#opts.say(`${a.key}: ${report.status}${tip === a.base ? ', nothing changed' : ''}`);
        if (tip === a.base) return answer(report);
        let pushRefused: string | undefined;
        if (a.remote) {
          const refused = await pushBranch(cache, a.remote.url, a.branch);
          if (refused === null) return answer(report, tip, { upload: null, pushed: true });
          pushRefused =
            `the push to ${a.remote.url} failed, the commit went to the coordinator instead: ${refused}`.slice(
              0,
              1_000,
            );
          this.#opts.say(`${a.key}: ${pushRefused}`);
        }
        const upload = randomBytes(12).toString('base64url');
        const file = join(this.#opts.workDir, 'tmp', `${a.key}.${upload}.bundle`);
        try {
          await bundleNodeWork(cache, a.branch, a.base, file);
          await this.#sendResult(a, upload, file);
        } finally {
          rmSync(file, { force: true });
        }
        return answer(report, tip, { upload, ...(pushRefused !== undefined ? { pushRefused } : {}) });
      } finally {
        await this.#lane(cache, () => removeNodeWorktree(cache, dir, a.branch)).catch(() => undefined);
      }
    }
  }

  /** Posts the attempt's progress, heartbeat, release or report to the coordinator, with its ticket. */
  async #post(
    a: WireAttempt,
    what: 'progress' | 'beat' | 'release' | 'report',
    body: WireProgress | WireResult | Release | Record<string, never>,
  ): Promise<void> {
    const res = await fetch(`${this.#coordinatorOf(a)}/api/node/attempts/${encodeURIComponent(a.key)}/${what}`, {
      method: 'POST',
      headers: { ...this.#headers(a), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw this.#refusal(a, what, res.status, text);
  }

  /**
   * A call about an attempt the coordinator answered `status`: a 404 says its ticket no longer works
   * — the attempt was given to another node (this one was lost to it) or ended — and is final.
   */
  #refusal(a: WireAttempt, what: string, status: number, text: string): Error {
    if (status === 404)
      return new UnrecoverableError(
        `node ${this.name}'s ${what} of ${a.key} was refused: the attempt is no longer this node's (${text.slice(0, 200)})`,
      );
    return new Error(`HTTP ${status} ${text.slice(0, 300)}`);
  }

  /**
   * The attempt behind an entry this node took, from the coordinator that offered it to this node:
   * its credential and the entry's one-time value buy it once. A refusal (a replay, an attempt
   * that ended) is the reason nothing runs.
   */
  async #claim(
    entry: QueueEntry,
  ): Promise<{ attempt: WireAttempt } | { refused: string } | { unable: string; url: string }> {
    const base = (this.#opts.coordinator ?? entry.coordinator).replace(/\/+$/, '');
    let res: Response;
    try {
      res = await fetch(`${base}/api/node/attempts/${encodeURIComponent(entry.key)}/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#opts.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ once: entry.once, stall_s: Math.round(this.#opts.stallMs / 1000) }),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      return {
        unable: `the coordinator at ${base} could not be reached (${cause ?? (err instanceof Error ? err.message : String(err))})`,
        url: base,
      };
    }
    const text = await res.text();
    // this node's fault or the coordinator's, not the entry's: another node may serve it
    if (res.status === 401 || res.status >= 500)
      return {
        unable: `the coordinator at ${base} answered the claim with HTTP ${res.status} ${text.slice(0, 200)}`,
        url: base,
      };
    if (!res.ok) return { refused: `the coordinator refused the claim: HTTP ${res.status} ${text.slice(0, 300)}` };
    const parsed = wireAttemptSchema.safeParse((safeJson(text) as { attempt?: unknown } | null)?.attempt);
    if (!parsed.success || parsed.data.key !== entry.key || parsed.data.runner !== entry.runner)
      return { refused: "the coordinator's answer to the claim is not this entry's attempt" };
    return { attempt: parsed.data };
  }

  /** A call to the coordinator about an attempt failed: the node checks before it takes more, and the attempt goes back to the queue. */
  #callFailed(a: WireAttempt, what: string, err: unknown): Error {
    const why =
      err instanceof Error ? ((err.cause as { code?: string } | undefined)?.code ?? err.message) : String(err);
    // refused (404): the attempt is no longer this node's, which says nothing of its path to the coordinator
    if (err instanceof UnrecoverableError) return err;
    void this.#serve({ why: `${what} of ${a.key} failed: ${why}`, url: this.#coordinatorOf(a) });
    return new Error(
      `node ${this.name} could not ${what} of ${a.key} at ${this.#coordinatorOf(a)}: ${why}; the coordinator offers it to another node`,
    );
  }

  /** The attempt's base bundle from the coordinator, fetched into the cache. */
  async #fetchBase(a: WireAttempt, cache: string): Promise<void> {
    const file = join(this.#opts.workDir, 'tmp', `${a.key}.base.bundle`);
    try {
      let res: Response;
      try {
        res = await fetch(`${this.#coordinatorOf(a)}/api/node/attempts/${encodeURIComponent(a.key)}/base`, {
          headers: this.#headers(a),
        });
        if (!res.ok || res.body === null) throw this.#refusal(a, 'base', res.status, await res.text());
      } catch (err) {
        throw this.#callFailed(a, 'fetch the base', err);
      }
      await pipeline(
        Readable.fromWeb(res.body as Parameters<typeof Readable.fromWeb>[0]),
        createWriteStream(file, { mode: 0o600 }),
      );
      await fetchBase(cache, file, a.base);
    } finally {
      rmSync(file, { force: true });
    }
  }

  /** Sends the attempt's commit as a bundle to the coordinator. */
  async #sendResult(a: WireAttempt, upload: string, file: string): Promise<void> {
    let res: Response;
    try {
      res = await fetch(`${this.#coordinatorOf(a)}/api/node/attempts/${encodeURIComponent(a.key)}/result`, {
        method: 'PUT',
        headers: {
          ...this.#headers(a),
          [UPLOAD_HEADER]: upload,
          'content-type': 'application/octet-stream',
          'content-length': String(statSync(file).size),
        },
        body: Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>,
        duplex: 'half',
      } as RequestInit);
      if (!res.ok) throw this.#refusal(a, 'result', res.status, await res.text());
    } catch (err) {
      throw this.#callFailed(a, 'send the result', err);
    }
  }

  #headers(a: WireAttempt): Record<string, string> {
    return { authorization: `Bearer ${this.#opts.token}`, [TICKET_HEADER]: a.ticket };
  }

  #coordinatorOf(a: WireAttempt): string {
    return (this.#opts.coordinator ?? a.coordinator).replace(/\/+$/, '');
  }

  /** A cancel whose message this node missed (it reconnected meanwhile) is found by its key. */
  async #lookForCancels(): Promise<void> {
    for (const [key, stop] of this.#running) {
      if (stop.signal.aborted) continue;
      if ((await this.#redis.exists(cancelKey(this.#opts.prefix, key)).catch(() => 0)) === 1)
        stop.abort(new Error('cancelled by the coordinator'));
    }
  }

  /** Runs `fn` after every earlier call for the same cache: git calls on one repository take turns. */
  #lane<T>(cache: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#lanes.get(cache) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.#lanes.set(cache, tail);
    void tail.then(() => {
      if (this.#lanes.get(cache) === tail) this.#lanes.delete(cache);
    });
    return run;
  }
}

/** A worker's output lines as progress updates, at most one per {@link OUTPUT_EVERY_MS}; `close` sends the rest and waits for all. */
class OutputBatches {
  readonly #send: (lines: string[]) => Promise<unknown>;
  #lines: string[] = [];
  #timer: NodeJS.Timeout | null = null;
  #sent: Promise<unknown> = Promise.resolve();

  constructor(send: (lines: string[]) => Promise<unknown>) {
    this.#send = send;
  }

  push(lines: string[]): void {
    this.#lines.push(...lines);
    if (this.#lines.length > OUTPUT_MAX_LINES) this.#lines.splice(0, this.#lines.length - OUTPUT_MAX_LINES);
    this.#timer ??= setTimeout(() => this.#flush(), OUTPUT_EVERY_MS);
  }

  #flush(): void {
    this.#timer = null;
    if (this.#lines.length === 0) return;
    const lines = this.#lines;
    this.#lines = [];
    // one after the other: the coordinator hears them in order
    this.#sent = this.#sent.then(() => this.#send(lines));
  }

  async close(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#flush();
    await this.#sent;
  }
}
