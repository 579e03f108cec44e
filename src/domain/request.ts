import { z } from 'zod';
import { remoteRepoOf, remoteRepoSchema, type RemoteRepo } from './remote-repo.js';
import { GafferError } from './errors.js';
import type { FollowUpBase, FollowUpLink } from './follow-up.js';
import { knownKeysAt, suggestKeys } from './nearest-key.js';
import { TASK_TYPES, type TaskType } from './status.js';
import type { RosterPick } from './route.js';
import { gatesOf, gatesSchema, type GateSpec } from './gates.js';
import { routeAtAdmission, type RoutingFacts } from './routing.js';
import type { RosterEntry } from './roster.js';
import { groundingGaps, isTaskType, type TaskBrief } from './grounding.js';
import { taskOrderOf, taskPhases, type TaskOrder } from './phase-order.js';
import type { ObjectivesNote } from './objectives.js';

/** Limits of spec 02 "The job request"; one place, so every door checks the same numbers. */
export const LIMITS = {
  tasks: { min: 1, max: 8 },
  instruction: { min: 1, max: 20_000 },
  context: 8_000,
  title: 200,
  verifyCommand: 500,
  verifyTimeoutS: { min: 10, max: 3_600 },
  fixRounds: { min: 0, max: 4 },
  criteria: { items: 20, chars: 300 },
  timeoutS: { min: 10, max: 86_400 },
  maxRounds: { min: 1, max: 200 },
  expectedOutput: 200,
  paths: { items: 200, chars: 1_000 },
  model: 200,
  runner: 64,
  command: 20_000,
  clientRequestId: 200,
  /** `verify.known_failures`: test ids or globs declared failing before the work and not this job's (issue 33). */
  knownFailures: { items: 200, chars: 300 },
} as const;

const TASK_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Items and characters of a task's brief lists (receipts, done_means, abort_criteria, read_first). */
const BRIEF_LIST = { items: 20, chars: 1_000 } as const;

const relativePath = z
  .string()
  .min(1)
  .max(LIMITS.paths.chars)
  .superRefine((value, ctx) => {
    const why = whyNotRelative(value);
    if (why) ctx.addIssue({ code: 'custom', message: why });
  });

const criteriaList = z.array(z.string().trim().min(1).max(LIMITS.criteria.chars)).max(LIMITS.criteria.items);
const briefList = z.array(z.string().trim().min(1).max(BRIEF_LIST.chars)).max(BRIEF_LIST.items);

const taskObject = z.strictObject({
  instruction: z.string().min(LIMITS.instruction.min).max(LIMITS.instruction.max),
  name: z
    .string()
    .regex(TASK_NAME, 'must match ^[a-z0-9][a-z0-9._-]{0,63}$')
    .refine((n) => n !== 'job', '"job" is reserved')
    .optional(),
  files: z.array(relativePath).max(LIMITS.paths.items).optional(),
  // checked after parsing: a grounded task's unknown type is one of its grounding gaps (spec 05)
  type: z.string().min(1).max(64).optional(),
  runner: z.string().min(1).max(LIMITS.runner).nullable().optional(),
  model: z.string().min(1).max(LIMITS.model).nullable().optional(),
  criteria: criteriaList.optional(),
  outputs: z.array(relativePath).max(LIMITS.paths.items).optional(),
  command: z.string().min(1).max(LIMITS.command).nullable().optional(),
  tests_may_change: z.boolean().optional(),
  // grounding and the handoff prompt (spec 05)
  receipts: briefList.optional(),
  done_means: briefList.optional(),
  abort_criteria: briefList.optional(),
  read_first: briefList.optional(),
  context: z.string().max(LIMITS.context).nullable().optional(),
  hold: z.string().trim().min(1).max(LIMITS.criteria.chars).nullable().optional(),
  grounded: z.boolean().optional(),
  gates: gatesSchema.nullable().optional(),
});

