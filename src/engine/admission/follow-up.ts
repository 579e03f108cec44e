import { isAbsolute, relative, resolve } from 'node:path';
import { GafferError } from '../../domain/errors.js';
import {
  buildFollowUpInstruction,
  FOLLOW_UP_LIMITS,
  lineAt,
  parseFollowUpBody,
  type FollowUpBase,
  type FollowUpComment,
  type FollowUpLink,
} from '../../domain/follow-up.js';
import { describeVerify, LIMITS, type TaskSpec } from '../../domain/request.js';
import { isFinalStatus } from '../../domain/status.js';
import { fileDiff } from '../../evidence/index.js';
import { commitFileDiff, readAtCommit } from '../../evidence/worktree-git.js';
import type { AttemptRow, JobRow, Store } from '../../store/store.js';
import { findFollowedBranch, type FollowedBranch } from './worktree-follow-up.js';
import { MANIFEST_MAX_BYTES, readBounded } from '../../platform/files/bounded-read.js';

/** What admission needs to submit a follow-up: the new job's request and its link to the task it follows. */
export interface FollowUpPlan {
  body: Record<string, unknown>;
  link: FollowUpLink;
  /** A worktree task's follow-up: the branch and commit its worktree starts from; null: a follow-up in the shared workspace. */
  base: FollowUpBase | null;
  /** The roster entry the task's last attempt ran on (a climb's rung): the follow-up is routed there; null: none. */
  entry: string | null;
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
 * lines as they read now and the note; the job's verify settings. Refuses a live job. A worktree
 * job's task is followed up on its branch: the lines are read there, and the new job runs in a
 * worktree from the branch's tip (`base`), merged as the original job's `merge` says.
 */
export async function planFollowUp(
  store: Store,
  job: JobRow,
  taskName: string,
  rawBody: unknown,
): Promise<FollowUpPlan> {
  const request = parseFollowUpBody(rawBody);
  if (!isFinalStatus(job.status))
    throw new GafferError(
      'conflict',
      `job ${job.id} is still ${job.status}; wait for it (gaffer wait ${job.id}) or cancel it before a follow-up`,
      'job_id',
    );
  const task = job.spec.tasks.find((t) => t.name === taskName);
  if (!task)
    throw new GafferError(
      'not_found',
      `job ${job.id} has no task ${JSON.stringify(taskName)} (its tasks: ${job.spec.tasks.map((t) => t.name).join(', ')})`,
      'task',
    );
  const followed = job.spec.isolation === 'worktree' ? await findFollowedBranch(store, job, taskName) : null;
  const last = lastAttemptOf(store.listAttempts(job.id), taskName);
  const session = last?.report?.session ?? null;
  // a worktree task's session is resumed only in the folder it ran in (followUpFolder); else a new session, told the diff
  const resumed = session !== null && (followed === null || followed.folderFree);
  const comments: (FollowUpComment & { current: string })[] = [];
  for (const [i, c] of request.comments.entries())
    comments.push({ ...c, current: await currentLine(job.spec.workspace, c, `comments[${i}]`, followed) });
  const commented = comments.map((c) => c.file);
  const diff = resumed
    ? null
    : followed
      ? await branchDiff(job.spec.workspace, followed, last, commented)
      : await taskDiff(job, task, last, commented);
  const instruction = buildFollowUpInstruction({ original: task.instruction, comments, note: request.note, diff });
  const link: FollowUpLink = { job: job.id, task: taskName, resumed };
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
    ...(followed ? { isolation: 'worktree', merge: spec.merge } : {}),
    tasks: [followUpTask(task, last, instruction)],
  };
  return {
    body,
    link,
    base: followed ? { branch: followed.branch, commit: followed.tip } : null,
    entry: last?.entry ?? null,
  };
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

/**
 * The commented line as it reads now: in the workspace, or on the followed task's branch (its tip)
 * for a worktree task. A file outside the workspace, one that is not there, or a line past its end is refused.
 */
async function currentLine(
  workspace: string,
  comment: FollowUpComment,
  at: string,
  followed: FollowedBranch | null,
): Promise<string> {
  const path = resolve(workspace, comment.file);
  const rel = relative(workspace, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel))
    throw new GafferError(
      'invalid_request',
      `${at}.file: must be a path inside the workspace ${workspace}, got ${JSON.stringify(comment.file)}`,
      `${at}.file`,
    );
  if (followed) {
    const content = await readAtCommit(workspace, followed.tip, rel);
    if (content === null)
      throw new GafferError(
        'invalid_request',
        `${at}.file: ${JSON.stringify(comment.file)} is not on branch ${followed.branch} (the task's work) — comment on a file the branch has`,
        `${at}.file`,
      );
    return lineAt(content.toString('utf8'), comment, at);
  }
  // read while a request waits: a FIFO or a link to /dev/zero a worker left must not hold the server (issue 32)
  const read = readBounded(path, { maxBytes: MANIFEST_MAX_BYTES, within: workspace });
  if (!read.ok) {
    throw new GafferError(
      'invalid_request',
      `${at}.file: cannot read ${JSON.stringify(comment.file)} in the workspace (${read.why}) — comment on a regular file that exists now`,
      `${at}.file`,
    );
  }
  return lineAt(read.bytes.toString('utf8'), comment, at);
}

/** The files the task's last attempt changed, diffed against the job's checkpoint, bounded (boundedDiff). */
async function taskDiff(
  job: JobRow,
  task: TaskSpec,
  last: AttemptRow | null,
  commented: readonly string[],
): Promise<string> {
  const pre = job.checkpoint?.pre;
  if (!pre) return '(no checkpoint: the job never took one, so there is no diff)';
  const changed = new Set(last?.report?.filesChanged ?? []);
  if (changed.size === 0) for (const f of job.result?.files_changed ?? []) changed.add(f);
  if (changed.size === 0) return `(task ${task.name} changed no files)`;
  return boundedDiff(job.spec.workspace, changed, commented, (path) =>
    fileDiff(pre, job.checkpoint?.post ?? null, path),
  );
}

/** A worktree task's files as its branch has them, diffed against where its work started (its job's base), bounded (boundedDiff). */
async function branchDiff(
  workspace: string,
  followed: FollowedBranch,
  last: AttemptRow | null,
  commented: readonly string[],
): Promise<string> {
  const changed = new Set([...followed.files, ...(last?.report?.filesChanged ?? [])]);
  if (changed.size === 0) return `(the task changed no files on ${followed.branch})`;
  return boundedDiff(workspace, changed, commented, (path) =>
    commitFileDiff(workspace, followed.from, followed.tip, path),
  );
}

/** Each changed path's diff, the commented ones first, then the rest sorted, at most FOLLOW_UP_LIMITS.diffBytes in all. */
async function boundedDiff(
  workspace: string,
  changed: ReadonlySet<string>,
  commented: readonly string[],
  diffOf: (path: string) => Promise<string>,
): Promise<string> {
  let out = '';
  const first = new Set(commented.map((f) => relative(workspace, resolve(workspace, f))).filter((f) => changed.has(f)));
  for (const path of [...first, ...[...changed].filter((f) => !first.has(f)).sort()]) {
    let diff: string;
    try {
      diff = await diffOf(path);
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
