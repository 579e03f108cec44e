import type { SandboxNetwork } from '../../platform/sandbox/network.js';
import type { Sandbox } from '../../platform/sandbox/sandbox.js';
import type { FileLocks, LockHolder } from './file-locks.js';
import type { GuardScope } from './guard-read.js';
import type { WriteScope } from './write-scope.js';

/** What the builtin agent's tools work with: one worker's workspace, scope, locks and limits. */
export interface ToolContext {
  /** The workspace's real path. */
  root: string;
  /** The worker's write policy (spec 06). */
  scope: WriteScope;
  /** The shared lock table and this worker's identity in it. */
  locks: FileLocks;
  holder: LockHolder;
  /** Where the command guard judges from. */
  guard: GuardScope;
  /** The environment `run_command` children get (scrubbed; never the model key). */
  env: NodeJS.ProcessEnv;
  /** Aborts running commands when the worker is stopped. */
  signal: AbortSignal;
  /** Longest a command may run, ms. */
  commandTimeoutMs: number;
  /** Output of a command kept for the model, bytes (its newest part). */
  commandOutputBytes: number;
  /** Wraps each command, when the worker runs sandboxed (the engine's sandbox: platform/sandbox/sandbox.ts). */
  sandbox?: Sandbox;
  /** Each command's network in the sandbox; default `none`. */
  network?: SandboxNetwork;
  /** Told whether each command ran sandboxed. */
  onCommandSandboxed?: (sandboxed: boolean) => void;
  /** Each command's process group once it exists (stored, so a restarted gaffer can kill survivors, spec 04). */
  onSpawn?: (info: { pgid: number; startedAt: number }) => void;
  /** Where a command's output lines go (the transcript), when anywhere. */
  onCommandOutput?: (lines: string[]) => void;
}

/** How one tool call ended. Refusals are not failures (spec 04). */
export type ToolOutcome =
  | {
      status: 'ok';
      /** What the model is told. */
      text: string;
      /** Workspace-relative path the call wrote, when it wrote one (the worker's claim). */
      wrote?: string;
    }
  | { status: 'failed'; text: string }
  | {
      status: 'refused';
      text: string;
      /** The reason recorded in `refusals` (`lock held by worker-2`, the guard's reason, …). */
      why: string;
      /** True when the refusal is another worker's file lock. */
      isLockConflict?: boolean;
    };

/** A refusal outcome: the model reads why, so it can change course. */
export function refused(why: string, opts: { isLockConflict?: boolean; told?: string } = {}): ToolOutcome {
  return {
    status: 'refused',
    why,
    text: `REFUSED by gaffer: ${opts.told ?? why}. This was not run; choose another way.`,
    ...(opts.isLockConflict === true ? { isLockConflict: true } : {}),
  };
}

/** A failure outcome. */
export function failed(text: string): ToolOutcome {
  return { status: 'failed', text: `ERROR: ${text}` };
}
