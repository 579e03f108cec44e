import { GafferError } from '../../domain/errors.js';
import { isFinalStatus } from '../../domain/status.js';
import { diffPathBetweenCommits } from '../../evidence/commit-diff.js';
import type { JobRow } from '../../store/store.js';

/**
 * The diff of `path` as a worktree job's task left it: between the job's base commit and the
 * commit on the task's branch, read from the workspace's repository. Each task has a diff of its
 * own (there is no one checkpoint), so `task` is required, and a name the job has not is refused
 * with the names it has.
 */
export async function worktreeTaskDiff(job: JobRow, path: string, task: string | undefined): Promise<string> {
  const mergeOf = job.spec.merge_of;
  if (mergeOf) {
    // a merge later has no tasks of its own: what it merged is the branches of the job it merges
    throw new GafferError(
      'conflict',
      `job ${job.id} merges the branches of job ${mergeOf.job}: read each file's diff there, per task (GET /api/jobs/${mergeOf.job}/diff?path=…&task=…)`,
      'job_id',
    );
  }
  const names = job.spec.tasks.map((t) => t.name);
  const choose = `one of ${names.join(', ')}`;
  if (task === undefined) {
    throw new GafferError(
      'invalid_request',
      `task: job ${job.id} ran each task on its own branch (isolation "worktree"), so its diff is per task — add task=<name>, ${choose}`,
      'task',
    );
  }
  if (!names.includes(task))
    throw new GafferError('not_found', `task: job ${job.id} has no task ${JSON.stringify(task)} — ${choose}`, 'task');
  const worktrees = job.result?.worktrees;
  const row = worktrees?.tasks.find((t) => t.task === task);
  if (!worktrees || !row)
    throw new GafferError(
      'conflict',
      `task ${task} of job ${job.id} has no branch yet (${job.status}): its worktree was not made`,
      'task',
    );
  if (row.commit === null) {
    // a task's work goes on its branch when it ends: in a live job, none yet may be work still to come
    if (!isFinalStatus(job.status))
      throw new GafferError(
        'conflict',
        `task ${task} of job ${job.id} has no commit on ${row.branch} yet (the job is ${job.status}): its work is committed there when it ends`,
        'task',
      );
    return '';
  }
  return diffPathBetweenCommits(job.spec.workspace, worktrees.base, row.commit, path);
}
