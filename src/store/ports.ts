import type { AskJson } from '../domain/approval.js';
import type { Attempt } from '../domain/attempt-machine.js';
import type { OutcomeCount } from '../domain/acceptance.js';
import type { OutcomeRecord } from '../domain/outcome.js';
import type { ObjectiveEvidence } from '../domain/objectives.js';
import type { JobSpec } from '../domain/request.js';
import type { JobEvent, NewJobEvent } from '../domain/events.js';
import type { JobResult } from '../domain/result.js';
import type { DetectedState, JobStatus, WorkerOutcome, WorkerRole, WorkerStatus } from '../domain/status.js';
// type-only: the row shapes of what evidence and runners hand the engine to keep (issue 12 moves them to domain)
import type { Snapshot } from '../domain/snapshot.js';
import type { RunnerReport } from '../domain/runner-report.js';
import type { BudgetUnit, SpendPoint } from '../domain/budget.js';
import type { Spend } from '../domain/spend.js';

/** Events a job keeps in the store (spec 02: the newest 5,000). */
export const EVENTS_KEPT = 5_000;

/** The snapshots a job keeps on its row: the checkpoint before the work and the last one after it. */
export interface JobSnapshots {
  /** The checkpoint taken before any worker started. */
  pre: Snapshot;
  /** The last snapshot after the work (set once the workers and fix rounds are over). */
  post?: Snapshot;
}

/** A job row as stored. */
export interface JobRow {
  id: string;
  /** The owner of a token-authenticated job; null for the local user. */
  owner: string | null;
  title: string;
  workspace: string;
  status: JobStatus;
  phase: string | null;
  verdict: string | null;
  error: string | null;
  /** Epoch seconds. */
  created: number;
  started: number | null;
  finished: number | null;
  /** The normalized request; its `tasks` are the job's tasks (there is no tasks table: migration 0003). */
  spec: JobSpec;
  /** Evidence, verification, proof … as far as known. */
  result: JobResult | null;
  checkpoint: JobSnapshots | null;
  /** The process running the job while it is live, and its start time against pid reuse. */
  pid: number | null;
  pidStart: number | null;
  cancelRequested: boolean;
  idemKey: string | null;
  requestHash: string | null;
  /** The job's last event sequence number. */
  seq: number;
}

/** A detected state kept on an attempt row: a runner's detection, or a rate-limited wait with its reset time. */
export interface AttemptState {
  state: DetectedState;
  why: string;
  /** The literal text that matched. */
  matched: string;
  /** The rule's confidence, 0..1 (a detection's). */
  confidence?: number;
  /** Epoch seconds when a rate-limited worker runs again (spec 04). */
  retry_at?: number;
}

/** One attempt (worker) row. */
export interface AttemptRow {
  jobId: string;
  /** The worker name: the task's name, or fixer-N. */
  worker: string;
  /** The task it works on. */
  task: string;
  attempt: number;
  role: WorkerRole;
  runner: string;
  model: string | null;
  /** The roster entry and provider its route came from (spec 05); null when the task named its runner. */
  entry: string | null;
  provider: string | null;
  status: WorkerStatus;
  outcome: WorkerOutcome | null;
  queuedAt: number;
  started: number | null;
  finished: number | null;
  pgid: number | null;
  pgStart: number | null;
  lastEvent: string | null;
  state: AttemptState | null;
  /** The worker's full report once it ended. */
  report: RunnerReport | null;
  logFile: string | null;
  /** Its place in the job's list of workers. */
  ord: number;
  /** Why it moved to a fallback entry (issue 15); null when it runs where it was routed. */
  routeWhy: string | null;
  /** Where the attempt machine has it, as of its last move; null on rows written before the machine's state was stored. */
  machine: Attempt | null;
}

/** The fields an attempt is inserted with; the rest start out null. */
export type NewAttempt = Omit<
  AttemptRow,
  'started' | 'finished' | 'pgid' | 'pgStart' | 'lastEvent' | 'state' | 'report' | 'outcome' | 'routeWhy' | 'machine'
> & { machine?: Attempt };

export type { JobEvent, NewJobEvent } from '../domain/events.js';

/** Who holds a workspace lock. */
export interface LockHolder {
  workspace: string;
  jobId: string;
  pid: number;
  pidStart: number;
}

