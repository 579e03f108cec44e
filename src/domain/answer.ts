import type { JobSpec } from './request.js';
import type { JobResult, TotalsJson, VerificationJson } from './result.js';
import type { JobStatus } from './status.js';

/*
 * The public answer of spec 03, compact and full (`?full=1`): what every door returns for a job.
 * Built by engine/compact.ts from the store's rows; typed here so the doors read it without casts.
 */

/** A worker row of the answer (spec 03); without `full`, fields that are 0, null or empty are left out (see CompactWorkerEntry). */
export interface CompactWorker {
  name: string;
  role: string;
  attempt: number;
  runner: string;
  model: string | null;
  status: string;
  outcome: string | null;
  stop_reason: string | null;
  error: string | null;
  rounds: number;
  tool_calls: number;
  failed_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  duration_s: number | null;
  files_changed: string[];
  summary: string;
  sandboxed: boolean;
  /**
   * The network it had (`outbound`, `host`; `none` — a loopback of its own — is left out of the
   * compact answer as the nothing-happened value, shown with `?full=1`); null when it never started.
   */
  network: 'none' | 'outbound' | 'host' | null;
  /** The detected state, when any, and why. */
  state?: string;
  why?: string;
  /** Tool calls the sandbox or policy refused, counted per tool. */
  refusals?: { tool: string; why: string; count: number }[];
  /** The runner's session id, when it has one (a fix round can continue it). */
  session?: string;
}

/** The fields a worker row always has, even in the compact answer. */
export type CompactWorkerKept = 'name' | 'role' | 'attempt' | 'runner' | 'status' | 'outcome' | 'sandboxed';

/** A worker row as answered: the kept fields always, the rest when they say something (all of them with `full`). */
export type CompactWorkerEntry = Pick<CompactWorker, CompactWorkerKept> & Partial<CompactWorker>;

/** The verification in the compact answer: `related_files_count` when `related_files` was cut. */
export type CompactVerification = VerificationJson & { related_files_count?: number };

type ChangesJson = NonNullable<JobResult['changes']>;

/** The fields of `changes` always said, even when nothing changed. */
export type CompactChangesKept = 'source' | 'checkpoint' | 'count' | 'added' | 'modified' | 'deleted';

/** `changes` as answered: the kept fields always, the flags and lists of the unusual when they hold something. */
export type CompactChanges = Pick<ChangesJson, CompactChangesKept> & Partial<ChangesJson>;

/** The answer's `result`: the workers' rows and what the job has learnt so far (the job result less its internal counters). */
export interface CompactResult extends Partial<Omit<JobResult, 'fix_rounds_run' | 'verification' | 'changes' | 'totals'>> {
  workers: CompactWorkerEntry[];
  verification?: CompactVerification | null;
  changes?: CompactChanges | null;
  /** Without `full`, only the totals that are not 0. */
  totals?: Partial<TotalsJson>;
}

/** A live worker's entry in `progress`. */
export interface ProgressEntry {
  last_event: string;
  round: number | null;
  elapsed_s: number;
  last_tool: string | null;
  state: string | null;
  why?: string;
  matched?: string;
}

/** A task as the answer lists it; `model` is left out of the compact answer when the task names none. */
export interface AnswerTask {
  name: string;
  instruction: string;
  files: string[];
  runner: string;
  model?: string | null;
  type: string;
}

/** The answer of spec 03 for one job: what a coordinator reads, never a transcript. */
export interface CompactJob {
  id: string;
  title: string;
  status: JobStatus;
  verdict: string | null;
  error: string | null;
  owner: string | null;
  workspace: string;
  created: number;
  started: number | null;
  finished: number | null;
  duration_s: number | null;
  tasks: AnswerTask[];
  parallel: boolean;
  verify: string;
  verify_scope: string;
  fix_rounds: number;
  /** The spec-lint gaps; `needs_detail` (what to add, and how) while the job is live and with `full`. */
  spec_lint?: Omit<NonNullable<JobSpec['spec_lint']>, 'needs_detail'> & Partial<Pick<NonNullable<JobSpec['spec_lint']>, 'needs_detail'>>;
  criteria?: string[];
  /** Present once the job has a result or a worker row. */
  result?: CompactResult;
  /** Live jobs only, like `phase`, `ceiling_s` and `wait_again`. */
  progress?: Record<string, ProgressEntry>;
  phase?: string | null;
  ceiling_s?: number;
  wait_again?: boolean;
}
