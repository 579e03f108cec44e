// What the review reads from the job's answer (its changes, which task changed which file) and the
// review the person is writing, kept per job in sessionStorage so a reload or a re-render loses none of it.
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { CompactJob, FullJob } from '../api.js';

/** A changed file as the answer's `changes` names it (`changed` when only `files_changed` is known). */
export interface ChangedFile {
  path: string;
  kind: 'added' | 'modified' | 'deleted' | 'changed';
  /** The tasks whose workers changed it, by their worker rows' `files_changed`; empty when none says. */
  tasks: string[];
  /** A worktree job's: the task whose branch the diff is read on (against the job's base); absent: against the checkpoint. */
  task?: string;
}

/** A worktree job's task: its branch, the commit its work is on, and the files that commit changed. */
export interface BranchFiles {
  task: string;
  branch: string;
  /** Null: nothing committed (the task changed nothing, or has not ended). */
  commit: string | null;
  files: ChangedFile[];
}

/** A comment on a line of the new side, not sent yet. */
export interface PendingComment {
  id: string;
  file: string;
  line: number;
  text: string;
  /** The task branch it was made on (a worktree job): where the review goes. */
  task?: string;
}

/** The review being written for one job. */
export interface ReviewDraft {
  comments: PendingComment[];
  note: string;
}

type TaskRef = Pick<CompactJob['tasks'][number], 'name'>;

/** The task a worker row worked for: its name is the task's, or the task's with `+entry`/`+retry` (fixers belong to no task). */
export function taskOfWorker(tasks: readonly TaskRef[], worker: string): string | null {
  const hit = tasks.find((t) => worker === t.name || worker.startsWith(`${t.name}+`));
  return hit?.name ?? null;
}

const byPath = (a: ChangedFile, b: ChangedFile): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * A worktree job's changed files per task branch, in task order, each file's kind as the job's
 * `changes` says it; null for a job whose tasks shared the workspace (one diff, changedFiles).
 */
export function branchFiles(job: FullJob): BranchFiles[] | null {
  const worktrees = job.result?.worktrees;
  if (!worktrees) return null;
  const c = job.result?.changes;
  const kind = (path: string): ChangedFile['kind'] =>
    c?.added.includes(path)
      ? 'added'
      : c?.deleted.includes(path)
        ? 'deleted'
        : c?.modified.includes(path)
          ? 'modified'
          : 'changed';
  return worktrees.tasks.map((row) => ({
    task: row.task,
    branch: row.branch,
    commit: row.commit ?? null,
    files: row.files.map((path) => ({ path, kind: kind(path), tasks: [row.task], task: row.task })).sort(byPath),
  }));
}

/** The job's changed files, sorted by path, each with the tasks that changed it. */
export function changedFiles(job: CompactJob): ChangedFile[] {
  const owners = new Map<string, Set<string>>();
  for (const w of job.result?.workers ?? []) {
    const task = taskOfWorker(job.tasks, w.name);
    if (task === null) continue;
    for (const f of w.files_changed ?? []) {
      const set = owners.get(f) ?? new Set<string>();
      set.add(task);
      owners.set(f, set);
    }
  }
  const c = job.result?.changes;
  const listed: (readonly [string, ChangedFile['kind']])[] = c
    ? [
        ...c.added.map((p) => [p, 'added'] as const),
        ...c.modified.map((p) => [p, 'modified'] as const),
        ...c.deleted.map((p) => [p, 'deleted'] as const),
      ]
    : (job.result?.files_changed ?? []).map((p) => [p, 'changed'] as const);
  return listed.map(([path, kind]) => ({ path, kind, tasks: [...(owners.get(path) ?? [])] })).sort(byPath);
}

/** Why a follow-up cannot be sent for this job now (the server's refusals, said before trying); null when it can. */
export function whyNoFollowUp(job: CompactJob): string | null {
  if (job.finished === null) {
    return `The job is still ${job.status.replace(/_/g, ' ')}: review goes back to the worker once the job has ended (the server refuses a follow-up of a live job). Steer a live worker with its message box, or cancel the job.`;
  }
  return null;
}

/** The task a review goes to when the person has not picked one: the only task, or the one task whose files carry every comment. */
export function defaultTask(
  job: CompactJob,
  files: readonly ChangedFile[],
  comments: readonly PendingComment[],
): string {
  if (job.tasks.length === 1) return job.tasks[0]?.name ?? '';
  const owners = new Set<string>();
  for (const c of comments) {
    if (c.task !== undefined) owners.add(c.task);
    else for (const t of files.find((f) => f.path === c.file)?.tasks ?? []) owners.add(t);
  }
  return owners.size === 1 ? ([...owners][0] ?? '') : '';
}

/** The task's last worker row: its session (when it has one) is what the follow-up resumes. */
export function lastWorkerOf(job: CompactJob, task: string) {
  return (job.result?.workers ?? []).filter((w) => taskOfWorker(job.tasks, w.name) === task).at(-1) ?? null;
}

const KEY = (job: string) => `gaffer.review.${job}`;
const EMPTY: ReviewDraft = { comments: [], note: '' };

function readDraft(job: string): ReviewDraft {
  try {
    const raw = sessionStorage.getItem(KEY(job));
    const parsed = raw ? (JSON.parse(raw) as Partial<ReviewDraft>) : null;
    return parsed && Array.isArray(parsed.comments)
      ? { comments: parsed.comments, note: typeof parsed.note === 'string' ? parsed.note : '' }
      : EMPTY;
  } catch {
    return EMPTY; // storage off (private mode) or a stale shape: start empty
  }
}

/** The job's review draft and a setter that keeps it in sessionStorage. */
export function useReviewDraft(job: string): [ReviewDraft, (next: ReviewDraft) => void] {
  const [draft, setDraft] = useState<{ job: string; value: ReviewDraft }>(() => ({ job, value: readDraft(job) }));
  useEffect(() => {
    if (draft.job !== job) setDraft({ job, value: readDraft(job) });
  }, [job, draft.job]);
  const set = useCallback(
    (value: ReviewDraft) => {
      setDraft({ job, value });
      try {
        if (value.comments.length === 0 && value.note === '') sessionStorage.removeItem(KEY(job));
        else sessionStorage.setItem(KEY(job), JSON.stringify(value));
      } catch {
        // storage off: the draft lives as long as the page
      }
    },
    [job],
  );
  return [draft.job === job ? draft.value : readDraft(job), set];
}

let nextId = 0;
/** A fresh id for a pending comment. */
export function commentId(): string {
  nextId += 1;
  return `c${Date.now().toString(36)}${nextId}`;
}
