import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JobStatus, WorkerOutcome, WorkerRole, WorkerStatus } from '../domain/status.js';
import type { JobSpec } from '../domain/request.js';
import type { JobEvent, NewJobEvent } from '../domain/events.js';
import { makePrivateDataDir, touchPrivateFile } from '../platform/files/data-dir.js';
import { isSameProcessAlive } from '../platform/process/process-identity.js';

/** Events a job keeps in the store (spec 02: the newest 5,000). */
export const EVENTS_KEPT = 5_000;

/** A job row as stored. */
export interface JobRow {
  id: string;
  owner: string | null;
  title: string;
  workspace: string;
  status: JobStatus;
  phase: string | null;
  verdict: string | null;
  error: string | null;
  created: number;
  started: number | null;
  finished: number | null;
  spec: JobSpec;
  /** Evidence, verification, proof … as far as known (see engine/job-result.ts). */
  result: Record<string, unknown> | null;
  checkpoint: Record<string, unknown> | null;
  pid: number | null;
  pidStart: number | null;
  cancelRequested: boolean;
  idemKey: string | null;
  requestHash: string | null;
  seq: number;
}

/** One attempt (worker) row. */
export interface AttemptRow {
  jobId: string;
  worker: string;
  task: string;
  attempt: number;
  role: WorkerRole;
  runner: string;
  model: string | null;
  status: WorkerStatus;
  outcome: WorkerOutcome | null;
  queuedAt: number;
  started: number | null;
  finished: number | null;
  pgid: number | null;
  pgStart: number | null;
  lastEvent: string | null;
  state: Record<string, unknown> | null;
  report: Record<string, unknown> | null;
  logFile: string | null;
  ord: number;
}

export type { JobEvent, NewJobEvent } from '../domain/events.js';

/** Who holds a workspace lock. */
export interface LockHolder {
  workspace: string;
  jobId: string;
  pid: number;
  pidStart: number;
}

/** A process group started for a job besides its workers (verification, baseline, criteria …), while it runs. */
export interface JobProcessRow {
  jobId: string;
  pgid: number;
  /** The leader's start time (epoch s), against pid reuse. */
  pgStart: number;
  /** Which run it is: its log's name. */
  what: string;
}

type Raw = Record<string, unknown>;

const parse = <T>(text: unknown): T | null => (typeof text === 'string' ? (JSON.parse(text) as T) : null);

function toJobRow(r: Raw): JobRow {
  return {
    id: r.id as string,
    owner: (r.owner as string | null) ?? null,
    title: r.title as string,
    workspace: r.workspace as string,
    status: r.status as JobStatus,
    phase: (r.phase as string | null) ?? null,
    verdict: (r.verdict as string | null) ?? null,
    error: (r.error as string | null) ?? null,
    created: r.created as number,
    started: (r.started as number | null) ?? null,
    finished: (r.finished as number | null) ?? null,
    spec: parse<JobSpec>(r.spec_json) as JobSpec,
    result: parse(r.result_json),
    checkpoint: parse(r.checkpoint_json),
    pid: (r.pid as number | null) ?? null,
    pidStart: (r.pid_start as number | null) ?? null,
    cancelRequested: r.cancel_requested === 1,
    idemKey: (r.idem_key as string | null) ?? null,
    requestHash: (r.request_hash as string | null) ?? null,
    seq: r.seq as number,
  };
}

function toAttemptRow(r: Raw): AttemptRow {
  return {
    jobId: r.job_id as string,
    worker: r.worker as string,
    task: r.task as string,
    attempt: r.attempt as number,
    role: r.role as WorkerRole,
    runner: r.runner as string,
    model: (r.model as string | null) ?? null,
    status: r.status as WorkerStatus,
    outcome: (r.outcome as WorkerOutcome | null) ?? null,
    queuedAt: r.queued_at as number,
    started: (r.started as number | null) ?? null,
    finished: (r.finished as number | null) ?? null,
    pgid: (r.pgid as number | null) ?? null,
    pgStart: (r.pg_start as number | null) ?? null,
    lastEvent: (r.last_event as string | null) ?? null,
    state: parse(r.state_json),
    report: parse(r.report_json),
    logFile: (r.log_file as string | null) ?? null,
    ord: r.ord as number,
  };
}

/** Nested paths collide (spec 01): `/a/b` and `/a/b/c` are one workspace for locking. */
export function workspacesCollide(a: string, b: string): boolean {
  const withSlash = (p: string) => (p.endsWith('/') ? p : `${p}/`);
  return a === b || withSlash(a).startsWith(withSlash(b)) || withSlash(b).startsWith(withSlash(a));
}