const verifyCommand = z.string().trim().min(1).max(LIMITS.verifyCommand);
/** Test ids or globs (`*` any run of characters) that failed before the work and are declared not this job's (issue 33). */
export const knownFailuresList = z
  .array(z.string().trim().min(1).max(LIMITS.knownFailures.chars))
  .max(LIMITS.knownFailures.items);
// issue 33: `{"command": "npm test", "known_failures": [...]}` says what proves the work and which failures are known
const verifyValue = z.union([
  z.boolean(),
  verifyCommand,
  z
    .strictObject({
      command: z.union([z.boolean(), verifyCommand]).optional(),
      known_failures: knownFailuresList.optional(),
    })
    .refine(
      (v) => v.command !== undefined || v.known_failures !== undefined,
      'an object gives "command" and/or "known_failures" — or give verify as a command string, "auto" or "none"',
    ),
]);

const intIn = (min: number, max: number) => z.number().int().min(min).max(max);

/** The request schema: the one source of truth every door validates with. */
export const jobRequestSchema = z.strictObject({
  /** Required unless `repo` is given (spec 09): one or the other. Absolute: the gaffer CLI resolves a relative one first. */
  workspace: z
    .string()
    .min(1)
    .max(4_096)
    .optional()
    .describe(
      "The folder the workers work in, as an absolute path: a relative one is refused, since gaffer's working directory is not the caller's",
    ),
  tasks: z
    // a string is {"instruction": "..."}: converted first so errors name the task's own fields
    .array(z.preprocess((t) => (typeof t === 'string' ? { instruction: t } : t), taskObject))
    .min(LIMITS.tasks.min)
    .max(LIMITS.tasks.max),
  title: z.string().max(LIMITS.title).nullable().optional(),
  context: z.string().max(LIMITS.context).nullable().optional(),
  parallel: z.boolean().optional(),
  reviewer: z.boolean().optional(),
  runner: z.string().min(1).max(LIMITS.runner).nullable().optional(),
  model: z.string().min(1).max(LIMITS.model).nullable().optional(),
  verify: verifyValue.optional(),
  verify_scope: z.enum(['related', 'all']).optional(),
  verify_timeout_s: intIn(LIMITS.verifyTimeoutS.min, LIMITS.verifyTimeoutS.max).optional(),
  fix_rounds: intIn(LIMITS.fixRounds.min, LIMITS.fixRounds.max).optional(),
  expected_output_contains: z
    .string()
    .max(LIMITS.expectedOutput)
    .refine(
      (s) => s.trim().length > 0,
      'must not be empty or only whitespace: a landmark that cannot be checked is refused',
    )
    .nullable()
    .optional(),
  criteria: criteriaList.optional(),
  timeout_s: intIn(LIMITS.timeoutS.min, LIMITS.timeoutS.max).optional(),
  max_rounds: intIn(LIMITS.maxRounds.min, LIMITS.maxRounds.max).optional(),
  isolation: z.enum(['shared', 'worktree']).optional(),
  merge: z.enum(['none', 'auto']).optional(),
  repo: remoteRepoSchema.optional(),
  approval: z.enum(['auto', 'required', 'never']).optional(),
  unattended: z.boolean().optional(),
  client_request_id: z.string().min(1).max(LIMITS.clientRequestId).nullable().optional(),
});

export type JobRequestInput = z.input<typeof jobRequestSchema>;

/** How the job is verified, normalized (spec 03 `mode`). */
export type VerifySpec = { mode: 'off' } | { mode: 'auto' } | { mode: 'command'; command: string };

/** A task after validation and defaults. */
export interface TaskSpec {
  /** Unique in the job; default worker-N. */
  name: string;
  instruction: string;
  files: string[];
  type: TaskType;
  /** The runner this task runs on, resolved at submission. */
  runner: string;
  /** The roster entry that routed it (spec 05), when the roster chose its runner; absent when the task named one. */
  roster?: RosterPick;
  /** Receipts, done_means, abort criteria, what to read first, its own context (spec 05): absent when the task gives none. */
  brief?: TaskBrief;
  /** Its own mechanical checks of the returned work (spec 05 "Gates"): absent when it declares none. */
  gates?: GateSpec[];
  model: string | null;
  criteria: string[];
  outputs: string[];
  command: string | null;
  /**
   * The task may change tests (`tests_may_change`, implied by type `test`): the workers' tests are
   * used, and the proof is at most `partial` unless the checkpoint's tests pass too (spec 03).
   */
  tests_may_change: boolean;
}

