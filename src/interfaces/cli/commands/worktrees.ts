import type { CliContext } from '../cli-context.js';
import { renderCompact } from '../render.js';
import { watchToEnd } from './watch.js';

/**
 * `gaffer worktrees ls|prune` work on this machine's repositories and data dir, so they run in this
 * process (a server's jobs are in the same store); `gaffer merge` starts a job, as dispatch does.
 */

/** `gaffer worktrees [ls]`: gaffer's worktrees and branches, with job, state, age and size. */
export async function worktreesListCommand(cli: CliContext): Promise<number> {
  const entries = await (await cli.engine()).worktrees();
  if (cli.json) cli.out(JSON.stringify({ worktrees: entries }, null, 2));
  else if (entries.length === 0) cli.out('no gaffer worktrees or branches');
  else {
    const total = entries.reduce((n, e) => n + (e.size_mb ?? 0), 0);
    for (const e of entries) {
      cli.out(
        `${e.job}  ${e.task.padEnd(14)} ${e.state.padEnd(8)} ${`${e.age_days} d`.padStart(7)}  ${e.size_mb === null ? '       -' : `${e.size_mb} MB`.padStart(8)}  ${e.branch}${e.path ? `  ${e.path}` : ''}`,
      );
    }
    cli.out(`${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}, worktrees ${Math.round(total * 10) / 10} MB`);
  }
  return 0;
}

/** `gaffer worktrees prune [--unmerged]`. */
export async function worktreesPruneCommand(cli: CliContext, flags: { unmerged?: boolean }): Promise<number> {
  const answer = await (await cli.engine()).pruneWorktrees({ unmerged: flags.unmerged ?? false });
  if (cli.json) cli.out(JSON.stringify(answer, null, 2));
  else {
    cli.out(
      `removed ${answer.removed_worktrees.length} worktree(s), deleted ${answer.deleted_branches.length} branch(es); worktrees left: ${answer.remaining_mb} MB`,
    );
    for (const p of answer.removed_worktrees) cli.out(`  removed ${p}`);
    for (const b of answer.deleted_branches) cli.out(`  deleted ${b}`);
    if (answer.kept_unmerged.length > 0)
      cli.out(
        `  kept ${answer.kept_unmerged.length} branch(es) with unmerged work (--unmerged deletes them): ${answer.kept_unmerged.join(', ')}`,
      );
    for (const f of answer.failed) cli.out(`  failed: ${f}`);
  }
  return answer.failed.length > 0 ? 1 : 0;
}

/**
 * `gaffer merge JOB [TASK] [--no-wait]`: starts the job that merges the branches (against a server,
 * the server runs it) and follows it to its end: 0 when it ended done (verified and applied), else 1.
 * `--no-wait` answers the merge job at once (a server's; in process the merge runs here, so it is waited for).
 */
export async function mergeCommand(
  cli: CliContext,
  id: string,
  task: string | undefined,
  flags: { wait?: boolean },
): Promise<number> {
  const api = await cli.api();
  const { job } = await api.merge(id, task ?? null);
  cli.err(`gaffer: merge job ${job.id} accepted for ${id}${task ? ` ${task}` : ''}`);
  if (api.engine === null && flags.wait === false) {
    cli.out(cli.json ? JSON.stringify(job, null, 2) : job.id);
    return 0;
  }
  const final = await watchToEnd(cli, api, job);
  cli.out(cli.json ? JSON.stringify(final, null, 2) : renderCompact(final));
  return final.status === 'done' ? 0 : 1;
}
