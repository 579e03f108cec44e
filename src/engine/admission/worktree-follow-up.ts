import { existsSync } from 'node:fs';
import path from 'node:path';
import { GafferError } from '../../domain/errors.js';
import type { FollowUpBase, FollowUpLink } from '../../domain/follow-up.js';
import { taskPhases } from '../../domain/phase-order.js';
import type { JobSpec } from '../../domain/request.js';
import type { WorktreesJson } from '../../domain/result.js';
import { isFinalStatus } from '../../domain/status.js';
import { branchTip, isAncestor } from '../../evidence/worktree-git.js';
import type { JobRow, Store } from '../../store/store.js';
import type { JobContext } from '../job-context.js';

/** A worktree job's task as its follow-up finds it (issue 16): the branch its work is on. */
export interface FollowedBranch {
  /** `gaffer/<job>/<task>`, or the merged tree's branch for a review task that ran there. */
  branch: string;
  /** The branch's tip now: the follow-up's base, where the comments' lines are read. */
  tip: string;
  /** Where the task's work started (its job's base commit): its diff is `from..tip`. */
  from: string;
  /** The paths the task changed, workspace-relative. */
  files: string[];
  /**
   * The task's worktree folder is gone and no other follow-up of the task holds it: the follow-up's
   * worktree may go there, where a runner that keys its sessions by folder finds them.
   */
  folderFree: boolean;
}

/**
 * The branch a follow-up of a worktree job's task starts from. Refused (`conflict`) when the task
 * has none — its worktree was never made — or the branch no longer exists, naming the fix.
 */
export async function findFollowedBranch(store: Store, job: JobRow, task: string): Promise<FollowedBranch> {
  const wt = job.result?.worktrees;
  const row = wt?.tasks.find((t) => t.task === task);
  // spec 06 "Phase order": a review or verify task ran in the merged tree of the implementers' work, the job's first merge
  const [, late = []] = taskPhases(job.spec.tasks);
  const merged = row === undefined && late.some((t) => t.name === task) ? wt?.merges[0] : undefined;
  const branch = row?.branch ?? merged?.branch;
  if (!wt || branch === undefined) {
    throw new GafferError(
      'conflict',
      `task ${task} of job ${job.id} has no branch: its worktree was never made (the job ended ${job.status}) — there is no work to follow up; dispatch the task again as a new job`,
      'task',
    );
  }
  const tip = await branchTip(job.spec.workspace, branch);
  if (tip === null) {
    const commit = row ? row.commit : (merged?.commit ?? null);
    const restore = commit
      ? `recreate it (git branch ${branch} ${commit}) if that commit is still in the repository, or `
      : '';
    throw new GafferError(
      'conflict',
      `task ${task} of job ${job.id} worked on branch ${branch}, which no longer exists (deleted, or pruned by gaffer worktrees prune --unmerged): a follow-up starts from it — ${restore}dispatch the work again as a new job`,
      'task',
    );
  }
  const gone = row ? row.state === 'removed' : merged?.path === null;
  return {
    branch,
    tip,
    from: wt.base,
    files: row?.files ?? [],
    folderFree: gone && !heldByAnotherFollowUp(store, job.id, task),
  };
}

/** Another resumed follow-up of the task is running in the task's folder, or kept its worktree there. */
function heldByAnotherFollowUp(store: Store, jobId: string, task: string): boolean {
  return store.listJobs({ limit: 100_000 }).some((j) => {
    const link = j.spec.follow_up;
    if (link?.job !== jobId || link.task !== task || !link.resumed || !j.spec.follow_up_base) return false;
    if (!isFinalStatus(j.status)) return true;
    const kept = j.result?.worktrees?.tasks.find((t) => t.task === task)?.path ?? null;
    return kept !== null && existsSync(kept);
  });
}

/**
 * Where a resumed follow-up's worktree goes: the folder the followed task's session ran in, so a
 * runner that keys its sessions by folder (Claude Code by project dir) finds the session there.
 * Null: a folder of its own — for a follow-up that does not resume, or when that folder is taken
 * after all (a follow-up started since); its first attempt then starts a new session, and
 * `follow_up.resumed` says so.
 */
export function followUpFolder(ctx: JobContext, root: string): string | null {
  const link = ctx.spec.follow_up;
  const base = ctx.spec.follow_up_base;
  if (!link?.resumed || !base) return null;
  const dir = sessionFolder(ctx.services.store, root, link, base);
  if (!existsSync(dir)) return dir;
  ctx.update({ spec: { ...ctx.spec, follow_up: { ...link, resumed: false } } });
  ctx.phase(`${link.task}: the folder its session ran in (${dir}) is taken: a worktree of its own, and a new session`);
  return null;
}

/**
 * The folder a worktree's branch `gaffer/<job>/<name>` was worked in: `<root>/<job>/<name>`, or —
 * when that job was itself a follow-up resumed in its followed task's folder — that folder.
 */
function sessionFolder(store: Store, root: string, link: FollowUpLink, base: FollowUpBase): string {
  const followed = store.getJob(link.job)?.spec;
  // each hop is a job the store holds, one follow-up further up
  if (followed?.follow_up?.resumed && followed.follow_up_base && followed.follow_up.task === link.task)
    return sessionFolder(store, root, followed.follow_up, followed.follow_up_base);
  return path.join(root, ...base.branch.split('/').slice(1));
}

/**
 * Where the change a worktree follow-up applies to the workspace starts (merge "auto", gaffer
 * merge): the followed task's tip when its work is in the workspace already (a merge gaffer applied,
 * or the user's HEAD holds the commit), so only the follow-up's own change goes in; else — the
 * follow-up builds on that work — where that work started, so both go in together (up a chain of
 * follow-ups of follow-ups). Null for a job that follows no worktree task: its own base.
 */
export async function followUpApplyFrom(store: Store, spec: JobSpec): Promise<{ commit: string; why: string } | null> {
  let link = spec.follow_up;
  let base: FollowUpBase | undefined = spec.follow_up_base;
  const unmerged: string[] = [];
  // each hop is a job the store holds: a chain is as long as the follow-ups someone asked for
  while (link !== undefined && base !== undefined) {
    const followed = store.getJob(link.job);
    const wt = followed?.result?.worktrees;
    if (!followed || !wt)
      return {
        commit: base.commit,
        why: `job ${link.job} is no longer in the store: only the change on top of ${base.branch} is applied`,
      };
    if (await isInWorkspace(spec.workspace, wt, link.task, base)) {
      const also = unmerged.length > 0 ? ` (with the work of ${unmerged.join(', ')}, not merged yet)` : '';
      return {
        commit: base.commit,
        why: `${base.branch} is in the workspace already: only what was done on top of it is applied${also}`,
      };
    }
    unmerged.push(base.branch);
    if (!followed.spec.follow_up || !followed.spec.follow_up_base) {
      return {
        commit: wt.base,
        why: `${unmerged.join(', ')} not merged into the workspace yet: applied together with this follow-up's change, from job ${followed.id}'s base`,
      };
    }
    link = followed.spec.follow_up;
    base = followed.spec.follow_up_base;
  }
  return null;
}

/** The followed task's work is in the workspace: its branch merged by gaffer, or its tip in the user's HEAD. */
async function isInWorkspace(workspace: string, wt: WorktreesJson, task: string, base: FollowUpBase): Promise<boolean> {
  const row = wt.tasks.find((t) => t.task === task);
  if (row?.merge === 'merged' || wt.merges.some((m) => m.applied && m.branch === base.branch)) return true;
  return isAncestor(workspace, base.commit, 'HEAD');
}