/** Fields of a job that change over its life. */
export interface JobPatch {
  status?: JobStatus;
  phase?: string | null;
  verdict?: string | null;
  error?: string | null;
  started?: number | null;
  finished?: number | null;
  result?: Record<string, unknown> | null;
  checkpoint?: Record<string, unknown> | null;
  pid?: number | null;
  pidStart?: number | null;
}

/** Fields of an attempt that change over its life. */
export interface AttemptPatch {
  status?: WorkerStatus;
  outcome?: WorkerOutcome | null;
  started?: number | null;
  finished?: number | null;
  pgid?: number | null;
  pgStart?: number | null;
  lastEvent?: string | null;
  state?: Record<string, unknown> | null;
  report?: Record<string, unknown> | null;
}

const JOB_COLUMNS: Record<keyof JobPatch, string> = {
  status: 'status',
  phase: 'phase',
  verdict: 'verdict',
  error: 'error',
  started: 'started',
  finished: 'finished',
  result: 'result_json',
  checkpoint: 'checkpoint_json',
  pid: 'pid',
  pidStart: 'pid_start',
};

const ATTEMPT_COLUMNS: Record<keyof AttemptPatch, string> = {
  status: 'status',
  outcome: 'outcome',
  started: 'started',
  finished: 'finished',
  pgid: 'pgid',
  pgStart: 'pg_start',
  lastEvent: 'last_event',
  state: 'state_json',
  report: 'report_json',
};

const JSON_FIELDS = new Set(['result', 'checkpoint', 'state', 'report']);

function toSqlValue(key: string, value: unknown): unknown {
  if (value === undefined) return null;
  return JSON_FIELDS.has(key) && value !== null ? JSON.stringify(value) : value;
}

/** The SQLite store (WAL): jobs, tasks, attempts, events, workspace locks. Safe to share between processes. */
export class Store {
  readonly db: Database.Database;
  readonly path: string;
  #appendsSincePrune = 0;
  /** Prepared statements by SQL text: preparing costs more than running most of them. */
  readonly #statements = new Map<string, Database.Statement>();