/** An approval ask of a job's task (spec 05), with its answer once given. */
export interface AskRow {
  jobId: string;
  ask: AskJson;
  /** Epoch s. */
  opened: number;
  answered: number | null;
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

/** Fields of a job that change over its life. */
export interface JobPatch {
  status?: JobStatus;
  phase?: string | null;
  verdict?: string | null;
  error?: string | null;
  started?: number | null;
  finished?: number | null;
  result?: JobResult | null;
  checkpoint?: JobSnapshots | null;
  pid?: number | null;
  pidStart?: number | null;
  /** The spec with what the checkpoint decided (spec 07: the objectives read, an impact `task_order`); its tasks never change. */
  spec?: JobSpec;
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
  state?: AttemptState | null;
  report?: RunnerReport | null;
  machine?: Attempt;
}

/** A job to insert, with its idempotency key's window. */
export interface NewJob {
  id: string;
  owner: string | null;
  spec: JobSpec;
  created: number;
  idemKey: string | null;
  requestHash: string | null;
  /** Seconds a key stays taken (spec 02 "Idempotency"). */
  idemWindowS: number;
  pid: number;
  pidStart: number;
}

/** The answer of `tryLockWorkspace`. */
export type LockAttempt = { ok: true } | { ok: false; holder: LockHolder; isHolderDead: boolean };

/** `recent` counts of spec 02 `/api/stats` (a type, not an interface: it is also a `Record<string, number>`). */
export type RecentCounts = {
  jobs: number;
  done: number;
  partial: number;
  /** `error` and `interrupted`. */
  failed: number;
  cancelled: number;
  live: number;
};

/** Jobs: admission (with idempotency), their life's patches, cancel requests, listing and retention. */
export interface JobStore {
  /**
   * Inserts a job; with an idempotency key, returns the job that already holds the key (same
   * owner, within `idemWindowS`) instead, atomically across processes. `vet` runs only when a new
   * job would be inserted, inside the same transaction: a throw refuses it with nothing written.
   */
  insertJob(job: NewJob, vet?: () => void): { job: JobRow; created: boolean };
  getJob(id: string): JobRow | null;
  /** Recent jobs, newest first. */
  listJobs(opts: { limit: number; status?: string | undefined; owner?: string | null | undefined }): JobRow[];
  /** Jobs in a live status. */
  listLiveJobs(): JobRow[];
  /** Whether any process has a job in a live status. */
  hasLiveJobs(): boolean;
  updateJob(id: string, patch: JobPatch): void;
  /**
   * Marks a job interrupted only while it still has `fromStatus`: true for the one caller that
   * did (two processes may recover the same dead holder's job).
   */
  claimInterrupted(id: string, fromStatus: JobStatus, change: { finished: number; error: string }): boolean;
  /** Marks a job to be cancelled by whichever process runs it. */
  requestCancel(id: string): void;
  /** Ids of live jobs run by `pid` whose cancel was asked for (from any process). */
  listCancelRequested(pid: number): string[];
  /** Who runs each live job: the periodic look for dead holders (spec 07). */
  listLiveJobHolders(): { id: string; pid: number | null; pidStart: number | null }[];
  /** Deletes finished jobs beyond the newest `keep`, returning their ids. */
  pruneFinishedJobs(keep: number): string[];
  countRecent(owner: string | null): RecentCounts;
  /**
   * Wall-clock seconds (`finished - started`) of the newest `limit` jobs in exactly `workspace` that
   * ran to an end (`done`, `partial`, `error`), newest first: one indexed range (spec 07 "Adaptive ceiling").
   */
  recentDurations(workspace: string, limit: number): number[];
  /** Ids of every job still stored. */
  listJobIds(): Set<string>;
}

/** The attempts ledger (spec 06): one row per worker of a job. */
export interface AttemptStore {
  insertAttempt(a: NewAttempt): void;
  updateAttempt(jobId: string, worker: string, patch: AttemptPatch): void;
  /** A job's attempts in their order. */
  listAttempts(jobId: string): AttemptRow[];
}

/** A job's numbered events (spec 02 "Live events"), the newest EVENTS_KEPT kept. */
export interface EventStore {
  /** Appends an event with the job's next sequence number; `patch` is written in the same transaction. */
  appendEvent(jobId: string, event: NewJobEvent, patch?: JobPatch): JobEvent;
  /**
   * Appends events numbered in their order, and `patch`, in one transaction: one commit where a
   * status change and the phase it starts would take two (each commit is a WAL write on the caller's thread).
   */
  appendEvents(jobId: string, events: readonly NewJobEvent[], patch?: JobPatch): JobEvent[];
  /** Events after `afterSeq`, oldest first. */
  listEvents(jobId: string, afterSeq?: number, limit?: number): JobEvent[];
}

/** One job per workspace across processes, nested paths colliding (spec 06). */
export interface LockStore {
  /** Takes the lock unless another job holds the same or a nested path; a dead holder is named, not freed. */
  tryLockWorkspace(workspace: string, jobId: string, pid: number, pidStart: number): LockAttempt;
  /** Releases whatever lock a job holds. */
  releaseWorkspace(jobId: string): void;
  /** Releases one lock row, only while `jobId` still holds it. */
  releaseLock(workspace: string, jobId: string): void;
}

/** The process groups a job runs besides its workers, so a restart can stop what a dead gaffer left. */
export interface JobProcessStore {
  recordJobProcess(p: JobProcessRow): void;
  forgetJobProcess(jobId: string, pgid: number): void;
  listJobProcesses(jobId: string): JobProcessRow[];
}

/** The outcome log's rows (spec 05): one per task per job, kept past the job's own retention. */
export interface OutcomeStore {
  /** Logs a task's outcome with its job's owner; false when the job already logged one for the task (nothing written). */
  recordOutcome(record: OutcomeRecord, owner: string | null): boolean;
  /** Outcomes counted by (type, runner, model, provider, status), of one owner's jobs or (null) of all. */
  countOutcomes(owner: string | null): OutcomeCount[];
  /** Per roster entry, a type's accepted and counted outcomes (the learning router, spec 05). */
  entryAcceptance(type: string): Map<string, { accepted: number; total: number }>;
}

/** The evidence jobs left on the objectives they named (spec 07), kept past the jobs' own retention. */
export interface ObjectiveEvidenceStore {
  /** Records a job's evidence, one row per objective, with its owner; a row the job already recorded is kept as it was. */
  recordObjectiveEvidence(rows: readonly ObjectiveEvidence[], owner: string | null): void;
  /** Evidence records oldest first: a job's, or those of an objective (or all) of a workspace. */
  listObjectiveEvidence(by: { jobId: string } | { workspace: string; objective?: string }): ObjectiveEvidence[];
}

/** A provider's suspension (issue 15): every attempt for it waits until `until` (epoch s). */
export interface ProviderSuspension {
  provider: string;
  until: number;
  why: string;
  since: number;
}

/** A finished unattended job, as the breaker reads it (domain/breaker.ts). */
export interface UnattendedEndRow {
  id: string;
  status: JobStatus;
  finished: number;
  workersDone: number;
  workers: number;
}

/** What budgets, the breaker and provider suspensions read and write (spec 07, issue 15). */
export interface OperationsStore {
  /** Records an attempt's spend (null amounts unknown) and its billing. */
  recordSpend(jobId: string, worker: string, spend: Spend): void;
  /** Spend points in `unit` of the attempts on `provider` (an entry's provider, else its runner key), of one entry or all, that finished since `since`. */
  spendSince(q: { provider: string; entry: string | null; unit: BudgetUnit; since: number }): SpendPoint[];
  /** Moves a not-yet-finished attempt to another route, saying why (a provider fallback). */
  rerouteAttempt(
    jobId: string,
    worker: string,
    route: { runner: string; model: string | null; entry: string | null; provider: string | null },
    why: string,
  ): void;
  /** Suspends a provider until `until`, or keeps a later suspension already set. */
  suspendProvider(s: ProviderSuspension): void;
  /** Suspensions still in force at `now`. */
  listSuspensions(now: number): ProviderSuspension[];
  /** Live jobs other than `except` that are not unattended and have an attempt on `provider`. */
  liveInteractiveOn(provider: string, except: string): string[];
  /** Finished unattended jobs, newest first. */
  recentUnattendedEnds(limit: number): UnattendedEndRow[];
  /**
   * Live jobs with an attempt waiting on `provider`: held (`provider_suspended`, `budget_paused`) or
   * requeued `rate_limited` until its reset (`retry_at`). A worker that only printed a limit (a detected
   * state: reported, never a wait) is not waiting.
   */
  jobsWaitingOn(provider: string): string[];
}

/**
 * Everything the engine keeps, one interface per aggregate; the SQLite `Store` implements it and
 * test/store/contract.test.ts is the suite any other implementation runs.
 */
export interface GafferStore
  extends
    JobStore,
    AttemptStore,
    EventStore,
    LockStore,
    JobProcessStore,
    OutcomeStore,
    OperationsStore,
    ObjectiveEvidenceStore {
  close(): void;
}