/** The job a merge later takes its branches from, and the task named (`spec.merge_of`, the answer's `merge_of`). */
export interface MergeOf {
  job: string;
  task: string | null;
}

/** A job request after validation and defaults: what the engine runs and the store keeps. */
export interface JobSpec {
  /** The roster's judge when the job was admitted (spec 05): its model, on its `models.<name>` (absent: the default), drafts the asks' recommendations. */
  judge?: { entry: string; model: string | null; endpoint?: string };
  /** The job's folder; for a job on a remote repository, the coordinator's checkout of it for this job (set at admission). */
  workspace: string;
  /** spec 09: the remote repository the job works on, when the request gave one instead of a workspace. */
  repo?: RemoteRepo;
  title: string;
  context: string | null;
  tasks: TaskSpec[];
  parallel: boolean;
  runner: string | null;
  model: string | null;
  verify: VerifySpec;
  /**
   * Issue 33: test ids or globs the request declares known — failing before the work and not this job's
   * to fix (`verify.known_failures`); absent when none. The hints file's list adds to it at the checkpoint.
   */
  known_failures?: string[];
  verify_scope: 'related' | 'all';
  /** The request named `verify_scope` (else a workspace's `verify.scope` hint may set it, read at the checkpoint). */
  verify_scope_given?: true;
  verify_timeout_s: number;
  fix_rounds: number;
  expected_output_contains: string | null;
  criteria: string[];
  timeout_s: number;
  max_rounds: number;
  /** `shared` (the workspace itself) or `worktree` (a worktree and branch per task, spec 06). */
  isolation: 'shared' | 'worktree';
  /** Worktree jobs: `auto` merges the passing branches, verifies the merged tree and applies it; `none` leaves the branches. */
  merge: 'none' | 'auto';
  /** spec 05: `required` asks for every task; `auto` where policy says; `never` asks nothing. */
  approval: 'auto' | 'required' | 'never';
  /**
   * spec 05: no person is watching this job. An ask with no one to answer it (no config `notify` to
   * tell anyone) is answered no at once: nothing launches without an explicit yes.
   */
  unattended?: true;
  client_request_id: string | null;
  /**
   * spec 06 "Phase order": present when reviewers and verifiers run in a later phase than the
   * request's order or batch; spec 07: set again at the checkpoint when objectives reorder a sequential job.
   */
  task_order?: TaskOrder;
  /** What admission warned of (an interactive job run with its budget ahead of pace, a suspended provider: issue 15). */
  warnings?: string[];
  /** spec 07 "Objectives ordering": what the checkpoint's objectives file said, when the workspace has one. */
  objectives?: ObjectivesNote;
  /** The finished job's task this job follows up (issue 16), set by admission's followUp, never by a request. */
  follow_up?: FollowUpLink;
  /** A follow-up of a worktree job's task: its worktree starts from that task's branch (issue 16); set with `follow_up`, never by a request. */
  follow_up_base?: FollowUpBase;
  /**
   * A merge later (`gaffer merge`): the finished worktree job whose passing branches this job merges,
   * and the one task named (null: every passing branch not merged yet). Set by admission's merge, never
   * by a request (the request schema refuses the field); such a job has no tasks of its own.
   */
  merge_of?: MergeOf;
  /** What spec lint found at dispatch (warn mode), when it found anything. */
  spec_lint?: {
    mode: string;
    needs_detail: { task: string; code: string; message: string; fix: string }[];
    codes: string[];
  };
}

