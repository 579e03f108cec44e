// spec 05 "Approval: the yes-gate": which tasks of a job need a person's yes before anything runs,
// and the decision-grade ask for each. Code decides what is asked; a person approves.
import { admittedRoute, billingOfRoute } from './routing.js';
import { z } from 'zod';
import { GafferError } from './errors.js';
import { describeVerify, type JobSpec, type TaskSpec } from './request.js';
import type { Billing } from './route.js';
import { READ_ONLY_TASK_TYPES } from './write-policy.js';

/** Config `approval` (spec 05/07): `default: "required"` makes `approval: "auto"` ask for every task. */
export interface ApprovalPolicy {
  default: 'auto' | 'required';
  /** An ask unanswered this long counts as no. */
  timeoutS: number;
}

export const DEFAULT_APPROVAL_POLICY: ApprovalPolicy = { default: 'auto', timeoutS: 86_400 };

/** One task's ask, as the answer and the store keep it (spec 05's shape, plus its answer). */
export interface AskJson {
  task: string;
  issue: string;
  why: string;
  route: string;
  recommendation: string;
  pros: string[];
  cons: string[];
  /** The job waits on it: nothing of the job runs before every ask is answered. */
  blocking: boolean;
  /** No judge model drafted the recommendation: it is gaffer's code-only rationale. */
  judge_abstained: boolean;
  /** The roster entry whose model drafted the recommendation; or, when it abstained, why it did. */
  judge?: string;
  /** Null while open. */
  answer: boolean | null;
  note?: string;
  /** Who or what answered when not a person: `timeout`. */
  answered_by?: string;
}

/**
 * Why each task needs a yes (spec 05), by task name; empty when none does. An `api`-billed route
 * asks whatever `approval` says — money is never spent without a yes. Otherwise `required` asks for
 * every task, `never` for none, and `auto` where policy says: config `approval.default:
 * "required"`, a routing null (nothing rostered takes the type: the configured default runner is
 * proposed), a roster entry marked `approve: true`. `billingOf` answers for a runner the roster did
 * not choose (config `runners.<key>.billing`).
 */
export function approvalReasons(
  spec: Pick<JobSpec, 'approval' | 'tasks'>,
  policy: ApprovalPolicy,
  billingOf: (runner: string) => Billing,
): Map<string, string> {
  const reasons = new Map<string, string>();
  for (const task of spec.tasks) {
    const why = reasonFor(task, spec.approval, policy, billingOf);
    // spec 05: a route the learning router chose is asked with the figures that chose it
    if (why !== null) reasons.set(task.name, task.roster?.learned ? `${why} (${task.roster.why})` : why);
  }
  return reasons;
}

function reasonFor(
  task: TaskSpec,
  approval: JobSpec['approval'],
  policy: ApprovalPolicy,
  billingOf: (runner: string) => Billing,
): string | null {
  const pick = task.roster;
  const label = pick?.entry ? `roster entry "${pick.entry}"` : `runner ${task.runner}`;
  switch (
    askCause(
      { billing: billingOfRoute(task, admittedRoute(task), billingOf), approve: pick?.approve ?? false },
      approval,
      policy.default,
    )
  ) {
    case 'api':
      return `${label} is billed per call (api): money is never spent without a yes`;
    case 'request_required':
      return 'the request says approval: "required"';
    case 'config_required':
      return 'config approval.default is "required"';
    case 'approve':
      // a routing null's proposal is marked to ask: the roster had nothing for the task
      return pick && pick.entry === null ? `routing null: ${pick.why}` : `${label} is marked approve: true`;
    case null:
      return null;
  }
}

/** Why an attempt on a rung needs a person's yes. */
export type AskCause = 'api' | 'request_required' | 'config_required' | 'approve';

/**
 * spec 05's one rule for a yes, for a task's start and for a climb alike: an `api` rung always
 * asks; else a request's `never` asks nothing; else the request's or the config's `required`, or
 * an entry marked `approve`, asks. Null: no yes needed.
 */
export function askCause(
  rung: { billing: Billing; approve: boolean },
  approval: JobSpec['approval'],
  policyDefault: ApprovalPolicy['default'],
): AskCause | null {
  if (rung.billing === 'api') return 'api';
  if (approval === 'never') return null;
  if (approval === 'required') return 'request_required';
  if (policyDefault === 'required') return 'config_required';
  return rung.approve ? 'approve' : null;
}

/**
 * The decision-grade ask for each task that needs one (spec 05): what it would do, where it would
 * run, and a code-only recommendation with its pros and cons — no judge model is consulted by this
 * build, so every ask says `judge_abstained`. A fan-out's tasks are asked together: one ask, a
 * yes/no per item.
 */
export function draftAsks(spec: JobSpec, reasons: ReadonlyMap<string, string>): AskJson[] {
  const verify = describeVerify(spec.verify);
  const asked = spec.tasks.filter((t) => reasons.has(t.name));
  const batch =
    asked.length > 1
      ? ` (one of ${asked.length} tasks asked together${spec.isolation === 'worktree' ? ', a worktree fan-out' : ''})`
      : '';
  return asked.map((task) => {
    const { pros, cons } = weigh(task, verify, spec);
    const pick = task.roster;
    if (pick && pick.entry === null)
      cons.unshift(
        `nothing rostered takes "${task.type}": it would run on the default runner ${task.runner}, which no roster entry vouches for`,
      );
    return {
      task: task.name,
      issue: `${task.type} task needs a yes before it runs${batch}`,
      why: reasons.get(task.name) ?? '',
      route: `${task.model ?? 'its default model'} (${pick?.provider ? `${pick.provider}/` : ''}${task.runner}${pick?.entry ? `, roster entry ${pick.entry}` : ''})`,
      recommendation:
        cons.length === 0
          ? 'approve: it names what it may change and gaffer can check the result'
          : `approve only if these are acceptable: ${cons.join('; ')}`,
      pros,
      cons,
      blocking: true,
      judge_abstained: true,
      answer: null,
    };
  });
}

