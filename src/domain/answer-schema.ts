import type { AskJson } from './approval.js';
import { z } from 'zod';
import type { TaskGatesJson } from './gates.js';
import type { EscalationJson } from './escalation.js';
import type { ChangesJson } from './changes.js';
import type { JobSpec } from './request.js';
import type { TaskOrder } from './phase-order.js';
import type { FollowUpLink } from './follow-up.js';
import { STEER_DELIVERIES } from './steer.js';
import type { ObjectiveEvidence, ObjectivesNote } from './objectives.js';
import type { WriteAuditVerdict } from './write-policy.js';
import type {
  ConvergenceJson,
  CriteriaCheckJson,
  OriginalTestsJson,
  ProofJson,
  TotalsJson,
  VerificationJson,
  WorktreesJson,
} from './result.js';
import { DETECTED_STATES, JOB_STATUSES, TASK_TYPES, WORKER_STATUSES } from './status.js';

/*
 * The public answer of spec 03, compact and full (`?full=1`), as one schema: domain/answer.ts
 * derives its types from it, and every door checks what it sends against it (answer-check.ts).
 * Objects are strict, so a field the engine adds or renames without the schema is named too.
 * The parts the engine stores (result.ts, changes.ts) keep their interfaces; `_SchemaMatches`
 * below fails the typecheck when a schema here and its interface stop saying the same.
 */

const strings = z.array(z.string());
const count = z.number();

/**
 * issue 33: `<list>_count` for each list the compact answer bounds — present when the list shows
 * fewer than it holds (cut at its bound, or its ids named already in an earlier list).
 */
function countsOf<const K extends readonly string[]>(
  keys: K,
): { [P in K[number] as `${P}_count`]: z.ZodOptional<z.ZodNumber> } {
  // the one cast: the entries are exactly the mapped keys
  return Object.fromEntries(keys.map((key) => [`${key}_count`, count.optional()])) as {
    [P in K[number] as `${P}_count`]: z.ZodOptional<z.ZodNumber>;
  };
}

const originalTestsSchema = z.strictObject({
  ran: z.boolean(),
  ok: z.boolean().nullable(),
  command: z.string().optional(),
  changed: strings,
  summary: z.string(),
  failures: strings,
  flaky: strings.optional(),
  blocking: z.boolean(),
  tests_may_change: z.boolean(),
});

/** The `verification` of spec 03 (VerificationJson). */
export const verificationSchema = z.strictObject({
  mode: z.enum(['off', 'auto', 'command', 'configured']),
  ran: z.boolean(),
  ok: z.boolean().nullable(),
  inconclusive: z.boolean(),
  kind: z.string().nullable(),
  command: z.string().nullable(),
  scope: z.enum(['related', 'all']).nullable(),
  related_files: strings.optional(),
  exit_code: z.number().nullable(),
  timed_out: z.boolean(),
  duration_s: z.number(),
  blocking: z.boolean(),
  summary: z.string(),
  failures: strings,
  new_failures: strings,
  pre_existing: strings,
  pre_existing_only: z.boolean().optional(),
  known_failures: strings.optional(),
  missing_tests: strings.optional(),
  checkpoint_failures: count.optional(),
  fixed: strings.optional(),
  flaky: strings,
  output_matched: z.boolean().optional(),
  output_tail: z.string(),
  failure_details: z.array(z.strictObject({ id: z.string(), excerpt: z.string() })).optional(),
  attempts: count,
  previous: z.array(z.strictObject({ summary: z.string(), failures: strings })).optional(),
  tests_touched: strings.optional(),
  tests_weakened: strings.optional(),
  original_tests: originalTestsSchema.optional(),
  could_not_start: z.literal(true).optional(),
  sandbox_refused: strings.optional(),
  limit: z.enum(['processes', 'memory']).optional(),
  confirms_related: z.strictObject({ related_files: count, summary: z.string() }).optional(),
  ignored_files: strings.optional(),
  left_out: strings.optional(),
  advice: z.string().optional(),
  checking: z
    .strictObject({
      total_s: z.number(),
      suite_s: z.number(),
      runs: z.array(z.strictObject({ what: z.string(), n: count, s: z.number() })),
    })
    .optional(),
});