/** What a request is parsed with: how its tasks are routed, and the timeouts it falls back on. */
export interface RunnerDefaults extends RoutingFacts {
  /** Config `timeouts.worker_s` / `timeouts.verify_s`: defaults for a request that gives none. */
  timeoutS?: number;
  verifyTimeoutS?: number;
}

/** Parses and limit-checks a request body; throws GafferError (`invalid_request`/`not_supported`/runner codes). */
export function parseJobRequest(body: unknown, runners: RunnerDefaults): JobSpec {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GafferError('invalid_request', 'the request must be a JSON object with `workspace` and `tasks`', '');
  }
  // the engine sets it on the job `gaffer merge` starts: a request that names it asks for something only that command does
  if ('merge_of' in body) {
    throw new GafferError(
      'invalid_request',
      `merge_of: set by gaffer only, got ${JSON.stringify((body as { merge_of: unknown }).merge_of)?.slice(0, 80)} — to merge a finished worktree job's branches later, run \`gaffer merge JOB [TASK]\` (POST /api/jobs/JOB/merge)`,
      'merge_of',
    );
  }
  const parsed = jobRequestSchema.safeParse(body);
  if (!parsed.success) throw toRequestError(parsed.error, body);
  const req = parsed.data;
  if (req.workspace === undefined && req.repo === undefined)
    throw new GafferError(
      'invalid_request',
      'workspace: required — give the folder to work in, or "repo": {"url", "ref"} for a remote repository (a cluster)',
      'workspace',
    );
  if (req.workspace !== undefined && req.repo !== undefined)
    throw new GafferError(
      'invalid_request',
      'repo: give either a `workspace` or a `repo`, not both — a job on a remote repository is checked out for it',
      'repo',
    );
  refuseUnsupported(req);
  refuseUngrounded(req.tasks);

  const names = new Set<string>();
  const tasks: TaskSpec[] = req.tasks.map((raw, i) => {
    const t = raw;
    const name = t.name ?? nextDefaultName(names, i);
    if (names.has(name)) {
      throw new GafferError(
        'invalid_request',
        `tasks[${i}].name: "${name}" is used by another task; names must be unique in the job`,
        `tasks[${i}].name`,
      );
    }
    names.add(name);
    const command = t.command ?? null;
    const type = taskType(t.type, i);
    const brief = briefOf(t);
    const doneMeansGate = (t.gates ?? []).findIndex((g) => typeof g === 'object' && g.kind === 'done_means');
    if (doneMeansGate >= 0 && !brief?.done_means.length) {
      throw new GafferError(
        'invalid_request',
        `tasks[${i}].gates[${doneMeansGate}]: a done_means gate confirms the task's done_means, and it gives none — add "done_means" to the task or drop the gate`,
        `tasks[${i}].gates[${doneMeansGate}]`,
      );
    }
    return {
      name,
      instruction: t.instruction,
      files: (t.files ?? []).map(normalizeRelative),
      type,
      ...routeAtAdmission(
        {
          named: t.runner ?? req.runner ?? null,
          command,
          type,
          model: t.model ?? req.model ?? null,
          pin: runners.pins?.get(name) ?? null,
        },
        runners,
        `tasks[${i}]`,
      ),
      criteria: t.criteria ?? [],
      outputs: (t.outputs ?? []).map(normalizeRelative),
      command,
      tests_may_change: t.tests_may_change ?? type === 'test',
      ...(brief ? { brief } : {}),
      ...(t.gates?.length ? { gates: gatesOf(t.gates) } : {}),
    };
  });

  if (req.reviewer === true) tasks.push(reviewerTask(tasks, names, req, runners));

  const parallel = req.parallel ?? false;
  const isolation = req.isolation ?? 'shared';
  if (req.merge === 'auto' && isolation !== 'worktree') {
    throw new GafferError(
      'invalid_request',
      'merge: "auto" merges worktree branches — add "isolation": "worktree", or remove merge',
      'merge',
    );
  }
  const taskOrder = taskOrderOf(tasks, parallel);
  return {
    // a job on a remote repository gets its checkout's path at admission
    workspace: req.workspace ?? '',
    ...(req.repo ? { repo: remoteRepoOf(req.repo) } : {}),
    title: req.title?.trim() || deriveTitle(tasks),
    context: req.context ?? null,
    tasks,
    parallel,
    ...(taskOrder ? { task_order: taskOrder } : {}),
    runner: req.runner ?? null,
    model: req.model ?? null,
    verify: normalizeVerify(typeof req.verify === 'object' ? req.verify.command : req.verify),
    ...knownFailuresOf(req.verify),
    verify_scope: req.verify_scope ?? 'related',
    ...(req.verify_scope !== undefined ? { verify_scope_given: true as const } : {}),
    verify_timeout_s: req.verify_timeout_s ?? runners.verifyTimeoutS ?? 300,
    fix_rounds: req.fix_rounds ?? 1,
    expected_output_contains: req.expected_output_contains ?? null,
    criteria: req.criteria ?? [],
    timeout_s: req.timeout_s ?? runners.timeoutS ?? 900,
    max_rounds: req.max_rounds ?? 20,
    isolation,
    merge: req.merge ?? 'none',
    approval: req.approval ?? 'auto',
    ...(req.unattended === true ? { unattended: true as const } : {}),
    ...(runners.roster?.judge ? { judge: judgeOf(runners.roster.judge) } : {}),
    client_request_id: req.client_request_id ?? null,
  };
}

