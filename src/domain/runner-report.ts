// What a runner reports when a worker ends (spec 04): plain data the engine settles, the
// verification reads and the store keeps, so none of them imports the runners.
import type { DetectedState, WorkerOutcome, WorkerStatus } from './status.js';
import type { WriteAuditVerdict } from './write-policy.js';
import type { Spend } from './spend.js';

/** The network a run had (the sandbox's words; runners/contract.ts checks they match platform's). */
export type NetworkMode = 'none' | 'outbound' | 'host';
/** A limit that can end a worker (issue 11; runners/contract.ts checks it matches platform's). */
export type LimitKind = 'processes' | 'memory';

/** A state a worker's output proved (spec 04 "Detected states"). */
export interface StateDetection {
  /** The detected state. */
  state: DetectedState;
  /** Why, in words (the rule's description). */
  why: string;
  /** The literal text that matched. */
  matched: string;
  /** The rule's confidence, 0..1. */
  confidence: number;
}

/** A refusal the runner made on the worker's behalf (builtin command guard, write scope). */
export interface Refusal {
  tool: string;
  why: string;
  count: number;
}

/** What every runner returns (spec 04). A worker's end is a record, never a throw. */
export interface RunnerReport {
  status: WorkerStatus;
  outcome: WorkerOutcome;
  exitCode: number | null;
  /** Signal that ended the process, when one did. */
  signal: string | null;
  timedOut: boolean;
  isCancelled: boolean;
  /** `complete`, `exit_nonzero`, `timeout`, `cancelled`, `spawn_failed`, `signal`, … */
  stopReason: string;
  error: string | null;
  /** The worker's last words (tail of its output for shell). */
  summary: string;
  /** Files the worker claims it changed (empty when the runner files no claim). */
  filesChanged: string[];
  /** True when the runner files claims at all (an external agent never does). */
  makesClaims: boolean;
  rounds: number;
  toolCalls: number;
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  durationMs: number;
  session: string | null;
  modelServed: string | null;
  /** The last detected state, when any. */
  detection: StateDetection | null;
  refusals: Refusal[];
  sandboxed: boolean;
  /** Which network the run had (sandbox/network.ts): `none`, `outbound` or `host`; absent when it never started. */
  network?: NetworkMode;
  /**
   * spec 06's mutation audit of what it wrote, set by the engine once its evidence is taken: `ok`,
   * `violation` (the paths are in `error`) or `failed-no-mutation`; absent before, or when it never ran.
   */
  writeAudit?: WriteAuditVerdict;
  /**
   * What the evidence saw change on disk in the step this attempt ran in (spec 06's change summary,
   * set with the audit): `2 modified, 1 added`; `nothing`; with `(a step shared by N workers)` when
   * workers shared the workspace at once and their writes cannot be told apart.
   */
  observed?: string;
  /** What the attempt cost in its billing's unit (issue 15), set by the engine when it ends; unknown amounts are null. */
  spend?: Spend;
  /** The limit (issue 11) that ended the worker, when one did: `stopReason` is then `process_limit`/`memory_limit`. */
  limit?: LimitKind;
  /**
   * Rate-limited workers (`status: 'rate_limited'`): seconds until the provider's limit resets,
   * from its own headers; null when it named no time (the engine then backs off, spec 04).
   */
  retryAfterS?: number | null;
}