/** The failing-test id lists of a verification, in the order the compact answer names their ids (engine/queries/compact-ids.ts). */
export const VERIFICATION_ID_LISTS = [
  'new_failures',
  'known_failures',
  'pre_existing',
  'flaky',
  'missing_tests',
  'fixed',
  'failures',
] as const;
/** The verification's other lists the compact answer bounds. */
export const VERIFICATION_LISTS = ['tests_touched', 'tests_weakened', 'sandbox_refused', 'ignored_files'] as const;

/**
 * The compact answer's verification (issue 33): each failing id named once, in the first of
 * VERIFICATION_ID_LISTS that holds it, every list bounded, `<list>_count` when a list shows fewer
 * than it holds; a list left empty by that is left out (so a failed job's `failures`, the union of
 * the lists before it, is `failures_count` alone), and so is an empty one.
 */
export const compactVerificationSchema = verificationSchema.extend({
  failures: strings.optional(),
  new_failures: strings.optional(),
  pre_existing: strings.optional(),
  flaky: strings.optional(),
  // issue 33's lists (known failures, fixed, missing after the work) when the verification has them
  known_failures: strings.optional(),
  fixed: strings.optional(),
  missing_tests: strings.optional(),
  checkpoint_failures: count.optional(),
  /** A failure's excerpt: `of` names where its id is listed (`new_failures[0]`), or `id` when no list names it. */
  failure_details: z
    .array(z.strictObject({ id: z.string().optional(), of: z.string().optional(), excerpt: z.string() }))
    .optional(),
  /** A passing full suite's `confirms_related` says how many related files it confirms; the related run's summary is `full`'s. */
  confirms_related: z.strictObject({ related_files: count, summary: z.string().optional() }).optional(),
  ...countsOf([...VERIFICATION_ID_LISTS, ...VERIFICATION_LISTS, 'related_files', 'failure_details', 'previous']),
  /** The last rounds before this one (`previous_count` counts them all); a round's ids named earlier are counted, not repeated. */
  previous: z
    .array(z.strictObject({ summary: z.string(), failures: strings.optional(), failures_count: count.optional() }))
    .optional(),
  original_tests: originalTestsSchema
    .extend({ failures: strings.optional(), ...countsOf(['failures', 'flaky', 'changed']) })
    .optional(),
  /** Left out when empty (a passing verification keeps none): a clean answer stays under ~400 tokens. */
  output_tail: z.string().optional(),
});

const excludedFolderSchema = z.strictObject({
  added: count,
  modified: count,
  deleted: count,
  partial: z.literal(true).optional(),
});

const outsideEvidenceSchema = z.strictObject({
  git: strings.optional(),
  git_code: strings.optional(),
  editor: strings.optional(),
  dependencies: strings.optional(),
  excluded: z.record(z.string(), excludedFolderSchema).optional(),
  count,
  truncated: z.literal(true).optional(),
  verification_wrote: count.optional(),
  unavailable: z.string().optional(),
});

/** The `changes` of spec 03 (ChangesJson). */
export const changesSchema = z.strictObject({
  source: z.enum(['checkpoint', 'mtime']),
  checkpoint: z.string(),
  count,
  added: strings,
  modified: strings,
  deleted: strings,
  truncated: z.boolean(),
  snapshot_truncated: z.boolean(),
  skipped: strings,
  verification_wrote: strings,
  git: z.strictObject({ repo: z.literal(true), dirty_count: count, shortstat: z.string() }).optional(),
  outside_evidence: outsideEvidenceSchema.optional(),
  hidden_by_ignore: strings.optional(),
});