/** The judge as a job keeps it: a restart asks the same model on the same endpoint. */
function judgeOf(entry: RosterEntry): NonNullable<JobSpec['judge']> {
  return { entry: entry.id, model: entry.model, ...(entry.endpoint !== null ? { endpoint: entry.endpoint } : {}) };
}

/** The `verify` value as the compact answer shows it. */
export function describeVerify(verify: VerifySpec): string {
  return verify.mode === 'command' ? verify.command : verify.mode === 'off' ? 'none' : 'auto';
}

/** The request's `verify.known_failures`, refused where nothing would run to fail (verification off). */
function knownFailuresOf(verify: JobRequestInput['verify']): Pick<JobSpec, 'known_failures'> {
  if (typeof verify !== 'object' || !verify.known_failures?.length) return {};
  if (normalizeVerify(verify.command).mode === 'off') {
    throw new GafferError(
      'invalid_request',
      'verify.known_failures: names failures of a verification that is off (verify.command none) — drop known_failures or let the verification run',
      'verify.known_failures',
    );
  }
  return { known_failures: [...new Set(verify.known_failures)] };
}

function normalizeVerify(value: boolean | string | undefined): VerifySpec {
  if (value === undefined || value === true) return { mode: 'auto' };
  if (value === false) return { mode: 'off' };
  const lowered = value.trim().toLowerCase();
  if (lowered === 'auto' || lowered === 'true') return { mode: 'auto' };
  if (lowered === 'none' || lowered === 'off' || lowered === 'false') return { mode: 'off' };
  return { mode: 'command', command: value.trim() };
}

/** Characters of each task's instruction the reviewer is shown. */
const REVIEWED_INSTRUCTION_CHARS = 300;

/**
 * `reviewer: true` (spec 02): a read-only `review` task after the others, on the job's runner and
 * model. It runs in the phase after the implementers, against their changes (spec 06), and may
 * write nothing in the project (its write policy). A `shell` runner runs a command and cannot review.
 */
