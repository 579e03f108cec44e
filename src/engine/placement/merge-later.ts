import { GafferError } from '../../domain/errors.js';
import type { JobSpec, MergeOf } from '../../domain/request.js';
import type { JobResult, WorktreeTaskJson, WorktreesJson } from '../../domain/result.js';
import { isFinalStatus, type JobStatus } from '../../domain/status.js';
import { branchTip, readRepo, type RepoFacts } from '../../evidence/worktree-git.js';
import type { JobRow, Store } from '../../store/store.js';
import { epochS } from '../clock.js';
import type { JobContext } from '../job-context.js';
import { failJob } from '../pipeline/carry-out.js';
import { sandboxesOwnRuns } from '../pipeline/own-guard.js';
import { worktreeRoot } from './worktree.js';
import { emptyTotals } from '../settle/settle.js';
import { followUpApplyFrom } from '../admission/worktree-follow-up.js';
import { integrate, type Integrated } from './worktree-job.js';

/**
 * `gaffer merge JOB [TASK]` as a job of its own: a finished worktree job's passing branches not
 * merged yet (or the named task's) merged in a worktree, the merged tree verified, and applied to
 * the workspace only when it passed — as `merge: "auto"` does at a job's end. It is admitted, run,
 * listed and cancelled like any job; at its end the original job's `worktrees` says what was merged.
 */

/** The branches a merge of `job` takes, or the refusal that names why there are none (before anything is stored). */
async function mergeable(
  job: JobRow,
  task: string | null,
): Promise<{ wt: WorktreesJson; rows: WorktreeTaskJson[]; repo: RepoFacts }> {
  const wt = job.result?.worktrees;
  if (job.spec.isolation !== 'worktree' || !wt)
    throw new GafferError('invalid_request', `job ${job.id} is not a worktree job: it has no branches to merge`, 'job');
  if (!isFinalStatus(job.status))
    throw new GafferError('conflict', `job ${job.id} is still ${job.status}; wait for it to end first`, 'job');
  const rows: WorktreeTaskJson[] = task
    ? wt.tasks.filter((t) => t.task === task)
    : wt.tasks.filter((t) => t.state !== 'kept' && t.commit !== null && t.merge !== 'merged');
  if (task && rows.length === 0)
    throw new GafferError(
      'not_found',
      `job ${job.id} has no task ${JSON.stringify(task)} (its tasks: ${wt.tasks.map((t) => t.task).join(', ')})`,
      'task',
    );
  if (rows.length === 0) throw new GafferError('conflict', `job ${job.id} has no passing branch left to merge`, 'job');
  const empty = rows.find((r) => r.commit === null);
  if (empty)
    throw new GafferError('conflict', `task ${empty.task} changed nothing: its branch has nothing to merge`, 'task');
  const repo = await readRepo(job.spec.workspace);
  if ('refused' in repo) throw new GafferError('invalid_request', `the workspace ${repo.refused}`, 'workspace');
  return { wt, rows, repo };
}

/**
 * The spec of the job that merges `job`'s branches, refused as `gaffer merge` always was (not a
 * worktree job, still live, nothing to merge) and while another merge of it is live. It has no tasks:
 * its work is the merge, verified as the original's verification settings say.
 */
export async function mergeSpec(store: Store, job: JobRow, task: string | null): Promise<JobSpec> {
  await mergeable(job, task);
  const running = store.listLiveJobs().find((j) => j.spec.merge_of?.job === job.id);
  if (running)
    throw new GafferError(
      'conflict',
      `job ${job.id} is being merged by job ${running.id} (${running.status}): wait for it (gaffer wait ${running.id}) or cancel it first`,
      'job',
    );
  const s = job.spec;
  return {
    workspace: s.workspace,
    title: `merge of ${job.id}${task ? ` ${task}` : ''}`,
    context: null,
    tasks: [],
    parallel: false,
    runner: null,
    model: null,
    // the merged tree is verified as the original job's work was
    verify: s.verify,
    ...(s.known_failures ? { known_failures: s.known_failures } : {}),
    verify_scope: s.verify_scope,
    verify_timeout_s: s.verify_timeout_s,
    fix_rounds: 0,
    expected_output_contains: s.expected_output_contains,
    criteria: [],
    timeout_s: s.timeout_s,
    max_rounds: s.max_rounds,
    isolation: 'worktree',
    merge: 'auto',
    approval: 'never',
    client_request_id: null,
    merge_of: { job: job.id, task },
  };
}

