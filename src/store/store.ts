import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JobStatus } from '../domain/status.js';
import { makePrivateDataDir, touchPrivateFile } from '../platform/files/data-dir.js';
import { isSameProcessAlive } from '../platform/process/process-identity.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import type { AskJson } from '../domain/approval.js';
import type { OutcomeCount } from '../domain/acceptance.js';
import type { OutcomeRecord } from '../domain/outcome.js';
import type { ObjectiveEvidence } from '../domain/objectives.js';
import type { BudgetUnit, SpendPoint } from '../domain/budget.js';
import type { Spend } from '../domain/spend.js';

import {
  decodeAsk,
  decodeAttempt,
  decodeEvent,
  decodeJob,
  decodeJobHolder,
  decodeJobProcess,
  decodeLock,
  decodeNumber,
  decodeNumberOrNull,
  decodeObjectiveEvidence,
  decodeOutcomeCount,
  decodeText,
  encodeAttemptPatch,
  encodeEventData,
  encodeJobPatch,
  encodeSpec,
} from './codecs.js';
import {
  EVENTS_KEPT,
  type AskRow,
  type AttemptPatch,
  type AttemptRow,
  type GafferStore,
  type JobEvent,
  type JobPatch,
  type JobProcessRow,
  type JobRow,
  type LockAttempt,
  type NewAttempt,
  type NewJob,
  type NewJobEvent,
  type ProviderSuspension,
  type RecentCounts,
  type UnattendedEndRow,
} from './ports.js';

export { EVENTS_KEPT } from './ports.js';
export type {
  AskRow,
  AttemptPatch,
  AttemptRow,
  AttemptState,
  GafferStore,
  JobEvent,
  JobPatch,
  JobProcessRow,
  JobRow,
  JobSnapshots,
  LockHolder,
  NewJobEvent,
} from './ports.js';

/** Nested paths collide (spec 01): `/a/b` and `/a/b/c` are one workspace for locking. */
export function workspacesCollide(a: string, b: string): boolean {
  const withSlash = (p: string) => (p.endsWith('/') ? p : `${p}/`);
  return a === b || withSlash(a).startsWith(withSlash(b)) || withSlash(b).startsWith(withSlash(a));
}

/** Commits after which a connection hands its checkpoints to a worker thread (see #committed). */
const CHECKPOINTER_AFTER = 200;

/** The spend column a budget unit sums (migration 9). */
const SPEND_COLUMNS: Record<BudgetUnit, string> = {
  usd: 'spend_usd',
  requests: 'spend_requests',
  tokens: 'spend_tokens',
  seconds: 'spend_seconds',
};
const LIVE = `('queued','awaiting_approval','running','verifying','cancelling')`;

/** The schema version this build migrates a store to: one per migration file (#migrate numbers them so); null when they cannot be listed. */
export function latestSchemaVersion(): number | null {
  try {
    return readdirSync(new URL('./migrations/', import.meta.url)).filter((f) => f.endsWith('.sql')).length;
  } catch {
    return null;
  }
}

/** Stores in group-commit mode: a process that exits mid-turn (`process.exit`) commits their open group first. */
const groupingStores = new Set<Store>();
process.on('exit', () => {
  for (const store of groupingStores) {
    try {
      if (store.db.open) store.flush();
    } catch {
      // the process is going: what the turn wrote is lost, as it would be had it crashed
    }
  }
});

/**
 * Commits the open groups of this process's stores but `except`: a transaction begun on this thread
 * while another connection of it holds a group open would wait on a lock only this thread can let
 * go (SQLite's busy wait blocks it: 15 s, then "database is locked").
 */
function flushGroupsBut(except: Store | null): void {
  for (const store of groupingStores) if (store !== except && store.db.open) store.flush();
}

/** The SQLite store (WAL): jobs, attempts, events, workspace locks, job processes. Safe to share between processes. */
export class Store implements GafferStore {
  readonly db: Database.Database;
  readonly path: string;
  #appendsSincePrune = 0;
  /** Prepared statements by SQL text: preparing costs more than running most of them. */
  readonly #statements = new Map<string, Database.Statement>();
  /** Commits made through this connection, until the checkpointer takes over counting them. */
  #commits = 0;
  #checkpointer: BackgroundCheckpointer | null = null;
  /** Group commit is on (`groupCommits`), and whether this turn's transaction is open. */
  #grouping = false;
  #groupOpen = false;
  /** The transactions, wrapped once (better-sqlite3 builds four wrapper functions per `transaction` call). */
  readonly #insertJob: Database.Transaction<(job: NewJob, vet?: () => void) => { job: JobRow; created: boolean }>;
  readonly #append: Database.Transaction<(jobId: string, sets: string, values: unknown[], rows: unknown[][]) => number>;
  readonly #lock: Database.Transaction<
    (workspace: string, jobId: string, pid: number, pidStart: number) => LockAttempt
  >;