/** The lists of `changes` the compact answer bounds (`count` stays the exact total). */
export const CHANGES_LISTS = [
  'added',
  'modified',
  'deleted',
  'skipped',
  'verification_wrote',
  'hidden_by_ignore',
] as const;

/** `changes` as answered: what changed always (`source` … `deleted`), the flags and lists of the unusual when they hold something; each list bounded with its count. */
export const compactChangesSchema = changesSchema
  .partial({ truncated: true, snapshot_truncated: true, skipped: true, verification_wrote: true })
  .extend({
    ...countsOf(CHANGES_LISTS),
    git: z.strictObject({ repo: z.literal(true), dirty_count: count, shortstat: z.string().optional() }).optional(),
  });

/** The `proof` of spec 03. */
export const proofSchema = z.strictObject({
  verdict: z.enum(['proved', 'partial', 'unproved', 'contradicted']),
  confidence: z.number(),
  shown: strings,
  uncertainty: z.array(z.strictObject({ code: z.string(), detail: z.string(), penalty: z.number() })),
});

const convergenceSchema = z.strictObject({
  converged: z.boolean(),
  score: z.number(),
  confidence: z.enum(['high', 'medium']),
  reason: z.string(),
});

const criteriaCheckSchema = z.strictObject({
  complete: z.boolean(),
  met: strings,
  unmet: strings,
  unchecked: strings,
  details: z.array(z.strictObject({ criterion: z.string(), check: z.string(), why: z.string() })).optional(),
});

const totalsSchema = z.strictObject({
  tool_calls: count,
  failed_calls: count,
  rounds: count,
  input_tokens: count,
  output_tokens: count,
  /** Dollars over the `api` attempts; null when one of them is unknown (never 0 for unknown: issue 15). */
  cost_usd: z.number().nullable(),
  /** The job's spend in words (absent on jobs from before it was recorded), per billing: `$0.02 api; 3 requests on subscription; 12 s free`, or `cost unknown for …`. */
  spend: z.string().optional(),
  errors: count,
  cancelled: count,
});

/** A worker row of the answer (spec 03), every field as `?full=1` shows it. */
export const compactWorkerSchema = z.strictObject({
  name: z.string(),
  role: z.enum(['worker', 'fixer', 'reviewer']),
  attempt: count,
  runner: z.string(),
  model: z.string().nullable(),
  /** The roster entry and provider its route came from (spec 05); absent when the task named its runner. */
  entry: z.string().optional(),
  provider: z.string().optional(),
  status: z.enum(WORKER_STATUSES),
  outcome: z.enum(['success', 'expected_error', 'cancelled', 'panic']).nullable(),
  stop_reason: z.string().nullable(),
  error: z.string().nullable(),
  rounds: count,
  tool_calls: count,
  failed_calls: count,
  input_tokens: count,
  output_tokens: count,
  cost_usd: z.number().nullable(),
  duration_s: z.number().nullable(),
  files_changed: strings,
  /** The compact answer bounds `files_changed`: how many there are, when it shows fewer (issue 33). */
  files_changed_count: count.optional(),
  summary: z.string(),
  sandboxed: z.boolean(),
  /** `none` (a loopback of its own) is left out of the compact answer as the nothing-happened value; null: it never started. */
  network: z.enum(['none', 'outbound', 'host']).nullable(),
  /** spec 06's mutation audit; `ok` is left out of the compact answer as the nothing-happened value; null: not audited (never ran, or live). */
  write_audit: z.enum(['ok', 'violation', 'failed-no-mutation']).nullable(),
  /** What the evidence saw change on disk in the attempt's step (`1 modified`, `nothing`; shared steps say so); null: not collected. */
  observed: z.string().nullable(),
  /** The detected state, when any, and why. */
  state: z.enum(DETECTED_STATES).optional(),
  why: z.string().optional(),
  /** Tool calls the sandbox or policy refused, counted per tool. */
  refusals: z.array(z.strictObject({ tool: z.string(), why: z.string(), count })).optional(),
  /** The runner's session id, when it has one (a fix round can continue it). */
  session: z.string().optional(),
  /** What the attempt cost in its billing's unit, in words (`cost unknown (api): …` when it is not known); null: it has not ended. */
  spend: z.string().nullable(),
  /** Why it ran on its entry's fallback instead of where it was routed (issue 15). */
  rerouted: z.string().optional(),
  /** The cluster node that took the attempt (a coordinator's attempts only; the last one when it was handed over). */
  node: z.string().optional(),
});

