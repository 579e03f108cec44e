import type { JobSpec } from '../domain/request.js';
import type { Attempt } from '../domain/attempt-machine.js';
import { ATTEMPT_STATES } from '../domain/attempt-table.js';
import type { JobResult } from '../domain/result.js';
import { GafferError } from '../domain/errors.js';
import {
  DETECTED_STATES,
  JOB_STATUSES,
  WORKER_STATUSES,
  type JobStatus,
  type WorkerOutcome,
  type WorkerRole,
  type WorkerStatus,
} from '../domain/status.js';
import type { RunnerReport } from '../domain/runner-report.js';
import type {
  AskRow,
  AttemptPatch,
  AttemptRow,
  AttemptState,
  JobEvent,
  JobPatch,
  JobProcessRow,
  JobRow,
  JobSnapshots,
  LockHolder,
} from './ports.js';
import type { AskJson } from '../domain/approval.js';
import type { OutcomeCount } from '../domain/acceptance.js';
import { OUTCOME_STATUSES } from '../domain/outcome.js';
import type { ObjectiveEvidence } from '../domain/objectives.js';

/*
 * The one edge between SQLite's untyped rows and the store's typed ones: each column is read
 * (and each JSON column parsed and checked) here, so nothing past the store casts. A row that
 * does not fit is a damaged or foreign db, named by table, column and value.
 */

type Raw = Readonly<Record<string, unknown>>;

function damaged(table: string, column: string, value: unknown, expected: string): GafferError {
  const shown = JSON.stringify(value)?.slice(0, 80) ?? String(value);
  return new GafferError(
    'internal',
    `the store's ${table}.${column} holds ${shown}, expected ${expected}: the db file is damaged or was written by another gaffer version (gaffer doctor checks it)`,
    `${table}.${column}`,
  );
}

/** The row itself: better-sqlite3 answers an object per row, or undefined when none matched. */
export function readRow(value: unknown, table: string): Raw {
  if (typeof value !== 'object' || value === null) throw damaged(table, '*', value, 'a row');
  return value as Raw;
}

const text = (r: Raw, table: string, col: string): string => {
  const v = r[col];
  if (typeof v !== 'string') throw damaged(table, col, v, 'text');
  return v;
};
const textOrNull = (r: Raw, table: string, col: string): string | null =>
  r[col] === null || r[col] === undefined ? null : text(r, table, col);
const num = (r: Raw, table: string, col: string): number => {
  const v = r[col];
  if (typeof v !== 'number') throw damaged(table, col, v, 'a number');
  return v;
};
const numOrNull = (r: Raw, table: string, col: string): number | null =>
  r[col] === null || r[col] === undefined ? null : num(r, table, col);

function oneOf<T extends string>(r: Raw, table: string, col: string, values: readonly T[]): T {
  const v = text(r, table, col);
  if (!(values as readonly string[]).includes(v)) throw damaged(table, col, v, `one of ${values.join(', ')}`);
  return v as T;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A JSON column: null stays null; otherwise it must parse and pass `fits`, the shape's
 * distinguishing fields (a full schema per column would cost every read for what only gaffer writes).
 */
function json<T>(
  r: Raw,
  table: string,
  col: string,
  expected: string,
  fits: (v: Record<string, unknown>) => boolean,
): T | null {
  const v = r[col];
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') throw damaged(table, col, v, 'JSON text');
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw damaged(table, col, v, 'JSON text');
  }
  if (!isObject(parsed) || !fits(parsed)) throw damaged(table, col, v, expected);
  return parsed as T;
}

const isJobSpec = (v: Record<string, unknown>) => typeof v.workspace === 'string' && Array.isArray(v.tasks);
const isJobResult = (v: Record<string, unknown>) => Array.isArray(v.files_changed) && isObject(v.totals);
const isSnapshots = (v: Record<string, unknown>) => isObject(v.pre);
const isAttemptState = (v: Record<string, unknown>) =>
  (DETECTED_STATES as readonly unknown[]).includes(v.state) && typeof v.why === 'string';
