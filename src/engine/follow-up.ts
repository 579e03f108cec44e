import { readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { GafferError } from '../domain/errors.js';
import { buildFollowUpInstruction, FOLLOW_UP_LIMITS, parseFollowUpBody, type FollowUpComment, type FollowUpLink } from '../domain/follow-up.js';
import { describeVerify, LIMITS, type TaskSpec } from '../domain/request.js';
import { isFinalStatus } from '../domain/status.js';
import { fileDiff } from '../evidence/index.js';
import type { AttemptRow, JobRow, Store } from '../store/store.js';

/** What admission needs to submit a follow-up: the new job's request and its link to the task it follows. */
export interface FollowUpPlan {
  body: Record<string, unknown>;
  link: FollowUpLink;
}

/** The task's last attempt that ran (a fix round's or a climb's, when it had one): its route and session are the follow-up's. */
export function lastAttemptOf(attempts: readonly AttemptRow[], task: string): AttemptRow | null {
  const ran = attempts.filter((a) => a.task === task && a.started !== null);
  ran.sort((a, b) => (a.started ?? 0) - (b.started ?? 0) || a.queuedAt - b.queuedAt || a.ord - b.ord);
  return ran.at(-1) ?? null;
}

/** The session a follow-up job's first attempt of `task` resumes: read from the store, never from a request. */
export function followUpSession(store: Store, link: FollowUpLink | undefined, task: string): string | null {
  if (!link?.resumed || link.task !== task) return null;
  return lastAttemptOf(store.listAttempts(link.job), task)?.report?.session ?? null;
}

/**
 * The request of a follow-up of a finished job's task (issue 16): the task as it was — name, type,
 * files, its last attempt's runner and model — told the original instruction, the comments with the
 * lines as they read now and the note; the job's verify settings. Refuses a live or worktree job.
 */
export async function planFollowUp(store: Store, job: JobRow, taskName: string, rawBody: unknown): Promise<FollowUpPlan> {
  const request = parseFollowUpBody(rawBody);
  if (!isFinalStatus(job.status)) throw new GafferError('conflict', `job ${job.id} is still ${job.status}; wait for it (gaffer wait ${job.id}) or cancel it before a follow-up`, 'job_id');
  const task = job.spec.tasks.find((t) => t.name === taskName);
  if (!task) throw new GafferError('not_found', `job ${job.id} has no task ${JSON.stringify(taskName)} (its tasks: ${job.spec.tasks.map((t) => t.name).join(', ')})`, 'task');
  refuseWorktreeFollowUp(job, taskName);
  const last = lastAttemptOf(store.listAttempts(job.id), taskName);
  const session = last?.report?.session ?? null;
  const comments = request.comments.map((c, i) => ({ ...c, current: currentLine(job.spec.workspace, c, `comments[${i}]`) }));
  const diff = session === null ? await taskDiff(job, task, last, comments.map((c) => c.file)) : null;
  const instruction = buildFollowUpInstruction({ original: task.instruction, comments, note: request.note, diff });
  const link: FollowUpLink = { job: job.id, task: taskName, resumed: session !== null };
  const spec = job.spec;
  const body: Record<string, unknown> = {
    workspace: spec.workspace,
    title: titled(spec.title, ` (follow-up of ${job.id} ${taskName})`),
    context: spec.context,
    verify: describeVerify(spec.verify),
    ...(spec.verify_scope_given ? { verify_scope: spec.verify_scope } : {}),
    verify_timeout_s: spec.verify_timeout_s,
    fix_rounds: spec.fix_rounds,
    timeout_s: spec.timeout_s,
    max_rounds: spec.max_rounds,
    approval: spec.approval,
    ...(spec.unattended ? { unattended: true } : {}),
    ...(spec.criteria.length > 0 ? { criteria: spec.criteria } : {}),
    tasks: [followUpTask(task, last, instruction)],
  };
  return { body, link };
}

/** A worktree job's work is on a branch, not in the workspace: no follow-up (nor a steer queued for one) until it is merged. */
export function refuseWorktreeFollowUp(job: Pick<JobRow, 'id' | 'spec'>, taskName: string): void {
  if (job.spec.isolation !== 'worktree') return;
  throw new GafferError('conflict', `job ${job.id} ran in worktrees: its work is on a branch, not in the workspace — merge it first (gaffer merge ${job.id} ${taskName}), then dispatch the follow-up as a new job`, 'job_id');
}

/** The original title with the suffix, cut so the suffix always shows (titles are at most LIMITS.title). */
function titled(title: string, suffix: string): string {
  const room = LIMITS.title - suffix.length;
  return `${title.length > room ? `${title.slice(0, Math.max(0, room - 1))}…` : title}${suffix}`.slice(-LIMITS.title);
}

/** The task's request fields, on its last attempt's route; declared outputs are left out (a follow-up need not rewrite them). */
function followUpTask(task: TaskSpec, last: AttemptRow | null, instruction: string): Record<string, unknown> {
  const runner = last?.runner ?? task.runner;
  const model = last ? last.model : task.model;
  return {
    ...task.brief,
    name: task.name,
    instruction,
    files: task.files,
    type: task.type,
    runner,
    ...(model ? { model } : {}),
    ...(task.criteria.length > 0 ? { criteria: task.criteria } : {}),
    ...(task.command ? { command: task.command } : {}),
    tests_may_change: task.tests_may_change,
  };
}

/** The commented line as the workspace has it now; a file outside the workspace or a line past its end is refused. */
function currentLine(workspace: string, comment: FollowUpComment, at: string): string {
  const path = resolve(workspace, comment.file);
  const rel = relative(workspace, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) throw new GafferError('invalid_request', `${at}.file: must be a path inside the workspace ${workspace}, got ${JSON.stringify(comment.file)}`, `${at}.file`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const why = err instanceof Error && 'code' in err ? String(err.code) : String(err);
    throw new GafferError('invalid_request', `${at}.file: cannot read ${JSON.stringify(comment.file)} in the workspace (${why}) — comment on a file that exists now`, `${at}.file`);
  }
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  const line = lines[comment.line - 1];
  if (line === undefined) throw new GafferError('invalid_request', `${at}.line: ${comment.file} has ${lines.length} line(s), got line ${comment.line}`, `${at}.line`);
  return line.length > 400 ? `${line.slice(0, 400)}…` : line;
}

/** The files the task's last attempt changed, diffed against the job's checkpoint, the commented ones first, at most 8 KiB in all. */
async function taskDiff(job: JobRow, task: TaskSpec, last: AttemptRow | null, commented: readonly string[]): Promise<string> {
  const pre = job.checkpoint?.pre;
  if (!pre) return '(no checkpoint: the job never took one, so there is no diff)';
  const changed = new Set(last?.report?.filesChanged ?? []);
  if (changed.size === 0) for (const f of job.result?.files_changed ?? []) changed.add(f);
  if (changed.size === 0) return `(task ${task.name} changed no files)`;
  let out = '';
  const first = new Set(commented.map((f) => relative(job.spec.workspace, resolve(job.spec.workspace, f))).filter((f) => changed.has(f)));
  for (const path of [...first, ...[...changed].filter((f) => !first.has(f)).sort()]) {
    let diff: string;
    try {
      diff = await fileDiff(pre, job.checkpoint?.post ?? null, path);
    } catch (err) {
      diff = `(${path}: no diff — ${err instanceof Error ? err.message : String(err)})\n`;
    }
    if (out.length + diff.length > FOLLOW_UP_LIMITS.diffBytes) {
      out += `${diff.slice(0, Math.max(0, FOLLOW_UP_LIMITS.diffBytes - out.length))}\n… (diff cut at ${FOLLOW_UP_LIMITS.diffBytes} bytes; read the files for the rest)`;
      break;
    }
    out += diff.endsWith('\n') ? diff : `${diff}\n`;
  }
  return out.trimEnd();
}