/** A worker row as answered: these fields always; without `full`, the rest only when not 0, null or empty. */
export const compactWorkerEntrySchema = compactWorkerSchema.partial().required({
  name: true,
  role: true,
  attempt: true,
  runner: true,
  status: true,
  outcome: true,
  sandboxed: true,
});

/** A task branch's or the merged tree's verification (BranchVerificationJson). */
const branchVerificationSchema = z.strictObject({
  ok: z.boolean().nullable(),
  summary: z.string(),
  blocking: z.boolean().optional(),
});

/** A worktree job's `worktrees` (spec 06): per task its branch, worktree and merge; the classes; the merged tree. */
const worktreesSchema = z.strictObject({
  base: z.string(),
  merge: z.enum(['none', 'auto']),
  tasks: z.array(
    z.strictObject({
      task: z.string(),
      branch: z.string(),
      commit: z.string().nullable(),
      state: z.enum(['removed', 'kept', 'remove_refused']),
      path: z.string().nullable(),
      why: z.string().optional(),
      files: strings,
      port: z.number(),
      setup: z.strictObject({ deps: strings, included: z.number(), command: z.string().nullable() }),
      verification: branchVerificationSchema.nullable(),
      merge: z.enum(['merged', 'conflict', 'not_merged']).optional(),
      conflict_files: strings.optional(),
    }),
  ),
  classes: z.array(z.strictObject({ task: z.string(), class: z.enum(['parallel', 'sequential']), why: z.string() })),
  predicted_conflicts: z.array(z.strictObject({ tasks: strings, files: strings })),
  merges: z.array(
    z.strictObject({
      branch: z.string(),
      commit: z.string().nullable(),
      tasks: strings,
      applied: z.boolean(),
      why: z.string().optional(),
      verification: branchVerificationSchema.nullable(),
      path: z.string().nullable(),
    }),
  ),
  submodules: z.literal('not initialized'),
});

/**
 * `worktrees` as the compact answer gives it: a task row without its commit (its branch names it)
 * and port, and without its path, setup and verification when they say nothing (removed, nothing
 * set up, passed); a merge without its path once removed. `?full=1` has every field.
 */
const compactWorktreesSchema = worktreesSchema.extend({
  tasks: z.array(
    worktreesSchema.shape.tasks.element
      .partial({ commit: true, path: true, port: true, setup: true, verification: true })
      .extend(countsOf(['files', 'conflict_files'])),
  ),
  merges: z.array(worktreesSchema.shape.merges.element.partial({ path: true })),
});

const gateReading = z.enum(['pass', 'fail', 'ambiguous']);
const gateResultSchema = z.strictObject({
  gate: z.string(),
  kind: z.enum(['command', 'diff-scope', 'claims', 'done_means']),
  result: gateReading,
  detail: z.string(),
  judged: z.strictObject({ entry: z.string(), reading: gateReading, why: z.string() }).optional(),
  climb: z.literal(true).optional(),
});
/** A task's own gates on one attempt (spec 05). */
const taskGatesSchema = z.strictObject({
  task: z.string(),
  worker: z.string(),
  verdict: gateReading,
  results: z.array(gateResultSchema),
});
const rungAttemptSchema = z.strictObject({
  worker: z.string(),
  entry: z.string(),
  runner: z.string(),
  model: z.string().nullable(),
  status: z.string(),
  verdict: gateReading,
  gates: z.array(gateResultSchema),
  verification: z.string().nullable(),
  failures: z.string().optional(),
  abstained: z.string().nullable(),
  note: z.string(),
});
/** A climb up a task's cost ladder, or its return to the spawner (spec 05); the compact answer leaves the autopsy to `?full=1`. */
const escalationSchema = z.strictObject({
  task: z.string(),
  from: z.string(),
  to: z.string().nullable(),
  why: z.string(),
  returned: z.literal(true).optional(),
  denied: z.literal(true).optional(),
  autopsy: z.array(rungAttemptSchema),
});

