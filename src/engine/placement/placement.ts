import type { Runner } from '../../runners/contract.js';

/**
 * Where a job's attempts work and where their evidence and verification are made (issue 12):
 * `shared` (the workspace, under its lock: one place for the whole job), `worktree` (a worktree
 * and branch per task, spec 06); `remote` (a node's clone, issue 17) later.
 */
export interface Placement {
  /** `shared`, `worktree`, `remote`: recorded with the attempts. */
  readonly kind: string;
  /** Waits for the place; null when the job was cancelled while it waited. */
  acquire(job: PlacementRequest): Promise<Place | null>;
}

/** What a placement needs of the job it places. */
export interface PlacementRequest {
  jobId: string;
  workspace: string;
  /** The task placed, for a placement with a place per task (worktrees); a shared placement places the whole job. */
  task?: string;
  signal: AbortSignal;
  /** Says what the job waits for (a phase message). */
  onWait(message: string): void;
}

/** A place held: the folder the attempts work in, and its rules. */
export interface Place {
  /** The folder the workers run in and the evidence and verification are made of. */
  readonly workspace: string;
  /**
   * One attempt's turn in the place: in a shared workspace a runner that cannot share it (agent
   * CLIs, `shell`: spec 06) waits for the others; a runner that can returns at once.
   */
  turn(runner: Runner): Promise<() => void>;
  /** Variables its workers get besides their allowlisted environment (a worktree's `GAFFER_PORT`). */
  readonly env?: Readonly<Record<string, string>>;
  /** Why no worker can start here (a worktree whose setup command failed): each attempt ends with it. */
  readonly failure?: string;
  /**
   * Puts back what gaffer's own use of the place needs and a step of work broke — a worktree's
   * `.git` file, which a worker could point at another repository to steer gaffer's git calls and
   * hide files from the evidence — and names it (relative to `workspace`): a write of every worker
   * of the step outside any policy.
   */
  repair?(): string[];
  /** A checkout of gaffer's own (a task's worktree), not the user's: the user's `git status` does not describe it. */
  readonly isolated?: boolean;
  /** Lets go of the place (idempotent). */
  release(): void;
}