/** Runs a merge job (compose.ts picks this for a spec with `merge_of`): the merge, its record on the original job, its end. */
export async function runMergeJob(ctx: JobContext): Promise<void> {
  try {
    const of = ctx.spec.merge_of as MergeOf;
    ctx.enter('verifying', `merging the passing branches of job ${of.job}${of.task ? ` (task ${of.task})` : ''}`, {
      started: epochS(),
    });
    if (ctx.isCancelled) return settleMerge(ctx, null);
    const job = ctx.services.store.getJob(of.job);
    if (!job) throw new Error(`job ${of.job} is gone from the store`);
    settleMerge(ctx, await mergeInto(ctx, job, of.task));
  } catch (err) {
    // stopped mid-merge: the cancel's end, not gaffer's failure
    if (ctx.isCancelled) settleMerge(ctx, null);
    else failJob(ctx, err);
  }
}

/** A merge's end: the merged tree, and the branches it took as their rows now say. */
interface MergeEnd {
  merged: Integrated;
  rows: WorktreeTaskJson[];
}

/** The merge itself (what `gaffer merge` always did), its record written onto the original job's `worktrees`. */
async function mergeInto(ctx: JobContext, job: JobRow, task: string | null): Promise<MergeEnd> {
  const { wt, rows, repo } = await mergeable(job, task);
  let name = '+merged';
  for (let n = 2; (await branchTip(repo.top, `gaffer/${job.id}/${name}`)) !== null; n++) name = `+merged-${n}`;
  const sandboxed = sandboxesOwnRuns(ctx);
  const say = (message: string) => ctx.phase(message);
  const taken = rows.map((r) => ({ ...r }));
  // a follow-up of a worktree task: its change goes in on top of that task's work, or with it
  const applyFrom = await followUpApplyFrom(ctx.services.store, job.spec);
  if (applyFrom) say(applyFrom.why);
  const site = {
    repo,
    base: { commit: wt.base },
    root: worktreeRoot(ctx.services),
    sandboxed,
    job: job.id,
    name,
    ...(applyFrom ? { applyFrom: applyFrom.commit } : {}),
  };
  const merged = await integrate(ctx, say, site, taken, { late: [], apply: true });
  const tasks = wt.tasks.map((t) => taken.find((r) => r.task === t.task) ?? t);
  // a cancelled merge is recorded too: its worktree and branch are found (and pruned) through the original job
  const next: WorktreesJson = { ...wt, tasks, merges: [...wt.merges, merged.json] };
  ctx.services.store.updateJob(job.id, { result: { ...(job.result as JobResult), worktrees: next } });
  return { merged, rows: taken };
}

/**
 * The merge job's end: `done` when the verified merge was applied with every branch it took, `partial`
 * when a branch conflicted or nothing was applied (the verdict says why), `cancelled` (`interrupted`
 * at a shutdown) when it was stopped — then nothing was applied.
 */
function settleMerge(ctx: JobContext, end: MergeEnd | null): void {
  const stopped: JobStatus | null = ctx.isCancelled
    ? ctx.interruptReason !== null
      ? 'interrupted'
      : 'cancelled'
    : null;
  const json = end?.merged.json ?? null;
  const conflicts = (end?.rows ?? []).filter((r) => r.merge === 'conflict').map((r) => r.task);
  const status: JobStatus = stopped ?? (json?.applied && conflicts.length === 0 ? 'done' : 'partial');
  const verdict =
    stopped !== null
      ? `${stopped}: nothing applied to the workspace`
      : json?.applied
        ? `merged ${json.tasks.join(', ')}: the merged tree verified and applied to the workspace${conflicts.length > 0 ? `; ${conflicts.join(', ')} conflicted, not merged` : ''}`
        : `not applied: ${json?.why ?? 'nothing merged'}`;
  const files = json?.applied
    ? [...new Set((end?.rows ?? []).filter((r) => r.merge === 'merged').flatMap((r) => r.files))].sort()
    : [];
  const result: JobResult = {
    files_changed: files,
    claimed_only: [],
    changes: null,
    verification: end?.merged.verification ?? null,
    fix_rounds_run: 0,
    proof: null,
    totals: emptyTotals(),
    exit_code: status === 'done' ? 0 : 1,
  };
  ctx.settle('settled', status, {
    result,
    verdict,
    error: stopped === 'interrupted' ? ctx.interruptReason : null,
    finished: epochS(),
  });
}
