// spec 05 "Approval: the yes-gate": which tasks of a job need a person's yes before anything runs,
// and the decision-grade ask for each. Code decides what is asked; a person approves.
import { z } from 'zod';
import { GafferError } from './errors.js';
import { describeVerify, type JobSpec, type TaskSpec } from './request.js';

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
  /** Null while open. */
  answer: boolean | null;
  note?: string;
  /** Who or what answered when not a person: `timeout`. */
  answered_by?: string;
}

/**
 * Why the job's tasks need a yes, or null when none does: `approval: "required"` asks for every
 * task; `auto` only where policy says — config `approval.default: "required"` here (a routing
 * null, a roster entry marked `approve`, an `api`-billed entry come with the roster); `never` asks
 * for nothing.
 */
export function approvalReason(spec: Pick<JobSpec, 'approval'>, policy: ApprovalPolicy): string | null {
  if (spec.approval === 'required') return 'the request says approval: "required"';
  if (spec.approval === 'auto' && policy.default === 'required') return 'config approval.default is "required"';
  return null;
}

/**
 * The decision-grade ask for each task (spec 05): what it would do, where it would run, and a
 * code-only recommendation with its pros and cons — no judge model is consulted by this build, so
 * every ask says `judge_abstained`. A fan-out's tasks are asked together: one ask, a yes/no per item.
 */
export function draftAsks(spec: JobSpec, reason: string): AskJson[] {
  const verify = describeVerify(spec.verify);
  const batch = spec.tasks.length > 1 ? ` (one of ${spec.tasks.length} tasks asked together${spec.isolation === 'worktree' ? ', a worktree fan-out' : ''})` : '';
  return spec.tasks.map((task) => {
    const { pros, cons } = weigh(task, verify, spec);
    return {
      task: task.name,
      issue: `${task.type} task needs a yes before it runs${batch}`,
      why: reason,
      route: `${task.model ?? 'its default model'} (${task.runner})`,
      recommendation: cons.length === 0 ? 'approve: it names what it may change and gaffer can check the result' : `approve only if these are acceptable: ${cons.join('; ')}`,
      pros,
      cons,
      blocking: true,
      judge_abstained: true,
      answer: null,
    };
  });
}

function weigh(task: TaskSpec, verify: string, spec: JobSpec): { pros: string[]; cons: string[] } {
  const pros: string[] = [];
  const cons: string[] = [];
  if (task.files.length > 0) pros.push(`may change only ${task.files.slice(0, 3).join(', ')}${task.files.length > 3 ? ` and ${task.files.length - 3} more` : ''} (its write policy)`);
  else if (task.type === 'review' || task.type === 'verify' || task.type === 'judge' || task.type === 'triage' || task.type === 'research') pros.push('read-only: may write nothing in the project but its outputs');
  else cons.push('names no files: it may change anything in the workspace');
  if (spec.verify.mode !== 'off') pros.push(`its result is verified (${verify})`);
  else cons.push('verify is off: nothing will prove the result');
  if (spec.isolation === 'worktree') pros.push('runs in its own worktree: the workspace is touched only by a verified merge');
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
    throw new GafferError('invalid_request', `${field}: ${issue?.message ?? 'invalid'} — send {"approve": true | false | {"<task>": true | false}, "note": "…"}`, field);
  }
  if (typeof parsed.data.approve === 'object' && Object.keys(parsed.data.approve).length === 0) {
    throw new GafferError('invalid_request', 'approve: name at least one task, or answer all with true or false', 'approve');
  }
  return { approve: parsed.data.approve, note: parsed.data.note ?? null };
}