function reviewerTask(
  tasks: readonly TaskSpec[],
  names: Set<string>,
  req: z.output<typeof jobRequestSchema>,
  runners: RunnerDefaults,
): TaskSpec {
  // routed as any task is (the roster's pick, or the named runner billed as its roster entry): an api entry asks
  const named = req.runner ?? null;
  if (named === null && !runners.roster && runners.defaultRunner === null) {
    throw new GafferError(
      'no_runner',
      'reviewer: no runner for the reviewer — set the job\'s "runner" to an agent runner, or configure a default runner',
      'reviewer',
    );
  }
  const routed = routeAtAdmission(
    { named, command: null, type: 'review', model: req.model ?? null, pin: null },
    runners,
    'reviewer',
  );
  const { runner, model } = routed;
  if (runner === 'shell') {
    throw new GafferError(
      'invalid_request',
      'reviewer: the shell runner runs a command and cannot review — set the job\'s "runner" to an agent runner (builtin, codex, claude, …), or add a review task of your own',
      'reviewer',
    );
  }
  let name = 'reviewer';
  for (let n = 2; names.has(name); n++) name = `reviewer-${n}`;
  names.add(name);
  const listed = tasks.map((t) => {
    const text =
      t.instruction.length > REVIEWED_INSTRUCTION_CHARS
        ? `${t.instruction.slice(0, REVIEWED_INSTRUCTION_CHARS)}…`
        : t.instruction;
    return `- ${t.name}: ${text}`;
  });
  const instruction = [
    'Review the work the other tasks of this job did; it is in the workspace now (`git diff` and `git log -p` show it).',
    'For each task, say whether its instruction was carried out, and name any bug, regression or missing piece with its file and line.',
    'Do not change any file: you are a reviewer, and any write is a violation of your write policy.',
    'The tasks:',
    ...listed,
  ].join('\n');
  return {
    name,
    instruction,
    files: [],
    type: 'review',
    runner,
    model,
    ...(routed.roster ? { roster: routed.roster } : {}),
    criteria: [],
    outputs: [],
    command: null,
    tests_may_change: false,
  };
}

function refuseUnsupported(req: z.output<typeof jobRequestSchema>): void {
  const refuse = (field: string, what: string): never => {
    throw new GafferError('not_supported', `${field}: ${what} is not supported by this build yet — remove it`, field);
  };
  if (req.isolation === 'worktree' && (req.criteria?.length ?? 0) > 0)
    refuse(
      'criteria',
      'job-level criteria with worktree isolation (each task is judged in its own worktree: give them per task)',
    );
  // spec 09: a job on a remote repository has a checkout of its own on the coordinator, and each attempt's branch is pushed to the remote
  if (req.repo !== undefined && req.merge === 'auto')
    refuse('merge', '"auto" on a remote repository (the branches are pushed to it for review: merge them there)');
  if (req.repo !== undefined && req.isolation === 'worktree')
    refuse(
      'isolation',
      '"worktree" on a remote repository (the job has a checkout of its own, and each attempt works on its own branch on a node, pushed to the remote): remove isolation',
    );
}

/**
 * spec 05 "Grounding": a held task, or a grounded one without receipts, done_means or a known type,
 * sends the request back (`needs_detail`, 422) with each task's gaps named in `error.grounding` —
 * nothing of it starts.
 */
function refuseUngrounded(tasks: readonly z.output<typeof taskObject>[]): void {
  const returned = tasks.flatMap((t, i) => {
    const gaps = groundingGaps(t, t.grounded === true);
    return gaps.length > 0 ? [{ task: t.name ?? `tasks[${i}]`, field: `tasks[${i}]`, gaps }] : [];
  });
  if (returned.length === 0) return;
  const words = returned
    .map((r) => `${r.field}${r.task !== r.field ? ` (${r.task})` : ''}: ${r.gaps.join('; ')}`)
    .join(' — ');
  throw new GafferError('needs_detail', `returned, not dispatched: ${words}`, returned[0]?.field ?? 'tasks', {
    grounding: returned,
  });
}

/** A task's type: the request's (refused when unknown), else `implement`. */
function taskType(type: string | undefined, index: number): TaskType {
  if (type === undefined) return 'implement';
  if (isTaskType(type)) return type;
  throw new GafferError(
    'invalid_request',
    `tasks[${index}].type: unknown type "${type}" (known: ${TASK_TYPES.join(', ')})`,
    `tasks[${index}].type`,
  );
}