/** The answer's `result`: the workers' rows and what the job has learnt so far (the job result less its internal counters). */
export const compactResultSchema = z.strictObject({
  workers: z.array(compactWorkerEntrySchema),
  files_changed: strings.optional(),
  claimed_only: strings.optional(),
  /** issue 33: the compact answer bounds its lists; `<list>_count` says how many there are when it shows fewer. */
  ...countsOf(['files_changed', 'claimed_only', 'gates', 'escalation']),
  changes: compactChangesSchema.nullable().optional(),
  verification: compactVerificationSchema.nullable().optional(),
  criteria_check: criteriaCheckSchema.extend(countsOf(['met', 'unmet', 'unchecked', 'details'])).optional(),
  convergence: convergenceSchema.optional(),
  stopped_by: z.literal('convergence').optional(),
  worktrees: compactWorktreesSchema.optional(),
  gates: z.array(taskGatesSchema).optional(),
  escalation: z.array(escalationSchema.partial({ autopsy: true })).optional(),
  proof: proofSchema.nullable().optional(),
  /** Without `full`, only the totals that are not 0. */
  totals: totalsSchema.partial().optional(),
  exit_code: z.number().optional(),
});

/** A live worker's entry in `progress`. */
export const progressEntrySchema = z.strictObject({
  last_event: z.string(),
  round: z.number().nullable(),
  elapsed_s: z.number(),
  last_tool: z.string().nullable(),
  state: z.enum(DETECTED_STATES).nullable(),
  why: z.string().optional(),
  matched: z.string().optional(),
});

/** The live workers' progress, by worker name (also `worker_states` of the events route). */
export const progressSchema = z.record(z.string(), progressEntrySchema);

/** A task as the answer lists it; `model` is left out of the compact answer when the task names none. */
export const answerTaskSchema = z.strictObject({
  name: z.string(),
  instruction: z.string(),
  files: strings,
  runner: z.string(),
  model: z.string().nullable().optional(),
  type: z.enum(TASK_TYPES),
  /** Why the roster routed it there (spec 05): when the learning router decided, the figures in words; with `full`, whenever a roster routed it. */
  routed: z.string().optional(),
});

const lintFindingSchema = z.strictObject({ task: z.string(), code: z.string(), message: z.string(), fix: z.string() });

/** The answer of spec 03 for one job: what a coordinator reads, never a transcript. */
/** A decision-grade ask (spec 05) and its answer. */
const askSchema = z.strictObject({
  task: z.string(),
  issue: z.string(),
  why: z.string(),
  route: z.string(),
  recommendation: z.string(),
  pros: strings,
  cons: strings,
  blocking: z.boolean(),
  judge_abstained: z.boolean(),
  judge: z.string().optional(),
  answer: z.boolean().nullable(),
  note: z.string().optional(),
  answered_by: z.string().optional(),
});

/** A job's evidence record on an objective it named (spec 07). */
const objectiveEvidenceSchema = z.strictObject({
  objective: z.string(),
  job_id: z.string(),
  workspace: z.string(),
  status: z.enum(JOB_STATUSES),
  files_changed: strings,
  confidence: z.number(),
  ts: z.number(),
});

/** spec 07: the objectives the checkpoint's file declares that the tasks name, and what in the file was ignored. */
const objectivesSchema = z.strictObject({
  file: z.string(),
  named: z.array(z.strictObject({ id: z.string(), title: z.string(), impact: z.number() })),
  warnings: strings,
});