const isMachineAttempt = (v: Record<string, unknown>) =>
  (ATTEMPT_STATES as readonly unknown[]).includes(v.state) &&
  typeof v.task === 'string' &&
  typeof v.number === 'number';
const isReport = (v: Record<string, unknown>) =>
  (WORKER_STATUSES as readonly unknown[]).includes(v.status) && Array.isArray(v.filesChanged);

const WORKER_OUTCOMES: readonly WorkerOutcome[] = ['success', 'expected_error', 'cancelled', 'panic'];
const WORKER_ROLES: readonly WorkerRole[] = ['worker', 'fixer', 'reviewer'];

/** A `jobs` row. */
export function decodeJob(value: unknown): JobRow {
  const r = readRow(value, 'jobs');
  const spec = json<JobSpec>(r, 'jobs', 'spec_json', 'a job spec', isJobSpec);
  if (spec === null) throw damaged('jobs', 'spec_json', null, 'a job spec');
  return {
    id: text(r, 'jobs', 'id'),
    owner: textOrNull(r, 'jobs', 'owner'),
    title: text(r, 'jobs', 'title'),
    workspace: text(r, 'jobs', 'workspace'),
    status: oneOf<JobStatus>(r, 'jobs', 'status', JOB_STATUSES),
    phase: textOrNull(r, 'jobs', 'phase'),
    verdict: textOrNull(r, 'jobs', 'verdict'),
    error: textOrNull(r, 'jobs', 'error'),
    created: num(r, 'jobs', 'created'),
    started: numOrNull(r, 'jobs', 'started'),
    finished: numOrNull(r, 'jobs', 'finished'),
    spec,
    result: json<JobResult>(r, 'jobs', 'result_json', 'a job result', isJobResult),
    checkpoint: json<JobSnapshots>(r, 'jobs', 'checkpoint_json', 'the job snapshots', isSnapshots),
    pid: numOrNull(r, 'jobs', 'pid'),
    pidStart: numOrNull(r, 'jobs', 'pid_start'),
    cancelRequested: r.cancel_requested === 1,
    idemKey: textOrNull(r, 'jobs', 'idem_key'),
    requestHash: textOrNull(r, 'jobs', 'request_hash'),
    seq: num(r, 'jobs', 'seq'),
  };
}

/** An `attempts` row. */
export function decodeAttempt(value: unknown): AttemptRow {
  const r = readRow(value, 'attempts');
  const outcome = textOrNull(r, 'attempts', 'outcome');
  return {
    jobId: text(r, 'attempts', 'job_id'),
    worker: text(r, 'attempts', 'worker'),
    task: text(r, 'attempts', 'task'),
    attempt: num(r, 'attempts', 'attempt'),
    role: oneOf(r, 'attempts', 'role', WORKER_ROLES),
    runner: text(r, 'attempts', 'runner'),
    model: textOrNull(r, 'attempts', 'model'),
    entry: textOrNull(r, 'attempts', 'entry'),
    provider: textOrNull(r, 'attempts', 'provider'),
    status: oneOf<WorkerStatus>(r, 'attempts', 'status', WORKER_STATUSES),
    outcome: outcome === null ? null : oneOf(r, 'attempts', 'outcome', WORKER_OUTCOMES),
    queuedAt: num(r, 'attempts', 'queued_at'),
    started: numOrNull(r, 'attempts', 'started'),
    finished: numOrNull(r, 'attempts', 'finished'),
    pgid: numOrNull(r, 'attempts', 'pgid'),
    pgStart: numOrNull(r, 'attempts', 'pg_start'),
    lastEvent: textOrNull(r, 'attempts', 'last_event'),
    state: json<AttemptState>(r, 'attempts', 'state_json', 'a detected state', isAttemptState),
    report: json<RunnerReport>(r, 'attempts', 'report_json', 'a runner report', isReport),
    logFile: textOrNull(r, 'attempts', 'log_file'),
    ord: num(r, 'attempts', 'ord'),
    routeWhy: textOrNull(r, 'attempts', 'route_why'),
    machine: json<Attempt>(r, 'attempts', 'machine_json', 'an attempt of the machine', isMachineAttempt),
  };
}