/** What the judge model is told: its part, and how to answer (spec 05: the judge recommends; a person approves). */
export const JUDGE_SYSTEM = [
  'You advise a person who must approve or deny a coding task before gaffer hands it to an AI worker.',
  'Recommend in at most three sentences whether to approve, and why. Start with "approve" or "deny".',
  'Weigh what the task may change, where it runs and who pays, and how its result will be checked. Do not invent facts.',
].join(' ');

/** The ask, for the judge: the task as the worker would get it, where it would run, and gaffer's own reading. */
export function judgePrompt(ask: AskJson, task: TaskSpec): string {
  const instruction = task.instruction.length > 2_000 ? `${task.instruction.slice(0, 2_000)}…` : task.instruction;
  return [
    `Task "${task.name}" (${task.type}): ${instruction}`,
    `Route: ${ask.route}`,
    `Why it is asked: ${ask.why}`,
    ...ask.pros.map((p) => `For: ${p}`),
    ...ask.cons.map((c) => `Against: ${c}`),
  ].join('\n');
}

/** The longest recommendation the judge may give: three sentences' worth (JUDGE_SYSTEM). */
export const JUDGE_MAX_CHARS = 600;

/**
 * The judge's reply held to what JUDGE_SYSTEM asks of it: it starts with "approve" or "deny" (a
 * leading markdown mark aside), gives a reason after it, and stays within JUDGE_MAX_CHARS. A reply
 * that does not fit is never a recommendation (a model once answered `done`, and that was shown to
 * the person deciding): null when it fits, else why not.
 */
export function misfitOfRecommendation(text: string): string | null {
  const said = text.trim();
  if (said === '') return 'an empty answer';
  const quoted = JSON.stringify(said.length > 80 ? `${said.slice(0, 79)}…` : said);
  const verdict = /^[*_#>"'`\s]*(approve|deny)\b(.*)$/is.exec(said);
  if (verdict === null) return `it does not start with "approve" or "deny": ${quoted}`;
  if (!/\p{L}{2,}/u.test(verdict[2] ?? '')) return `it gives no reason after "${verdict[1] ?? ''}": ${quoted}`;
  if (said.length > JUDGE_MAX_CHARS)
    return `it is ${said.length} characters, more than the ${JUDGE_MAX_CHARS} (three sentences) it is asked for: ${quoted}`;
  return null;
}

/**
 * The judge's recommendation in place of the code-only one when its reply fits its contract
 * (misfitOfRecommendation); otherwise it abstained: the code-only one stays, `judge_abstained`, and
 * `judge` says why.
 */
export function withJudgement(ask: AskJson, entry: string, text: string | Error): AskJson {
  if (text instanceof Error) return { ...ask, judge: `${entry} abstained: ${text.message.slice(0, 200)}` };
  const misfit = misfitOfRecommendation(text);
  if (misfit !== null) return { ...ask, judge: `${entry} abstained: its reply did not fit: ${misfit}` };
  return { ...ask, recommendation: text.trim(), judge_abstained: false, judge: entry };
}

function weigh(task: TaskSpec, verify: string, spec: JobSpec): { pros: string[]; cons: string[] } {
  const pros: string[] = [];
  const cons: string[] = [];
  if (task.files.length > 0)
    pros.push(
      `may change only ${task.files.slice(0, 3).join(', ')}${task.files.length > 3 ? ` and ${task.files.length - 3} more` : ''} (its write policy)`,
    );
  else if (READ_ONLY_TASK_TYPES.has(task.type))
    pros.push('read-only: may write nothing in the project but its outputs');
  else cons.push('names no files: it may change anything in the workspace');
  if (spec.verify.mode !== 'off') pros.push(`its result is verified (${verify})`);
  else cons.push('verify is off: nothing will prove the result');
  if (spec.isolation === 'worktree')
    pros.push('runs in its own worktree: the workspace is touched only by a verified merge');
  if (task.criteria.length > 0) pros.push(`${task.criteria.length} acceptance criteria`);
  return { pros, cons };
}

/** How a per-task answer is read: `true`/`false` for every open ask, or a yes/no per task name. */
export type ApprovalAnswer = boolean | Readonly<Record<string, boolean>>;

const approveBodySchema = z.strictObject({
  approve: z.union([z.boolean(), z.record(z.string().min(1).max(100), z.boolean())]),
  note: z.string().max(2000).nullable().optional(),
});

/**
 * An answer as the doors take it (spec 02): `{"approve": true | false | {"task": bool}, "note": "…"}`.
 * Anything else is refused with `invalid_request` naming the field and what it takes.
 */
export function parseApproveBody(body: unknown): { approve: ApprovalAnswer; note: string | null } {
  const parsed = approveBodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || 'approve';
    throw new GafferError(
      'invalid_request',
      `${field}: ${issue?.message ?? 'invalid'} — send {"approve": true | false | {"<task>": true | false}, "note": "…"}`,
      field,
    );
  }
  if (typeof parsed.data.approve === 'object' && Object.keys(parsed.data.approve).length === 0) {
    throw new GafferError(
      'invalid_request',
      'approve: name at least one task, or answer all with true or false',
      'approve',
    );
  }
  return { approve: parsed.data.approve, note: parsed.data.note ?? null };
}