export const compactJobSchema = z.strictObject({
  id: z.string(),
  title: z.string(),
  status: z.enum(JOB_STATUSES),
  verdict: z.string().nullable(),
  error: z.string().nullable(),
  owner: z.string().nullable(),
  workspace: z.string(),
  created: z.number(),
  started: z.number().nullable(),
  finished: z.number().nullable(),
  duration_s: z.number().nullable(),
  tasks: z.array(answerTaskSchema),
  parallel: z.boolean(),
  /** The request's; the compact answer of a job whose verification ran leaves them out (its verification says how it ran). */
  verify: z.string().optional(),
  verify_scope: z.enum(['related', 'all']).optional(),
  fix_rounds: count,
  /** What admission warned of: an interactive job run with a budget ahead of pace, a suspended provider (issue 15). */
  warnings: strings.optional(),
  /** issue 16: the finished job's task this job follows up, and whether its first attempt resumed that task's session. */
  follow_up: z.strictObject({ job: z.string(), task: z.string(), resumed: z.boolean() }).optional(),
  /** A merge later (`gaffer merge`): the worktree job whose branches this job merges, and the task named (null: every passing branch). */
  merge_of: z.strictObject({ job: z.string(), task: z.string().nullable() }).optional(),
  /** The spec-lint gaps; `needs_detail` (what to add, and how) while the job is live and with `full`. */
  spec_lint: z
    .strictObject({ mode: z.string(), codes: strings, needs_detail: z.array(lintFindingSchema).optional() })
    .optional(),
  /** spec 06 "Phase order", spec 07 "Objectives ordering": present only when the tasks run in another order or batches than the request's. */
  task_order: z
    .strictObject({
      by: z.enum(['phase', 'impact', 'phase+impact']),
      from: strings,
      to: strings,
      phases: z.array(strings),
      why: z.string(),
      impact: z.array(z.strictObject({ task: z.string(), objectives: strings, score: z.number() })).optional(),
    })
    .optional(),
  /** spec 07 "Objectives ordering": present when the workspace has an objectives file (read at the checkpoint); `evidence` with `full`. */
  objectives: objectivesSchema.extend({ evidence: z.array(objectiveEvidenceSchema).optional() }).optional(),
  criteria: strings.optional(),
  /** spec 05: the job's approval asks, one per task that needed a yes (a fan-out's are one batch), with their answers; present when any was asked. */
  asks: z.array(askSchema).optional(),
  /** Present once the job has a result or a worker row. */
  result: compactResultSchema.optional(),
  /** Live jobs only, like `phase`, `ceiling_s` and `wait_again`. */
  progress: progressSchema.optional(),
  phase: z.string().nullable().optional(),
  ceiling_s: z.number().optional(),
  /** spec 07: present when what jobs in this workspace really took raised `ceiling_s` above the computed one (from what, to what, on how many jobs). */
  ceiling_why: z.string().optional(),
  wait_again: z.boolean().optional(),
});

/** `?full=1`'s result: every worker field, and the stored parts whole (the compact one's cuts and counts are not in it). */
export const fullResultSchema = compactResultSchema.extend({
  workers: z.array(compactWorkerSchema),
  changes: changesSchema.nullable().optional(),
  verification: verificationSchema.nullable().optional(),
  totals: totalsSchema.optional(),
});

/** The full answer (`?full=1`, `--full`, `full: true`): the compact one with nothing left out. */
export const fullJobSchema = compactJobSchema.extend({
  tasks: z.array(answerTaskSchema.required({ model: true })),
  spec_lint: z.strictObject({ mode: z.string(), codes: strings, needs_detail: z.array(lintFindingSchema) }).optional(),
  /** With the evidence records the job left the objectives it named, once it ended. */
  objectives: objectivesSchema.extend({ evidence: z.array(objectiveEvidenceSchema) }).optional(),
  result: fullResultSchema.optional(),
});

