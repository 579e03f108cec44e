import type { WorkerRole } from '../domain/status.js';
import type { LimitKind, NetworkMode, RunnerReport, StateDetection } from '../domain/runner-report.js';
import type { SteerMessage } from '../domain/steer.js';
import type { LimitKind as PlatformLimitKind } from '../platform/process/limits.js';
import type { NetworkMode as PlatformNetworkMode } from '../platform/sandbox/network.js';

/** True when A and B are the same union: the report's words must stay platform's. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// a typecheck error here means domain/runner-report.ts and platform/ name different limits or networks
const reportWordsAgree: [Same<LimitKind, PlatformLimitKind>, Same<NetworkMode, PlatformNetworkMode>] = [true, true];

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
  /** A `models.<name>` the attempt's roster entry names (issue 14: an agent CLI is pointed at it; issue 34: builtin's calls go there); absent: the runner's own. */
  endpoint?: string;
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
  /**
   * Messages sent to the task while it runs (issue 16 "steering"): a runner that `takesInput` takes
   * them before each model call and puts them in the conversation; taking one is its delivery.
   * Absent, or a runner that takes no input mid-run: they wait for the task's follow-up.
   */
  inbox?: { take(): SteerMessage[] };
  /** Aborted on cancel. */
  signal: AbortSignal;
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
  /**
   * True for a model-driven agent (builtin, the agent CLIs): it is given gaffer's handoff prompt
   * (spec 05). Absent: the instruction as written (`shell` runs it as a command).
   */
  readonly takesPrompt?: boolean;
  /** True when a running worker reads messages sent to it (`inbox`) at its next turn (builtin); absent: a steer waits for the task's follow-up. */
  readonly takesInput?: boolean;
  /** True when a run would be confined by the sandbox here (`gaffer runners`); absent: never. */
  readonly sandboxed?: boolean;
  /** False when the config turns it off (`runners.<key>.enabled`): it refuses every task; absent: on. */
  readonly enabled?: boolean;
  /** What keeps it off (the config key and where it was set); null or absent when on. */
  readonly disabledBy?: string | null;
  /**
   * Refuses a task this runner cannot do before anything starts (spec 04 "Vetting"): throws a
   * GafferError (`runner_disabled`, `runner_not_installed`, `model_endpoint_missing`, …) naming `field`.
   */
  vet?(task: { model: string | null; endpoint?: string }, field: string): void;
  /** Refuses (GafferError naming `field`) a `models.<name>` this runner cannot be pointed at; absent: the runner takes none. */
  vetEndpoint?(name: string, field: string): void;
  /** One answer from the runner's model with no tools (`builtin`: the roster's judge, spec 05), on `endpoint` (a `models.<name>`) when given; absent where the runner cannot. */
  complete?(request: {
    system: string;
    prompt: string;
    model: string | null;
    endpoint?: string;
    timeoutMs: number;
  }): Promise<string>;
  run(input: RunnerInput): Promise<RunnerReport>;
}