/** An `events` row: its extra fields (data_json) ride along beside the named ones. */
export function decodeEvent(value: unknown): JobEvent {
  const r = readRow(value, 'events');
  const extra = json<Record<string, unknown>>(r, 'events', 'data_json', 'an object', () => true);
  return {
    ...extra,
    seq: num(r, 'events', 'seq'),
    ts: num(r, 'events', 'ts'),
    name: text(r, 'events', 'name'),
    event: text(r, 'events', 'event'),
    message: text(r, 'events', 'message'),
  };
}

/** The `data_json` of an event: its extra fields, or null when it has none. */
export function encodeEventData(extra: Record<string, unknown>): string | null {
  return Object.keys(extra).length > 0 ? JSON.stringify(extra) : null;
}

/** A `workspace_locks` row. */
export function decodeLock(value: unknown): LockHolder {
  const r = readRow(value, 'workspace_locks');
  return {
    workspace: text(r, 'workspace_locks', 'workspace'),
    jobId: text(r, 'workspace_locks', 'job_id'),
    pid: num(r, 'workspace_locks', 'pid'),
    pidStart: num(r, 'workspace_locks', 'pid_start'),
  };
}

/** A `job_processes` row. */
export function decodeJobProcess(value: unknown): JobProcessRow {
  const r = readRow(value, 'job_processes');
  return {
    jobId: text(r, 'job_processes', 'job_id'),
    pgid: num(r, 'job_processes', 'pgid'),
    pgStart: num(r, 'job_processes', 'pg_start'),
    what: text(r, 'job_processes', 'what'),
  };
}

const isAsk = (v: Record<string, unknown>) => typeof v.task === 'string' && typeof v.recommendation === 'string';

/** An `asks` row: the ask with its answer. */
export function decodeAsk(value: unknown): AskRow {
  const r = readRow(value, 'asks');
  const ask = json<Omit<AskJson, 'answer'>>(r, 'asks', 'ask_json', 'an ask', isAsk);
  if (ask === null) throw damaged('asks', 'ask_json', null, 'an ask');
  const answer = numOrNull(r, 'asks', 'answer');
  const note = textOrNull(r, 'asks', 'note');
  const by = textOrNull(r, 'asks', 'answered_by');
  return {
    jobId: text(r, 'asks', 'job_id'),
    opened: num(r, 'asks', 'opened'),
    answered: numOrNull(r, 'asks', 'answered'),
    ask: {
      ...ask,
      answer: answer === null ? null : answer === 1,
      ...(note !== null ? { note } : {}),
      ...(by !== null ? { answered_by: by } : {}),
    },
  };
}

/** One group of `outcomes` rows as counted: its (type, runner, model, provider, status) and how many. */
export function decodeOutcomeCount(value: unknown): OutcomeCount {
  const r = readRow(value, 'outcomes');
  return {
    type: text(r, 'outcomes', 'type'),
    runner: text(r, 'outcomes', 'runner'),
    model: textOrNull(r, 'outcomes', 'model'),
    provider: textOrNull(r, 'outcomes', 'provider'),
    status: oneOf(r, 'outcomes', 'status', OUTCOME_STATUSES),
    count: num(r, 'outcomes', 'n'),
  };
}