  constructor(dataDir: string) {
    // the db holds every job's output and events: the data dir is 0700 and the db 0600 (issue 11)
    makePrivateDataDir(dataDir);
    this.path = join(dataDir, 'gaffer.db');
    touchPrivateFile(this.path);
    this.db = new Database(this.path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 15000');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('synchronous = NORMAL');
    this.#migrate();
  }

  #migrate(): void {
    const dir = new URL('./migrations/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
    // BEGIN IMMEDIATE: two processes opening a fresh data dir at once must not both migrate
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const version = this.db.pragma('user_version', { simple: true }) as number;
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
   * Inserts a job and its tasks; with an idempotency key, returns the job that already holds the key
   * (same owner, within `idemWindowS`) instead, atomically across processes.
   */
  insertJob(job: {
    id: string;
    owner: string | null;
    spec: JobSpec;
    created: number;
    idemKey: string | null;
    requestHash: string | null;
    idemWindowS: number;
    pid: number;
    pidStart: number;
  }): { job: JobRow; created: boolean } {
    const run = this.db.transaction(() => {
      if (job.idemKey !== null) {
        const existing = this.#prepare(`SELECT * FROM jobs WHERE coalesce(owner, '') = ? AND idem_key = ?`)
          .get(job.owner ?? '', job.idemKey) as Raw | undefined;
        if (existing) {
          if ((existing.created as number) >= job.created - job.idemWindowS) return { job: toJobRow(existing), created: false };
          // an expired key is free again: the old job keeps its row, loses its key
          this.#prepare('UPDATE jobs SET idem_key = NULL WHERE id = ?').run(existing.id);
        }
      }
      this.#prepare(
        `INSERT INTO jobs (id, owner, title, workspace, status, phase, created, spec_json, idem_key, request_hash, pid, pid_start)
         VALUES (?, ?, ?, ?, 'queued', 'queued', ?, ?, ?, ?, ?, ?)`,
      )
      .run(job.id, job.owner, job.spec.title, job.spec.workspace, job.created, JSON.stringify(job.spec), job.idemKey, job.requestHash, job.pid, job.pidStart);
      const insertTask = this.#prepare(
        'INSERT INTO tasks (job_id, idx, name, type, runner, model, instruction, spec_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      job.spec.tasks.forEach((t, i) => insertTask.run(job.id, i, t.name, t.type, t.runner, t.model, t.instruction, JSON.stringify(t)));
      return { job: this.getJob(job.id) as JobRow, created: true };
    });
    return run.immediate();
  }

  getJob(id: string): JobRow | null {
    const row = this.#prepare('SELECT * FROM jobs WHERE id = ?').get(id) as Raw | undefined;
    return row ? toJobRow(row) : null;
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
    return (this.#prepare(sql).all(...args, opts.limit) as Raw[]).map(toJobRow);
  }

  /** Jobs in a live status. */
  listLiveJobs(): JobRow[] {
    return (
      this.#prepare(`SELECT * FROM jobs WHERE status IN ('queued','awaiting_approval','running','verifying','cancelling')`)
        .all() as Raw[]
    ).map(toJobRow);
  }

  /** Whether any process has a job in a live status (one row read, nothing parsed). */
  hasLiveJobs(): boolean {
    return this.#prepare(`SELECT 1 FROM jobs WHERE status IN ('queued','awaiting_approval','running','verifying','cancelling') LIMIT 1`).get() !== undefined;
  }

  updateJob(id: string, patch: JobPatch): void {
    const keys = Object.keys(patch) as (keyof JobPatch)[];
    if (keys.length === 0) return;
    const sets = keys.map((k) => `${JOB_COLUMNS[k]} = ?`).join(', ');
    this.#prepare(`UPDATE jobs SET ${sets} WHERE id = ?`).run(...keys.map((k) => toSqlValue(k, patch[k])), id);
  }

  /** Marks a job to be cancelled by whichever process runs it. */
  requestCancel(id: string): void {
    this.#prepare('UPDATE jobs SET cancel_requested = 1 WHERE id = ?').run(id);
  }

  /** Ids of live jobs run by `pid` whose cancel was asked for (from any process). */
  listCancelRequested(pid: number): string[] {
    return (
      this.#prepare(
        `SELECT id FROM jobs WHERE cancel_requested = 1 AND pid = ? AND status IN ('queued','awaiting_approval','running','verifying')`,
      )
      .all(pid) as { id: string }[]
    ).map((r) => r.id);
  }

  /**
   * Appends an event with the job's next sequence number and returns it; `patch` is written in the
   * same statement (a status or phase change and its event are one transaction, not two).
   */
  appendEvent(jobId: string, event: NewJobEvent, patch: JobPatch = {}): JobEvent {
    const { name, event: kind, message, ts, ...extra } = event;
    const stamped = ts ?? Date.now() / 1000;
    const keys = Object.keys(patch) as (keyof JobPatch)[];
    const sets = keys.map((k) => `, ${JOB_COLUMNS[k]} = ?`).join('');
    const values = keys.map((k) => toSqlValue(k, patch[k]));
    const append = this.db.transaction(() => {
      const { seq } = this.#prepare(`UPDATE jobs SET seq = seq + 1${sets} WHERE id = ? RETURNING seq`).get(...values, jobId) as { seq: number };
      this.#prepare('INSERT INTO events (job_id, seq, ts, name, event, message, data_json) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(jobId, seq, stamped, name, kind, message, Object.keys(extra).length ? JSON.stringify(extra) : null);
      if (++this.#appendsSincePrune >= 500) {
        this.#appendsSincePrune = 0;
        this.#prepare('DELETE FROM events WHERE job_id = ? AND seq <= ?').run(jobId, seq - EVENTS_KEPT);
      }
      return seq;
    });
    const seq = append.immediate();
    return { ...extra, seq, ts: stamped, name, event: kind, message };
  }

  /** Events after `afterSeq`, oldest first. */
  listEvents(jobId: string, afterSeq = 0, limit = EVENTS_KEPT): JobEvent[] {
    const rows = this.#prepare('SELECT * FROM events WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?')
      .all(jobId, afterSeq, limit) as Raw[];
    return rows.map((r) => ({
      ...(parse<Record<string, unknown>>(r.data_json) ?? {}),
      seq: r.seq as number,
      ts: r.ts as number,
      name: r.name as string,
      event: r.event as string,
      message: r.message as string,
    }));
  }

  insertAttempt(a: Omit<AttemptRow, 'started' | 'finished' | 'pgid' | 'pgStart' | 'lastEvent' | 'state' | 'report' | 'outcome'>): void {
    this.#prepare(
      `INSERT INTO attempts (job_id, worker, task, attempt, role, runner, model, status, queued_at, log_file, ord)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(a.jobId, a.worker, a.task, a.attempt, a.role, a.runner, a.model, a.status, a.queuedAt, a.logFile, a.ord);
  }

  updateAttempt(jobId: string, worker: string, patch: AttemptPatch): void {
    const keys = Object.keys(patch) as (keyof AttemptPatch)[];
    if (keys.length === 0) return;
    const sets = keys.map((k) => `${ATTEMPT_COLUMNS[k]} = ?`).join(', ');
    this.#prepare(`UPDATE attempts SET ${sets} WHERE job_id = ? AND worker = ?`)
      .run(...keys.map((k) => toSqlValue(k, patch[k])), jobId, worker);
  }

  listAttempts(jobId: string): AttemptRow[] {
    return (this.#prepare('SELECT * FROM attempts WHERE job_id = ? ORDER BY ord').all(jobId) as Raw[]).map(toAttemptRow);
  }

  /**
   * Takes the workspace lock for a job unless another job holds the same or a nested path. A holder
   * whose process is dead is not freed here: it is answered with `isHolderDead`, and the caller
   * recovers its job (its survivors killed, spec 07) before it looks again.
   */
  tryLockWorkspace(
    workspace: string,
    jobId: string,
    pid: number,
    pidStart: number,
  ): { ok: true } | { ok: false; holder: LockHolder; isHolderDead: boolean } {
    const take = this.db.transaction(() => {
      const rows = this.#prepare('SELECT * FROM workspace_locks').all() as Raw[];
      for (const r of rows) {
        const holder: LockHolder = { workspace: r.workspace as string, jobId: r.job_id as string, pid: r.pid as number, pidStart: r.pid_start as number };
        if (!workspacesCollide(holder.workspace, workspace)) continue;
        if (holder.jobId === jobId) continue;
        return { ok: false as const, holder, isHolderDead: !isSameProcessAlive(holder.pid, holder.pidStart) };
      }
      this.#prepare('INSERT OR REPLACE INTO workspace_locks (workspace, job_id, pid, pid_start, acquired) VALUES (?, ?, ?, ?, ?)')
        .run(workspace, jobId, pid, pidStart, Date.now() / 1000);
      return { ok: true as const };
    });
    return take.immediate();
  }

  /** Releases whatever lock a job holds. */
  releaseWorkspace(jobId: string): void {
    this.#prepare('DELETE FROM workspace_locks WHERE job_id = ?').run(jobId);
  }

  /** Releases one lock row, only while `jobId` still holds it. */
  releaseLock(workspace: string, jobId: string): void {
    this.#prepare('DELETE FROM workspace_locks WHERE workspace = ? AND job_id = ?').run(workspace, jobId);
  }

  /** Records a process group started for a job while it runs (see JobProcessRow). */
  recordJobProcess(p: JobProcessRow): void {
    this.#prepare('INSERT OR REPLACE INTO job_processes (job_id, pgid, pg_start, what) VALUES (?, ?, ?, ?)').run(p.jobId, p.pgid, p.pgStart, p.what);
  }

  /** Forgets a recorded process group once it is gone. */
  forgetJobProcess(jobId: string, pgid: number): void {
    this.#prepare('DELETE FROM job_processes WHERE job_id = ? AND pgid = ?').run(jobId, pgid);
  }

  /** The process groups recorded for a job (besides its workers'). */
  listJobProcesses(jobId: string): JobProcessRow[] {
    return (this.#prepare('SELECT * FROM job_processes WHERE job_id = ?').all(jobId) as Raw[]).map((r) => ({
      jobId: r.job_id as string,
      pgid: r.pgid as number,
      pgStart: r.pg_start as number,
      what: r.what as string,
    }));
  }

  /** Who runs each live job (one indexed read): the periodic look for dead holders (spec 07). */
  listLiveJobHolders(): { id: string; pid: number | null; pidStart: number | null }[] {
    return (
      this.#prepare(`SELECT id, pid, pid_start FROM jobs WHERE status IN ('queued','awaiting_approval','running','verifying','cancelling')`)
        .all() as Raw[]
    ).map((r) => ({ id: r.id as string, pid: (r.pid as number | null) ?? null, pidStart: (r.pid_start as number | null) ?? null }));
  }

  /** Deletes finished jobs beyond the newest `keep`, returning their ids (their files are the caller's). */
  pruneFinishedJobs(keep: number): string[] {
    const ids = (
      this.#prepare(
        `SELECT id FROM jobs WHERE status NOT IN ('queued','awaiting_approval','running','verifying','cancelling')
         ORDER BY created DESC LIMIT -1 OFFSET ?`,
      )
      .all(keep) as { id: string }[]
    ).map((r) => r.id);
    const del = this.#prepare('DELETE FROM jobs WHERE id = ?');
    this.db.transaction(() => ids.forEach((id) => del.run(id)))();
    return ids;
  }

  /** `recent` counts of spec 02 `/api/stats`: `failed` counts `error` and `interrupted`. */
  countRecent(owner: string | null): Record<string, number> {
    const rows = this.#prepare(`SELECT status, count(*) AS n FROM jobs ${owner !== null ? 'WHERE owner = ?' : ''} GROUP BY status`)
      .all(...(owner !== null ? [owner] : [])) as { status: string; n: number }[];
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

  /** Ids of every job still stored. */
  listJobIds(): Set<string> {
    return new Set((this.#prepare('SELECT id FROM jobs').all() as { id: string }[]).map((r) => r.id));
  }
}