/** The task's brief (receipts, done_means, …) when it gives any of it. */
function briefOf(t: z.output<typeof taskObject>): TaskBrief | null {
  const brief: TaskBrief = {
    receipts: t.receipts ?? [],
    done_means: t.done_means ?? [],
    abort_criteria: t.abort_criteria ?? [],
    read_first: t.read_first ?? [],
    context: t.context ?? null,
    grounded: t.grounded === true,
  };
  const given =
    brief.grounded ||
    brief.context !== null ||
    [brief.receipts, brief.done_means, brief.abort_criteria, brief.read_first].some((l) => l.length > 0);
  return given ? brief : null;
}

function nextDefaultName(taken: Set<string>, index: number): string {
  let n = index + 1;
  while (taken.has(`worker-${n}`)) n++;
  return `worker-${n}`;
}

function deriveTitle(tasks: TaskSpec[]): string {
  const first = tasks[0]?.instruction.replace(/\s+/g, ' ').trim() ?? '';
  return first.length > 80 ? `${first.slice(0, 79)}…` : first;
}

/** Why a request path is not a safe workspace-relative path, or null when it is. */
export function whyNotRelative(value: string): string | null {
  if (value.includes('\0')) return 'must not contain a NUL byte';
  if (value.startsWith('/') || /^[A-Za-z]:[\\/]/.test(value) || value.startsWith('\\'))
    return 'must be relative to the workspace';
  if (value.split(/[\\/]/).includes('..')) return 'must not contain ".."';
  if (value.startsWith('~')) return 'must be relative to the workspace (no "~")';
  return null;
}

function normalizeRelative(value: string): string {
  return value
    .replace(/\\/g, '/')
    .replace(/^(\.\/)+/, '')
    .replace(/\/+/g, '/')
    .replace(/\/$/, '');
}

/** Turns a zod error into the spec 02 error with the offending `field` (first issue wins). */
function toRequestError(error: z.ZodError, body: unknown): GafferError {
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0];
  if (!issue) return new GafferError('invalid_request', 'invalid request');
  const base = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const field = base ? `${base}.${issue.keys[0]}` : String(issue.keys[0]);
    const them = issue.keys.length > 1 ? 'them' : 'it';
    const suggestion = suggestKeys(issue.keys, knownKeysAt(jobRequestSchema, issue.path));
    return new GafferError(
      'invalid_request',
      `${base ? `${base}: ` : ''}unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} — ${suggestion ? `${suggestion} remove or rename ${them}` : `remove ${them}`}`,
      field,
    );
  }
  return new GafferError(
    'invalid_request',
    `${base || 'request'}: ${describeIssue(issue)}${describeGot(valueAt(body, issue.path))}`,
    base,
  );
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'too_small':
      return issue.origin === 'array'
        ? `must have at least ${String(issue.minimum)} item(s)`
        : issue.origin === 'string'
          ? `must be at least ${String(issue.minimum)} character(s)`
          : `must be ${String(issue.minimum)} or more`;
    case 'too_big':
      return issue.origin === 'array'
        ? `must have at most ${String(issue.maximum)} items`
        : issue.origin === 'string'
          ? `must be at most ${String(issue.maximum)} characters`
          : `must be ${String(issue.maximum)} or less`;
    case 'invalid_union':
      // a union that says what it takes (a gate) says so; the others point at the request's docs page
      return issue.message.startsWith('must be') ? issue.message : 'has the wrong type (see docs/request.md)';
    default:
      return issue.message.replace(/^Invalid input: /, '');
  }
}

function valueAt(body: unknown, path: PropertyKey[]): unknown {
  let value: unknown = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function describeGot(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string')
    return value.length > 60 ? `, got a string of ${value.length} characters` : `, got ${JSON.stringify(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return `, got ${String(value)}`;
  return Array.isArray(value) ? `, got an array of ${value.length}` : ', got an object';
}

function formatPath(path: PropertyKey[]): string {
  return path.reduce<string>(
    (acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)),
    '',
  );
}