/** An `objective_evidence` row. */
export function decodeObjectiveEvidence(value: unknown): ObjectiveEvidence {
  const r = readRow(value, 'objective_evidence');
  const files = text(r, 'objective_evidence', 'files_changed');
  let paths: unknown;
  try {
    paths = JSON.parse(files);
  } catch {
    throw damaged('objective_evidence', 'files_changed', files, 'a JSON list of paths');
  }
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === 'string'))
    throw damaged('objective_evidence', 'files_changed', files, 'a JSON list of paths');
  return {
    objective: text(r, 'objective_evidence', 'objective'),
    job_id: text(r, 'objective_evidence', 'job_id'),
    workspace: text(r, 'objective_evidence', 'workspace'),
    status: oneOf<JobStatus>(r, 'objective_evidence', 'status', JOB_STATUSES),
    files_changed: paths as string[],
    confidence: num(r, 'objective_evidence', 'confidence'),
    ts: num(r, 'objective_evidence', 'ts'),
  };
}

/** The live-job holder columns of a `jobs` row (id, pid, pid_start). */
export function decodeJobHolder(value: unknown): { id: string; pid: number | null; pidStart: number | null } {
  const r = readRow(value, 'jobs');
  return { id: text(r, 'jobs', 'id'), pid: numOrNull(r, 'jobs', 'pid'), pidStart: numOrNull(r, 'jobs', 'pid_start') };
}

/** One text column of a row (an id, a status). */
export function decodeText(value: unknown, table: string, col: string): string {
  return text(readRow(value, table), table, col);
}

/** One number column of a row (a count, a sequence number). */
export function decodeNumber(value: unknown, table: string, col: string): number {
  return num(readRow(value, table), table, col);
}

/** One number column that may be null (an unknown spend). */
export function decodeNumberOrNull(value: unknown, table: string, col: string): number | null {
  return numOrNull(readRow(value, table), table, col);
}

/** Columns and values of an UPDATE's SET list. */
export interface SetList {
  columns: string[];
  values: unknown[];
}

const jsonOrNull = (v: object | null | undefined): string | null =>
  v === null || v === undefined ? null : JSON.stringify(v);
const plain = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

type Encoders<P> = { [K in keyof Required<P>]: readonly [column: string, encode: (v: P[K]) => unknown] };

const JOB_ENCODERS: Encoders<JobPatch> = {
  status: ['status', plain],
  phase: ['phase', plain],
  verdict: ['verdict', plain],
  error: ['error', plain],
  started: ['started', plain],
  finished: ['finished', plain],
  result: ['result_json', jsonOrNull],
  checkpoint: ['checkpoint_json', jsonOrNull],
  pid: ['pid', plain],
  pidStart: ['pid_start', plain],
  spec: ['spec_json', jsonOrNull],
};

const ATTEMPT_ENCODERS: Encoders<AttemptPatch> = {
  status: ['status', plain],
  outcome: ['outcome', plain],
  started: ['started', plain],
  finished: ['finished', plain],
  pgid: ['pgid', plain],
  pgStart: ['pg_start', plain],
  lastEvent: ['last_event', plain],
  state: ['state_json', jsonOrNull],
  report: ['report_json', jsonOrNull],
  machine: ['machine_json', jsonOrNull],
};

function encodePatch<P extends object>(patch: P, encoders: Encoders<P>): SetList {
  const columns: string[] = [];
  const values: unknown[] = [];
  for (const key of Object.keys(encoders) as (keyof P)[]) {
    if (!(key in patch)) continue;
    const [column, encode] = encoders[key];
    columns.push(column);
    values.push(encode(patch[key]));
  }
  return { columns, values };
}

/** A job patch as the jobs columns it sets. */
export function encodeJobPatch(patch: JobPatch): SetList {
  return encodePatch(patch, JOB_ENCODERS);
}

/** An attempt patch as the attempts columns it sets. */
export function encodeAttemptPatch(patch: AttemptPatch): SetList {
  return encodePatch(patch, ATTEMPT_ENCODERS);
}

/** The `spec_json` of a job. */
export function encodeSpec(spec: JobSpec): string {
  return JSON.stringify(spec);
}
