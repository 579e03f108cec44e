import type { TaskGatesJson } from './gates.js';
import type { EscalationJson } from './escalation.js';
import type { ChangesJson } from './changes.js';
import type { CheckingJson } from './checking.js';

/** The `verification` JSON of spec 03. */
export interface VerificationJson {
  mode: 'off' | 'auto' | 'command' | 'configured';
  ran: boolean;
  /** true passed, false failed, null not verified (never "passed"). */
  ok: boolean | null;
  inconclusive: boolean;
  kind: string | null;
  command: string | null;
  scope: 'related' | 'all' | null;
  related_files?: string[];
  exit_code: number | null;
  timed_out: boolean;
  duration_s: number;
  blocking: boolean;
  summary: string;
  failures: string[];
  new_failures: string[];
  pre_existing: string[];
  /** It failed and blocks nothing: every failure was there before the work (a job that changes nothing) or is declared known. */
  pre_existing_only?: boolean;
  /** Issue 33: failing ids the request or the committed hints declare known (`verify.known_failures`): not this job's to fix. */
  known_failures?: string[];
  /** Issue 33: tests that ran at the checkpoint (same command) and did not run after the work: the suite stopped early. */
  missing_tests?: string[];
  /** Issue 33: how many tests failed at the checkpoint (same command), when it ran and some did. */
  checkpoint_failures?: number;
  /** Issue 33: of those, the ones that pass now (with `checkpoint_failures`). */
  fixed?: string[];
  flaky: string[];
  output_matched?: boolean;
  output_tail: string;
  /** Each non-flaky failing test's report in the run's output: its assertion, expected/actual, stack head (issue 33; bounded). */
  failure_details?: { id: string; excerpt: string }[];
  attempts: number;
  previous?: { summary: string; failures: string[] }[];
  /** Test files or runner config the workers edited (spec 03 "Test weakening"). */
  tests_touched?: string[];
  /** Tests that ran before the work and are gone or skipped after it. */
  tests_weakened?: string[];
  /** The checkpoint's tests and harness run against the new code, when the workers changed tests or the harness. */
  original_tests?: OriginalTestsJson;
  /** The command could not start (exit 126/127, not found, not executable): named first on the verdict. */
  could_not_start?: true;
  /** Paths outside the workspace the read-only sandbox refused to let the run write (a failed or inconclusive run's likely cause). */
  sandbox_refused?: string[];
  /** The limit that ended the run (issue 11): the summary names it with its value. */
  limit?: 'processes' | 'memory';
  /** The full suite of the final state, run once after a `related` verification passed (spec 03 "Scope"). */
  confirms_related?: { related_files: number; summary: string };
  /** Issue 33: the steps of the test script `verify: "auto"` left out (lint, type-check, audit), in words. */
  left_out?: string[];
  /** Issue 33: an inconclusive run of a test script that runs more than tests: the `verify.command` that would settle it. */
  advice?: string;
  /** Issue 33: where the job's checking time went (on the final verification): every run, by kind. */
  checking?: CheckingJson;
  /** Workspace files `verify: "auto"` did not go by (issue 32): a hints file that is not HEAD's, a manifest that is a FIFO, a device, a link out or a giant — each with why. */
  ignored_files?: string[];
}

/** The checkpoint's tests judging the work (spec 03). */
export interface OriginalTestsJson {
  /** false when no copy could be made (then `summary` says why, and nothing is proved). */
  ran: boolean;
  /** true: they pass on the new code; false: they fail; null: they did not decide. */
  ok: boolean | null;
  command?: string;
  /** The test and harness files the workers changed (restored from the checkpoint in the copy). */
  changed: string[];
  summary: string;
  failures: string[];
  flaky?: string[];
  /** A failure here blocks: the task was not allowed to change tests. */
  blocking: boolean;
  tests_may_change: boolean;
}

export interface Uncertainty {
  code: string;
  detail: string;
  penalty: number;
}

/** The `proof` JSON of spec 03. */
export interface ProofJson {
  verdict: 'proved' | 'partial' | 'unproved' | 'contradicted';
  confidence: number;
  shown: string[];
  uncertainty: Uncertainty[];
}

export interface ConvergenceJson {
  converged: boolean;
  score: number;
  confidence: 'high' | 'medium';
  reason: string;
}