  /**
   * `readOnly`: a look at an existing store that makes nothing, migrates nothing and writes nothing
   * (doctor, issue 12) — a missing file throws, and so does any write through it.
   */
  constructor(dataDir: string, opts: { readOnly?: boolean } = {}) {
    this.path = join(dataDir, 'gaffer.db');
    // another connection of this process must not wait on a group this thread holds open (nor miss its writes)
    flushGroupsBut(null);
    if (opts.readOnly === true) {
      this.db = new Database(this.path, { readonly: true, fileMustExist: true, timeout: 15_000 });
    } else {
      // the db holds every job's output and events: the data dir is 0700 and the db 0600 (issue 11)
      makePrivateDataDir(dataDir);
      touchPrivateFile(this.path);
      this.db = new Database(this.path);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('busy_timeout = 15000');
      this.db.pragma('foreign_keys = ON');
      this.db.pragma('synchronous = NORMAL');
      this.#migrate();
    }
    this.#insertJob = this.db.transaction((job: NewJob, vet?: () => void) => this.#insertJobNow(job, vet));
    this.#append = this.db.transaction((jobId: string, sets: string, values: unknown[], rows: unknown[][]) =>
      this.#appendNow(jobId, sets, values, rows),
    );
    this.#lock = this.db.transaction((workspace: string, jobId: string, pid: number, pidStart: number) =>
      this.#lockNow(workspace, jobId, pid, pidStart),
    );
  }

  /**
   * Group commit (an engine's connection, `groupCommits`): the writes of one event-loop turn share
   * one transaction, opened by the turn's first write (`BEGIN IMMEDIATE`: the write lock first, so
   * no snapshot goes stale under it) and committed when the turn ends. A job's step writes its
   * events, its attempt's state and its job row in one turn: one commit instead of one each.
   * Readers on this connection see every write at once; other processes see them at the turn's end.
   */
  groupCommits(): void {
    this.#grouping = true;
    groupingStores.add(this);
  }

  /** Commits the open group now (a no-op when none is open). */
  flush(): void {
    if (!this.#groupOpen) return;
    this.#groupOpen = false;
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
    this.#countCommit();
  }

  /** Before a write: in group mode, joins (or opens) the turn's transaction. */
  #begin(): void {
    if (this.#groupOpen || this.db.inTransaction) return;
    // another store's open group on this thread would hold the write lock until this thread commits it
    flushGroupsBut(this);
    if (!this.#grouping) return;
    this.db.exec('BEGIN IMMEDIATE');
    this.#groupOpen = true;
    setImmediate(this.#flushAtTurnEnd);
  }

  readonly #flushAtTurnEnd = (): void => {
    if (!this.db.open) return;
    try {
      this.flush();
    } catch (err) {
      process.stderr.write(
        `gaffer: committing to ${this.path} failed: ${err instanceof Error ? err.message : String(err)}\n`,
      );
    }
  };

  /** After a write: counted as a commit, unless it joined a group (counted when the group commits). */
  #committed(): void {
    if (!this.#groupOpen) this.#countCommit();
  }

  /**
   * Counts a commit. A connection that keeps writing (a server's engine, not a one-shot command)
   * hands its WAL checkpoints to a worker thread after its first CHECKPOINTER_AFTER commits.
   */
  #countCommit(): void {
    if (this.#checkpointer !== null) {
      this.#checkpointer.noteCommit();
      return;
    }
    if (++this.#commits < CHECKPOINTER_AFTER) return;
    this.#commits = -Infinity; // once: a checkpointer that failed is not started again
    try {
      // inside a caller's open transaction SQLite refuses a checkpoint (SQLITE_LOCKED): the next 1000 commits try again
      const checkpointHere = () => {
        if (!this.db.inTransaction) this.db.pragma('wal_checkpoint(PASSIVE)');
      };
      this.#checkpointer = new BackgroundCheckpointer(this.path, checkpointHere, () => {
        this.#checkpointer = null;
        if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000'); // SQLite's default: it checkpoints by itself again
      });
      this.db.pragma('wal_autocheckpoint = 0');
    } catch {
      this.#checkpointer = null; // no worker threads here: SQLite keeps checkpointing by itself
    }
  }

  #migrate(): void {
    const dir = new URL('./migrations/', import.meta.url);
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.sql'))
      .sort();
    // BEGIN IMMEDIATE: two processes opening a fresh data dir at once must not both migrate
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const version = decodeNumber(this.db.prepare('PRAGMA user_version').get(), 'pragma', 'user_version');
      files.forEach((file, i) => {
        if (i < version) return;
        this.db.exec(readFileSync(new URL(file, dir), 'utf8'));
        this.db.pragma(`user_version = ${i + 1}`);
      });
      this.db.exec('COMMIT');
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  close(): void {
    if (this.db.open) this.flush();
    groupingStores.delete(this);
    this.#checkpointer?.close();
    this.#checkpointer = null;
    this.db.close();
  }

  #prepare(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Inserts a job (its tasks are its spec's); with an idempotency key, returns the job that already holds the key
   * (same owner, within `idemWindowS`) instead, atomically across processes.
   */
  insertJob(job: NewJob, vet?: () => void): { job: JobRow; created: boolean } {
    // committed at once, group or not: its id goes out (an HTTP answer, a printed line) in this very turn,
    // and any process given it must find the job; no group of this thread may hold the write lock meanwhile
    flushGroupsBut(null);
    const inserted = this.#insertJob.immediate(job, vet);
    this.#countCommit();
    return inserted;
  }

  #insertJobNow(job: NewJob, vet?: () => void): { job: JobRow; created: boolean } {
    if (job.idemKey !== null) {
      const found = this.#prepare(`SELECT * FROM jobs WHERE coalesce(owner, '') = ? AND idem_key = ?`).get(
        job.owner ?? '',
        job.idemKey,
      );
      if (found !== undefined) {
        const existing = decodeJob(found);
        if (existing.created >= job.created - job.idemWindowS) return { job: existing, created: false };
        // an expired key is free again: the old job keeps its row, loses its key
        this.#prepare('UPDATE jobs SET idem_key = NULL WHERE id = ?').run(existing.id);
      }
    }
    // what only a new job meets (budgets, the breaker): a throw here leaves nothing written
    vet?.();
    const row = this.#prepare(
      `INSERT INTO jobs (id, owner, title, workspace, status, phase, created, spec_json, idem_key, request_hash, pid, pid_start)
       VALUES (?, ?, ?, ?, 'queued', 'queued', ?, ?, ?, ?, ?, ?) RETURNING *`,
    ).get(
      job.id,
      job.owner,
      job.spec.title,
      job.spec.workspace,
      job.created,
      encodeSpec(job.spec),
      job.idemKey,
      job.requestHash,
      job.pid,
      job.pidStart,
    );
    return { job: decodeJob(row), created: true };
  }

  getJob(id: string): JobRow | null {
    const row = this.#prepare('SELECT * FROM jobs WHERE id = ?').get(id);
    return row === undefined ? null : decodeJob(row);
  }

  /** Recent jobs, newest first. */
  listJobs(opts: { limit: number; status?: string | undefined; owner?: string | null | undefined }): JobRow[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.status) {
      where.push('status = ?');
      args.push(opts.status);
    }
    if (opts.owner !== undefined && opts.owner !== null) {
      where.push('owner = ?');
      args.push(opts.owner);
    }
    const sql = `SELECT * FROM jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created DESC, rowid DESC LIMIT ?`;
    return this.#prepare(sql)
      .all(...args, opts.limit)
      .map(decodeJob);
  }

  /** Jobs in a live status. */
  listLiveJobs(): JobRow[] {
    return this.#prepare(`SELECT * FROM jobs WHERE status IN ${LIVE}`).all().map(decodeJob);
  }

  /** Whether any process has a job in a live status (one row read, nothing parsed). */
  hasLiveJobs(): boolean {
    return this.#prepare(`SELECT 1 FROM jobs WHERE status IN ${LIVE} LIMIT 1`).get() !== undefined;
  }

  updateJob(id: string, patch: JobPatch): void {
    this.#begin();
    const { columns, values } = encodeJobPatch(patch);
    if (columns.length === 0) return;
    this.#prepare(`UPDATE jobs SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`).run(...values, id);
    this.#committed();
  }

  /** Marks a job interrupted only while it still has `fromStatus` (another process may be recovering it too). */
  claimInterrupted(id: string, fromStatus: JobStatus, change: { finished: number; error: string }): boolean {
    return (
      this.#prepare(
        `UPDATE jobs SET status = 'interrupted', finished = ?, error = ?, phase = 'settled' WHERE id = ? AND status = ?`,
      ).run(change.finished, change.error, id, fromStatus).changes > 0
    );
  }

  /** Marks a job to be cancelled by whichever process runs it. */
  requestCancel(id: string): void {
    this.#prepare('UPDATE jobs SET cancel_requested = 1 WHERE id = ?').run(id);
  }

  /** Ids of live jobs run by `pid` whose cancel was asked for (from any process). */
  listCancelRequested(pid: number): string[] {
    return this.#prepare(
      `SELECT id FROM jobs WHERE cancel_requested = 1 AND pid = ? AND status IN ('queued','awaiting_approval','running','verifying')`,
    )
      .all(pid)
      .map((r) => decodeText(r, 'jobs', 'id'));
  }

  /**
   * Appends an event with the job's next sequence number and returns it; `patch` is written in the
   * same statement (a status or phase change and its event are one transaction, not two).
   */
  appendEvent(jobId: string, event: NewJobEvent, patch: JobPatch = {}): JobEvent {
    const [appended] = this.appendEvents(jobId, [event], patch);
    if (appended === undefined) throw new Error('appendEvents answered no event for one');
    return appended;
  }

  appendEvents(jobId: string, events: readonly NewJobEvent[], patch: JobPatch = {}): JobEvent[] {
    this.#begin();
    if (events.length === 0) return [];
    const now = Date.now() / 1000;
    const split = events.map(({ name, event: kind, message, ts, ...extra }) => ({
      extra,
      name,
      kind,
      message,
      stamped: ts ?? now,
    }));
    const { columns, values } = encodeJobPatch(patch);
    const sets = columns.length === 0 ? '' : columns.map((c) => `, ${c} = ?`).join('');
    const rows = split.map((e) => [e.stamped, e.name, e.kind, e.message, encodeEventData(e.extra)]);
    const last = this.#append.immediate(jobId, sets, values, rows);
    this.#committed();
    const first = last - split.length + 1;
    return split.map((e, i) => ({
      ...e.extra,
      seq: first + i,
      ts: e.stamped,
      name: e.name,
      event: e.kind,
      message: e.message,
    }));
  }

  /** Numbers the rows after the job's last event, inserts them; answers the last number. */
  #appendNow(jobId: string, sets: string, values: unknown[], rows: unknown[][]): number {
    const last = decodeNumber(
      this.#prepare(`UPDATE jobs SET seq = seq + ?${sets} WHERE id = ? RETURNING seq`).get(
        rows.length,
        ...values,
        jobId,
      ),
      'jobs',
      'seq',
    );
    const insert = this.#prepare(
      'INSERT INTO events (job_id, seq, ts, name, event, message, data_json) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    rows.forEach((row, i) => insert.run(jobId, last - rows.length + 1 + i, ...row));
    this.#appendsSincePrune += rows.length;
    if (this.#appendsSincePrune >= 500) {
      this.#appendsSincePrune = 0;
      this.#prepare('DELETE FROM events WHERE job_id = ? AND seq <= ?').run(jobId, last - EVENTS_KEPT);
    }
    return last;
  }

  /** Events after `afterSeq`, oldest first. */
  listEvents(jobId: string, afterSeq = 0, limit = EVENTS_KEPT): JobEvent[] {
    return this.#prepare('SELECT * FROM events WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?')
      .all(jobId, afterSeq, limit)
      .map(decodeEvent);
  }

  insertAttempt(a: NewAttempt): void {
    this.#begin();
    this.#prepare(
      `INSERT INTO attempts (job_id, worker, task, attempt, role, runner, model, entry, provider, status, queued_at, log_file, ord, machine_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      a.jobId,
      a.worker,
      a.task,
      a.attempt,
      a.role,
      a.runner,
      a.model,
      a.entry,
      a.provider,
      a.status,
      a.queuedAt,
      a.logFile,
      a.ord,
      a.machine ? JSON.stringify(a.machine) : null,
    );
    this.#committed();
  }

  updateAttempt(jobId: string, worker: string, patch: AttemptPatch): void {
    this.#begin();
    const { columns, values } = encodeAttemptPatch(patch);
    if (columns.length === 0) return;
    this.#prepare(
      `UPDATE attempts SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE job_id = ? AND worker = ?`,
    ).run(...values, jobId, worker);
    this.#committed();
  }

  listAttempts(jobId: string): AttemptRow[] {
    return this.#prepare('SELECT * FROM attempts WHERE job_id = ? ORDER BY ord').all(jobId).map(decodeAttempt);
  }

  /**
   * Takes the workspace lock for a job unless another job holds the same or a nested path. A holder
   * whose process is dead is not freed here: it is answered with `isHolderDead`, and the caller
   * recovers its job (its survivors killed, spec 07) before it looks again.
   */
  tryLockWorkspace(workspace: string, jobId: string, pid: number, pidStart: number): LockAttempt {
    this.#begin();
    const taken = this.#lock.immediate(workspace, jobId, pid, pidStart);
    this.#committed();
    return taken;
  }

  #lockNow(workspace: string, jobId: string, pid: number, pidStart: number): LockAttempt {
    for (const row of this.#prepare('SELECT * FROM workspace_locks').all()) {
      // a burst of submissions looks here once per job and release: only a colliding row is decoded
      const held = (row as { workspace?: unknown }).workspace;
      if (typeof held === 'string' && !workspacesCollide(held, workspace)) continue;
      const holder = decodeLock(row); // a malformed row throws here
      if (holder.jobId === jobId) continue;
      return { ok: false, holder, isHolderDead: !isSameProcessAlive(holder.pid, holder.pidStart) };
    }
    this.#prepare(
      'INSERT OR REPLACE INTO workspace_locks (workspace, job_id, pid, pid_start, acquired) VALUES (?, ?, ?, ?, ?)',
    ).run(workspace, jobId, pid, pidStart, Date.now() / 1000);
    return { ok: true };
  }

  /** Releases whatever lock a job holds. */
  releaseWorkspace(jobId: string): void {
    this.#begin();
    this.#prepare('DELETE FROM workspace_locks WHERE job_id = ?').run(jobId);
    this.#committed();
  }

  /** Releases one lock row, only while `jobId` still holds it. */
  releaseLock(workspace: string, jobId: string): void {
    this.#prepare('DELETE FROM workspace_locks WHERE workspace = ? AND job_id = ?').run(workspace, jobId);
  }

  /** Opens the asks of a job's tasks (spec 05), in task order; an ask already there is kept as it is. */
  openAsks(jobId: string, asks: readonly AskJson[], at: number): void {
    this.#begin();
    const insert = this.#prepare(
      'INSERT OR IGNORE INTO asks (job_id, task, ord, ask_json, opened) VALUES (?, ?, ?, ?, ?)',
    );
    this.db.transaction(() => {
      asks.forEach(({ answer: _open, note: _note, answered_by: _by, ...ask }, i) =>
        insert.run(jobId, ask.task, i, JSON.stringify(ask), at),
      );
    })();
    this.#committed();
  }

  /** Answers a job's open asks, by task (`answeredBy` null: a person); the asks already answered keep their answer. Returns the tasks answered now. */
  answerAsks(
    jobId: string,
    answers: ReadonlyMap<string, boolean>,
    note: string | null,
    answeredBy: string | null,
    at: number,
  ): string[] {
    const update = this.#prepare(
      'UPDATE asks SET answer = ?, note = ?, answered_by = ?, answered = ? WHERE job_id = ? AND task = ? AND answer IS NULL',
    );
    const done: string[] = [];
    this.db.transaction(() => {
      for (const [task, yes] of answers)
        if (update.run(yes ? 1 : 0, note, answeredBy, at, jobId, task).changes > 0) done.push(task);
    })();
    this.#committed();
    return done;
  }

  /** A job's asks in task order. */
  listAsks(jobId: string): AskRow[] {
    return this.#prepare('SELECT * FROM asks WHERE job_id = ? ORDER BY ord').all(jobId).map(decodeAsk);
  }

  /** Every open ask, oldest first. */
  listOpenAsks(): AskRow[] {
    return this.#prepare('SELECT * FROM asks WHERE answer IS NULL ORDER BY opened, job_id, ord').all().map(decodeAsk);
  }

  /** Records a process group started for a job while it runs (see JobProcessRow). */
  recordJobProcess(p: JobProcessRow): void {
    this.#prepare('INSERT OR REPLACE INTO job_processes (job_id, pgid, pg_start, what) VALUES (?, ?, ?, ?)').run(
      p.jobId,
      p.pgid,
      p.pgStart,
      p.what,
    );
  }

  /** Forgets a recorded process group once it is gone. */
  forgetJobProcess(jobId: string, pgid: number): void {
    this.#prepare('DELETE FROM job_processes WHERE job_id = ? AND pgid = ?').run(jobId, pgid);
  }

  /** The process groups recorded for a job (besides its workers'). */
  listJobProcesses(jobId: string): JobProcessRow[] {
    return this.#prepare('SELECT * FROM job_processes WHERE job_id = ?').all(jobId).map(decodeJobProcess);
  }

  /** Who runs each live job (one indexed read): the periodic look for dead holders (spec 07). */
  listLiveJobHolders(): { id: string; pid: number | null; pidStart: number | null }[] {
    return this.#prepare(`SELECT id, pid, pid_start FROM jobs WHERE status IN ${LIVE}`).all().map(decodeJobHolder);
  }

  /** Deletes finished jobs beyond the newest `keep`, returning their ids (their files are the caller's). */
  pruneFinishedJobs(keep: number): string[] {
    // the usual answer after a job, while the store holds no more jobs than it keeps: one count of an
    // index, where the look for the ones past the newest `keep` reads every job's row
    const held = decodeNumber(this.#prepare('SELECT count(*) AS n FROM jobs').get(), 'jobs', 'n');
    if (held <= keep) return [];
    this.#begin();
    const ids = this.#prepare(`SELECT id FROM jobs WHERE status NOT IN ${LIVE} ORDER BY created DESC LIMIT -1 OFFSET ?`)
      .all(keep)
      .map((r) => decodeText(r, 'jobs', 'id'));
    if (ids.length === 0) return ids;
    const del = this.#prepare('DELETE FROM jobs WHERE id = ?');
    this.db.transaction(() => ids.forEach((id) => del.run(id)))();
    this.#committed();
    return ids;
  }

  /** `recent` counts of spec 02 `/api/stats`: `failed` counts `error` and `interrupted`. */
  countRecent(owner: string | null): RecentCounts {
    const rows = this.#prepare(
      `SELECT status, count(*) AS n FROM jobs ${owner !== null ? 'WHERE owner = ?' : ''} GROUP BY status`,
    )
      .all(...(owner !== null ? [owner] : []))
      .map((r) => ({ status: decodeText(r, 'jobs', 'status'), n: decodeNumber(r, 'jobs', 'n') }));
    const by = new Map(rows.map((r) => [r.status, r.n]));
    const n = (...statuses: string[]) => statuses.reduce((sum, st) => sum + (by.get(st) ?? 0), 0);
    return {
      jobs: rows.reduce((sum, r) => sum + r.n, 0),
      done: n('done'),
      partial: n('partial'),
      failed: n('error', 'interrupted'),
      cancelled: n('cancelled'),
      live: n('queued', 'awaiting_approval', 'running', 'verifying', 'cancelling'),
    };
  }

  /** Wall-clock seconds of the newest `limit` jobs in `workspace` that ran to an end, newest first (index jobs_workspace_finished, migration 10). */
  recentDurations(workspace: string, limit: number): number[] {
    // `interrupted` is left out: its `finished` is when a later start noticed it; `cancelled` was cut short
    return this.#prepare(
      `SELECT finished - started AS s FROM jobs
       WHERE workspace = ? AND finished IS NOT NULL AND started IS NOT NULL AND status IN ('done', 'partial', 'error')
       ORDER BY finished DESC LIMIT ?`,
    )
      .all(workspace, limit)
      .map((r) => decodeNumber(r, 'jobs', 's'));
  }

  recordSpend(jobId: string, worker: string, spend: Spend): void {
    this.#begin();
    this.#prepare(
      'UPDATE attempts SET billing = ?, spend_usd = ?, spend_requests = ?, spend_tokens = ?, spend_seconds = ? WHERE job_id = ? AND worker = ?',
    ).run(spend.billing, spend.usd, spend.requests, spend.tokens, spend.seconds, jobId, worker);
    this.#committed();
  }

  spendSince(q: { provider: string; entry: string | null; unit: BudgetUnit; since: number }): SpendPoint[] {
    const column = SPEND_COLUMNS[q.unit];
    // an attempt on no roster entry counts under its runner's key (issue 15: `provider` of a budget)
    return this.#prepare(
      `SELECT finished, ${column} AS amount FROM attempts
       WHERE finished >= ? AND billing IS NOT NULL AND coalesce(provider, runner) = ? ${q.entry !== null ? 'AND entry = ?' : ''}`,
    )
      .all(q.since, q.provider, ...(q.entry !== null ? [q.entry] : []))
      .map((r) => ({
        at: decodeNumber(r, 'attempts', 'finished'),
        amount: decodeNumberOrNull(r, 'attempts', 'amount'),
      }));
  }

  rerouteAttempt(
    jobId: string,
    worker: string,
    route: { runner: string; model: string | null; entry: string | null; provider: string | null },
    why: string,
  ): void {
    this.#prepare(
      'UPDATE attempts SET runner = ?, model = ?, entry = ?, provider = ?, route_why = ? WHERE job_id = ? AND worker = ?',
    ).run(route.runner, route.model, route.entry, route.provider, why, jobId, worker);
    this.#committed();
  }

  suspendProvider(s: ProviderSuspension): void {
    this.#begin();
    this.#prepare(
      `INSERT INTO provider_suspensions (provider, until, why, since) VALUES (?, ?, ?, ?)
       ON CONFLICT (provider) DO UPDATE SET until = excluded.until, why = excluded.why, since = excluded.since
       WHERE excluded.until > provider_suspensions.until`,
    ).run(s.provider, s.until, s.why, s.since);
    this.#committed();
  }

  listSuspensions(now: number): ProviderSuspension[] {
    return this.#prepare('SELECT * FROM provider_suspensions WHERE until > ? ORDER BY provider')
      .all(now)
      .map((r) => ({
        provider: decodeText(r, 'provider_suspensions', 'provider'),
        until: decodeNumber(r, 'provider_suspensions', 'until'),
        why: decodeText(r, 'provider_suspensions', 'why'),
        since: decodeNumber(r, 'provider_suspensions', 'since'),
      }));
  }

  liveInteractiveOn(provider: string, except: string): string[] {
    return this.#prepare(
      `SELECT DISTINCT j.id FROM jobs j JOIN attempts a ON a.job_id = j.id
       WHERE j.status IN ${LIVE} AND j.id != ? AND coalesce(a.provider, a.runner) = ? AND a.finished IS NULL
         AND coalesce(json_extract(j.spec_json, '$.unattended'), 0) = 0`,
    )
      .all(except, provider)
      .map((r) => decodeText(r, 'jobs', 'id'));
  }

  recentUnattendedEnds(limit: number): UnattendedEndRow[] {
    return this.#prepare(
      `SELECT j.id, j.status, j.finished,
         (SELECT count(*) FROM attempts a WHERE a.job_id = j.id AND a.role = 'worker' AND a.status = 'done') AS done,
         (SELECT count(*) FROM attempts a WHERE a.job_id = j.id AND a.role = 'worker') AS workers
       FROM jobs j
       WHERE j.finished IS NOT NULL AND j.status NOT IN ${LIVE} AND json_extract(j.spec_json, '$.unattended') = 1
       ORDER BY j.finished DESC LIMIT ?`,
    )
      .all(limit)
      .map((r) => ({
        id: decodeText(r, 'jobs', 'id'),
        status: decodeText(r, 'jobs', 'status') as JobStatus,
        finished: decodeNumber(r, 'jobs', 'finished'),
        workersDone: decodeNumber(r, 'jobs', 'done'),
        workers: decodeNumber(r, 'jobs', 'workers'),
      }));
  }

  jobsWaitingOn(provider: string): string[] {
    return this.#prepare(
      `SELECT DISTINCT j.id FROM jobs j JOIN attempts a ON a.job_id = j.id
       WHERE j.status IN ${LIVE} AND coalesce(a.provider, a.runner) = ? AND a.finished IS NULL
         AND (json_extract(a.state_json, '$.state') IN ('provider_suspended', 'budget_paused')
           OR (json_extract(a.state_json, '$.state') = 'rate_limited' AND json_extract(a.state_json, '$.retry_at') IS NOT NULL))`,
    )
      .all(provider)
      .map((r) => decodeText(r, 'jobs', 'id'));
  }

  /** Logs a task's outcome on one rung with its job's owner; false when the job already logged it (nothing written). */
  recordOutcome(o: OutcomeRecord, owner: string | null): boolean {
    this.#begin();
    const inserted =
      this.#prepare(
        `INSERT OR IGNORE INTO outcomes (job_id, task, rung, owner, ts, type, runner, model, provider, entry, status, gates_passed, escalated_to, returned, attempts, cost_usd)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        o.job,
        o.task,
        o.rung,
        owner,
        Date.parse(o.ts) / 1000,
        o.type,
        o.runner,
        o.model,
        o.provider,
        o.entry,
        o.status,
        o.gates_passed ? 1 : 0,
        o.escalated_to,
        o.returned ? 1 : 0,
        o.attempts,
        o.cost_usd,
      ).changes > 0;
    this.#committed();
    return inserted;
  }

  /** Outcomes counted by (type, runner, model, provider, status), of one owner's jobs or (null) of all: one grouped read, no row parsed. */
  countOutcomes(owner: string | null): OutcomeCount[] {
    return this.#prepare(
      `SELECT type, runner, model, provider, status, count(*) AS n FROM outcomes ${owner !== null ? 'WHERE owner = ?' : ''} GROUP BY type, runner, model, provider, status`,
    )
      .all(...(owner !== null ? [owner] : []))
      .map(decodeOutcomeCount);
  }

  /** Records a job's evidence on the objectives it named (spec 07), in one transaction; a row the job already recorded is kept. */
  recordObjectiveEvidence(rows: readonly ObjectiveEvidence[], owner: string | null): void {
    this.#begin();
    if (rows.length === 0) return;
    const insert = this.#prepare(
      `INSERT OR IGNORE INTO objective_evidence (job_id, objective, workspace, owner, ts, status, files_changed, confidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.db.transaction(() =>
      rows.forEach((e) =>
        insert.run(
          e.job_id,
          e.objective,
          e.workspace,
          owner,
          e.ts,
          e.status,
          JSON.stringify(e.files_changed),
          e.confidence,
        ),
      ),
    )();
    this.#committed();
  }

  /** Evidence records oldest first: a job's, or those of one objective (or all) of a workspace. */
  listObjectiveEvidence(by: { jobId: string } | { workspace: string; objective?: string }): ObjectiveEvidence[] {
    const columns = 'job_id, objective, workspace, ts, status, files_changed, confidence';
    const rows =
      'jobId' in by
        ? this.#prepare(`SELECT ${columns} FROM objective_evidence WHERE job_id = ? ORDER BY ts, objective`).all(
            by.jobId,
          )
        : by.objective !== undefined
          ? this.#prepare(
              `SELECT ${columns} FROM objective_evidence WHERE workspace = ? AND objective = ? ORDER BY ts, job_id`,
            ).all(by.workspace, by.objective)
          : this.#prepare(
              `SELECT ${columns} FROM objective_evidence WHERE workspace = ? ORDER BY ts, objective, job_id`,
            ).all(by.workspace);
    return rows.map(decodeObjectiveEvidence);
  }

  /** Per roster entry, a type's outcomes that count (spec 05's learning router): accepted and total, `not_dispatched` and `abstained` left out. */
  entryAcceptance(type: string): Map<string, { accepted: number; total: number }> {
    const rows = this.#prepare(
      `SELECT entry, sum(status = 'passed') AS accepted, count(*) AS total FROM outcomes
       WHERE type = ? AND entry IS NOT NULL AND status NOT IN ('not_dispatched', 'abstained') GROUP BY entry`,
    ).all(type);
    return new Map(
      rows.map((r) => [
        decodeText(r, 'outcomes', 'entry'),
        { accepted: decodeNumber(r, 'outcomes', 'accepted'), total: decodeNumber(r, 'outcomes', 'total') },
      ]),
    );
  }

  /** Ids of every job still stored. */
  listJobIds(): Set<string> {
    return new Set(
      this.#prepare('SELECT id FROM jobs')
        .all()
        .map((r) => decodeText(r, 'jobs', 'id')),
    );
  }
}
