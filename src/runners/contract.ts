import type { DetectedState, WorkerOutcome, WorkerRole, WorkerStatus } from '../domain/status.js';
import type { LimitKind } from '../platform/process/limits.js';
import type { NetworkMode } from '../platform/sandbox/network.js';

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

/** What every runner takes (spec 04 "The runner contract"). */
export interface RunnerInput {
  /** Job id, for log and instruction file names. */
  jobId: string;
  /** Worker name (`worker-1`, `api-fix`, `fixer-1`). */
  workerName: string;
  /** Attempt number of this task, from 1. */
  attempt: number;
  role: WorkerRole;
  /** The worker's full instruction text. */
  instruction: string;
  /** Absolute workspace (or worktree) path; the child's cwd. */
  workspace: string;
  /** `shell` runner: the command line to run (else the instruction is run). */
  command: string | null;
  model: string | null;
  /** Hard per-worker timeout, ms. */
  timeoutMs: number;
  maxRounds: number;
  /** Resume handle of an earlier session, when the runner can resume. */
  resume: string | null;
  /** Paths the worker may write (relative); empty = the whole workspace. */
  files: string[];
  /**
   * The task's declared `outputs` (relative), when the engine tells them apart from `files`:
   * a reviewer may write only these (spec 06); absent = none known.
   */
  outputs?: string[];
  /** Run under the sandbox when one is available. */
  sandbox: boolean;
  /** The parent environment: the runner builds its child's allowlisted env from it (platform/process/env.ts `buildWorkerEnv`). */
  env: NodeJS.ProcessEnv;
  /** Where the capped output log goes. */
  logFile: string;
  /** Where the instruction text is written (`GAFFER_INSTRUCTION_FILE`). */
  instructionFile: string;
  /** Called with each chunk of output lines (already split, no trailing newline). */
  onOutput?: (lines: string[]) => void;
  /** Called when a detected state first appears or changes. */
  onState?: (detection: StateDetection) => void;
  /** Called once the child exists: its process group id and start time (epoch s), to be stored. */
  onSpawn?: (info: { pgid: number; startedAt: number }) => void;
  /** Aborted on cancel. */
  signal: AbortSignal;
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
  /** The limit (issue 11) that ended the worker, when one did: `stopReason` is then `process_limit`/`memory_limit`. */
  limit?: LimitKind;
  /**
   * Rate-limited workers (`status: 'rate_limited'`): seconds until the provider's limit resets,
   * from its own headers; null when it named no time (the engine then backs off, spec 04).
   */
  retryAfterS?: number | null;
}

/** A way to run a worker. */
export interface Runner {
  /** `shell`, `builtin`, `claude`, … */
  readonly key: string;
  /** True when a fix round can continue this runner's session. */
  readonly canResume: boolean;
  /**
   * True when parallel workers of this runner may share one workspace (builtin, under file locks).
   * Absent or false: one at a time in a shared workspace (spec 06: agent CLIs and `shell`).
   */
  readonly sharesWorkspace?: boolean;
  /**
   * True for a third-party agent program (the agent CLIs). Such a worker running unsandboxed
   * costs the proof `external_agent_unsandboxed` (spec 04); `shell` and `builtin` are not external.
   */
  readonly external?: boolean;
  /** True when a run would be confined by the sandbox here (`gaffer runners`); absent: never. */
  readonly sandboxed?: boolean;
  /**
   * Refuses a task this runner cannot do before anything starts (spec 04 "Vetting"): throws a
   * GafferError (`runner_disabled`, `runner_not_installed`, `model_endpoint_missing`, …) naming `field`.
   */
  vet?(task: { model: string | null }, field: string): void;
  run(input: RunnerInput): Promise<RunnerReport>;
}