export interface CriteriaCheckJson {
  complete: boolean;
  met: string[];
  unmet: string[];
  unchecked: string[];
  /** Why each unmet criterion, and each recognized one that could not be checked, came out so; absent when none. */
  details?: CriterionDetail[];
}

/** One criterion's check, when it was not met. */
export interface CriterionDetail {
  /** As listed in met/unmet/unchecked (per-task ones as `task: criterion`). */
  criterion: string;
  /** The form it was checked as: `command`, `changes`, `unchanged`, `contains`, `exists`, `absent`, `parses`, `tests_pass`. */
  check: string;
  /** What was found, in a line. */
  why: string;
}

export interface TotalsJson {
  tool_calls: number;
  failed_calls: number;
  rounds: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  /** The job's spend in words (issue 15); absent on jobs stored before it was recorded. */
  spend?: string;
  errors: number;
  cancelled: number;
}

/** What the engine stores on the job row as it learns it; the compact `result` minus `workers`. */
export interface JobResult {
  files_changed: string[];
  claimed_only: string[];
  changes: ChangesJson | null;
  verification: VerificationJson | null;
  criteria_check?: CriteriaCheckJson;
  convergence?: ConvergenceJson;
  stopped_by?: 'convergence';
  fix_rounds_run: number;
  /** A worktree job's branches, worktrees, classes and merge (spec 06). */
  worktrees?: WorktreesJson;
  /** The tasks' own gates (spec 05), one entry per attempt they judged, in order; absent when no task declares any. */
  gates?: TaskGatesJson[];
  /** Each climb up a task's cost ladder, and each task returned to its spawner with its autopsy (spec 05); absent when none. */
  escalation?: EscalationJson[];
  proof: ProofJson | null;
  totals: TotalsJson;
  exit_code?: number;
}

/** A branch's verification in the answer: a task's in its worktree, or the merged tree's. */
export interface BranchVerificationJson {
  /** true passed, false failed, null not verified. */
  ok: boolean | null;
  summary: string;
  /** Its failures hold the work back (VerificationJson's `blocking`): false when they were all there before the work or declared known. Absent on answers recorded before it was kept. */
  blocking?: boolean;
}

/** One task's worktree in the answer. */
export interface WorktreeTaskJson {
  task: string;
  branch: string;
  /** The branch's tip after the task (null: the task changed nothing). */
  commit: string | null;
  /** `removed` (passed: the branch stays for review), `kept` (the path is the autopsy's), `remove_refused` (passed, but git would not remove it unforced). */
  state: 'removed' | 'kept' | 'remove_refused';
  /** The worktree's path while it is kept. */
  path: string | null;
  why?: string;
  /** The paths it changed. */
  files: string[];
  port: number;
  /** How its dependencies got there, how many untracked files were copied in, its setup command. */
  setup: { deps: string[]; included: number; command: string | null };
  /** Its own verification in its worktree. */
  verification: BranchVerificationJson | null;
  /** Once a merge took the branch: `merged` (its change is in the workspace), `conflict`, or `not_merged` (the merged tree failed, or did not apply). */
  merge?: 'merged' | 'conflict' | 'not_merged';
  conflict_files?: string[];
}

/** The merged tree (`merge: "auto"`). */
export interface MergedJson {
  branch: string;
  commit: string | null;
  /** The tasks merged, in task order. */
  tasks: string[];
  /** The merged tree's verification passed and its change was applied to the workspace. */
  applied: boolean;
  /** Why not, when not. */
  why?: string;
  verification: BranchVerificationJson | null;
  /** The integration worktree's path while it is kept (a failed merge's autopsy). */
  path: string | null;
}

export interface WorktreesJson {
  base: string;
  merge: 'none' | 'auto';
  tasks: WorktreeTaskJson[];
  /** How each task was run (spec 06 "Isolation is earned"). */
  classes: { task: string; class: 'parallel' | 'sequential'; why: string }[];
  /** Files two passing branches both changed: their merge may conflict. */
  predicted_conflicts: { tasks: string[]; files: string[] }[];
  /** The merges made (`merge: "auto"`, then each `gaffer merge`), in order. */
  merges: MergedJson[];
  /** Submodules are never initialized in worktrees (spec 06). */
  submodules: 'not initialized';
}