/** The schema a job's answer is checked against: the full one when `full` was asked for. */
export const jobAnswerSchema = (full: boolean) => (full ? fullJobSchema : compactJobSchema);

/** A job in a listing (spec 02 "brief"): the compact answer without `result`. */
export const briefJobSchema = compactJobSchema.omit({ result: true });

/** `GET /api/jobs`, `workers_list`, `gaffer list --json`. */
export const jobListSchema = z.strictObject({ jobs: z.array(briefJobSchema) });

/** A wait's answer (spec 02): whether the condition held, after how long, and the compact job. */
export const waitAnswerSchema = z.strictObject({
  met: z.boolean(),
  condition: z.string(),
  waited_s: z.number(),
  state: compactJobSchema,
});

/** A steer's answer (issue 16): how a message sent to a task of a job reaches it. */
export const steerAnswerSchema = z.strictObject({
  /** The steer's id, as its `steer_received` and `steer_delivered` events name it. */
  id: z.string(),
  /** `next_turn`: the live worker reads it before its next model call; `queued_as_follow_up`: it goes to the task as a follow-up job once the job has ended. */
  delivery: z.enum(STEER_DELIVERIES),
  job_id: z.string(),
  task: z.string(),
  /** The attempt that will read it at its next turn; null when the task's attempt has not started yet, and for a follow-up. */
  worker: z.string().nullable(),
  /** Messages now waiting for the task, this one included (0 once sent on as a follow-up job). */
  waiting: count,
  /** The follow-up job started at once because the job had already ended; null otherwise (a queued one starts when the job ends). */
  follow_up_job: z.string().nullable(),
  /** One line for a person. */
  detail: z.string(),
});

/** The answer's pieces that the engine keeps as interfaces: an error here means a schema and its interface drifted apart. */
// identical, not only assignable both ways: an optional field one side lacks counts
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Holds<T extends true> = T;
type Flat<T> = { [K in keyof T]: T[K] };
type SpecLint = NonNullable<JobSpec['spec_lint']>;
type AskHolds = Holds<Same<z.infer<typeof askSchema>, AskJson>>;
export type _SchemaMatches = [
  Holds<Same<z.infer<typeof verificationSchema>, VerificationJson>>,
  Holds<Same<z.infer<typeof originalTestsSchema>, OriginalTestsJson>>,
  Holds<Same<z.infer<typeof changesSchema>, ChangesJson>>,
  Holds<Same<z.infer<typeof proofSchema>, ProofJson>>,
  Holds<Same<z.infer<typeof convergenceSchema>, ConvergenceJson>>,
  Holds<Same<z.infer<typeof criteriaCheckSchema>, CriteriaCheckJson>>,
  Holds<Same<z.infer<typeof totalsSchema>, TotalsJson>>,
  Holds<Same<z.infer<typeof worktreesSchema>, WorktreesJson>>,
  Holds<Same<z.infer<typeof taskGatesSchema>, TaskGatesJson>>,
  Holds<Same<z.infer<typeof escalationSchema>, EscalationJson>>,
  AskHolds,
  Holds<
    Same<
      Required<z.infer<typeof compactJobSchema>>['spec_lint'],
      Flat<Omit<SpecLint, 'needs_detail'> & Partial<Pick<SpecLint, 'needs_detail'>>>
    >
  >,
  Holds<Same<Required<z.infer<typeof compactJobSchema>>['task_order'], TaskOrder>>,
  Holds<Same<Required<z.infer<typeof compactJobSchema>>['follow_up'], FollowUpLink>>,
  Holds<Same<z.infer<typeof objectivesSchema>, ObjectivesNote>>,
  Holds<Same<z.infer<typeof objectiveEvidenceSchema>, ObjectiveEvidence>>,
  Holds<Same<z.infer<typeof compactWorkerSchema>['write_audit'], WriteAuditVerdict | null>>,
];
