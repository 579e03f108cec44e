import { existsSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { WorktreesJson } from '../../domain/result.js';
import { runGit } from '../../evidence/git.js';
import {
  deleteBranch,
  isAncestor,
  pruneWorktreeRecords,
  readRepo,
  serialized,
  type RepoFacts,
} from '../../evidence/worktree-git.js';
import { spawnCommand } from '../../platform/spawner/spawner.js';
import type { JobRow } from '../../store/store.js';
import type { EngineServices } from '../job-context.js';
import { epochS } from '../clock.js';
import { worktreeRoot } from '../placement/worktree.js';

/** One of gaffer's worktrees or branches (`gaffer worktrees ls`). */
export interface WorktreeEntry {
  job: string;
  task: string;
  workspace: string;
  branch: string;
  /** The worktree's folder while it exists. */
  path: string | null;
  /** `merged` (its change is in the workspace), `kept` (the worktree is still there), `unmerged` (only the branch, for review). */
  state: 'merged' | 'kept' | 'unmerged';
  /** The branch holds no commit beyond the job's base (nothing to merge or lose but what the worktree holds). */
  empty: boolean;
  /** When the job ended (epoch s), and the days since. */
  ended: number;
  age_days: number;
  /** The worktree's size on disk (its links not followed), MB; null without a worktree. */
  size_mb: number | null;
}

/** What `gaffer worktrees prune` did. */
export interface PruneAnswer {
  removed_worktrees: string[];
  deleted_branches: string[];
  /** Branches with work not merged, left because `unmerged` was not asked for. */
  kept_unmerged: string[];
  /** What could not be removed, and why. */
  failed: string[];
  /** Disk the remaining worktrees use, MB. */
  remaining_mb: number;
}

/** The worktree jobs the store still holds, newest first. */
function worktreeJobs(services: EngineServices): JobRow[] {
  return services.store
    .listJobs({ limit: 100_000 })
    .filter((j) => j.spec.isolation === 'worktree' && j.result?.worktrees);
}

/** Every worktree and branch of gaffer's worktree jobs, with its state, age and size. */
export async function listWorktrees(services: EngineServices): Promise<WorktreeEntry[]> {
  const entries: WorktreeEntry[] = [];
  for (const job of worktreeJobs(services)) {
    const wt = job.result?.worktrees as WorktreesJson;
    const repo = await readRepo(job.spec.workspace);
    if ('refused' in repo) continue;
    const head = (await runGit(['rev-parse', 'HEAD'], { cwd: repo.top, timeoutMs: 30_000 })).stdout
      .toString('utf8')
      .trim();
    const rows: { task: string; branch: string; path: string | null; merged: boolean; commit: string | null }[] =
      wt.tasks.map((t) => ({
        task: t.task,
        branch: t.branch,
        path: t.path,
        merged: t.merge === 'merged',
        commit: t.commit,
      }));
    for (const m of wt.merges)
      rows.push({
        task: m.branch.slice(m.branch.lastIndexOf('/') + 1),
        branch: m.branch,
        path: m.path,
        merged: m.applied,
        commit: m.commit,
      });
    for (const r of rows) {
      const tip = await branchTip(repo, r.branch);
      const path = r.path !== null && existsSync(r.path) ? r.path : null;
      if (tip === null && path === null) continue;
      // a branch still at the base holds no work; one the user merged into HEAD is merged too
      const empty = tip === null || tip === wt.base;
      const merged =
        r.merged ||
        (path === null && (empty || (tip !== null && head !== '' && (await isAncestor(repo.top, tip, head)))));
      entries.push({
        job: job.id,
        task: r.task,
        workspace: job.spec.workspace,
        branch: r.branch,
        path,
        empty,
        state: merged ? 'merged' : path !== null ? 'kept' : 'unmerged',
        ended: job.finished ?? job.created,
        age_days: Math.round(((epochS() - (job.finished ?? job.created)) / 86_400) * 10) / 10,
        size_mb: path === null ? null : await sizeMb(path),
      });
    }
  }
  return entries;
}

/**
 * Prunes gaffer's worktrees and branches: a merged one, or one older than `worktrees.keep_days`,
 * loses its worktree (its work is committed on its branch); a merged branch is deleted, an unmerged
 * one only when `unmerged` is asked; then, while the worktrees left use more than `worktrees.max_gb`,
 * the oldest worktrees go.
 */
export async function pruneWorktrees(
  services: EngineServices,
  opts: { unmerged?: boolean } = {},
): Promise<PruneAnswer> {
  const { keepDays, maxGb } = services.worktrees;
  const answer: PruneAnswer = {
    removed_worktrees: [],
    deleted_branches: [],
    kept_unmerged: [],
    failed: [],
    remaining_mb: 0,
  };
  const entries = await listWorktrees(services);
  const repos = new Map<string, RepoFacts>();
  const repoOf = async (e: WorktreeEntry): Promise<RepoFacts | null> => {
    const known = repos.get(e.workspace);
    if (known) return known;
    const repo = await readRepo(e.workspace);
    if ('refused' in repo) return null;
    repos.set(e.workspace, repo);
    return repo;
  };
  const removeTree = async (e: WorktreeEntry, repo: RepoFacts): Promise<boolean> => {
    if (e.path === null) return true;
    const path = e.path;
    // its work is on its branch: what a prune loses is what no commit holds (build output, links)
    const result = await serialized(repo, () =>
      runGit(['worktree', 'remove', '--force', path], { cwd: repo.top, timeoutMs: 120_000 }),
    );
    if (result.exitCode !== 0) {
      answer.failed.push(`${path}: ${result.stderr.trim()}`);
      return false;
    }
    answer.removed_worktrees.push(path);
    return true;
  };
  const left: WorktreeEntry[] = [];
  for (const e of entries) {
    const repo = await repoOf(e);
    if (!repo) continue;
    const expired = epochS() - e.ended > keepDays * 86_400;
    if (e.state !== 'merged' && !expired) {
      left.push(e);
      continue;
    }
    if (!(await removeTree(e, repo))) continue;
    if (e.state !== 'merged' && !e.empty && !opts.unmerged) {
      answer.kept_unmerged.push(e.branch);
      continue;
    }
    const refused = await serialized(repo, () => deleteBranch(repo, e.branch, true));
    if (refused === null) answer.deleted_branches.push(e.branch);
    else answer.failed.push(`${e.branch}: ${refused}`);
  }
  // the disk cap: the oldest worktrees first (their branches stay)
  let total = left.reduce((n, e) => n + (e.size_mb ?? 0), 0);
  if (maxGb !== null) {
    for (const e of [...left].sort((a, b) => a.ended - b.ended)) {
      if (total <= maxGb * 1024) break;
      const repo = await repoOf(e);
      if (e.path === null || !repo) continue;
      if (await removeTree(e, repo)) total -= e.size_mb ?? 0;
    }
  }
  answer.remaining_mb = Math.round(total * 10) / 10;
  for (const repo of repos.values()) await serialized(repo, () => pruneWorktreeRecords(repo));
  removeEmptyJobDirs(worktreeRoot(services));
  return answer;
}

async function branchTip(repo: RepoFacts, branch: string): Promise<string | null> {
  const r = await runGit(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], {
    cwd: repo.top,
    timeoutMs: 30_000,
  });
  return r.exitCode === 0 ? r.stdout.toString('utf8').trim() : null;
}

async function sizeMb(path: string): Promise<number | null> {
  const r = await spawnCommand({
    cmd: 'du',
    args: ['-sk', path],
    cwd: os.tmpdir(),
    env: process.env,
    timeoutMs: 120_000,
    input: '',
  });
  const kb = Number(r.stdout.toString('utf8').split(/\s/)[0]);
  return r.exitCode === 0 && Number.isFinite(kb) ? Math.round((kb / 1024) * 1000) / 1000 : null;
}

function removeEmptyJobDirs(root: string): void {
  if (!existsSync(root)) return;
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    try {
      if (statSync(dir).isDirectory() && readdirSync(dir).length === 0) rmdirSync(dir);
    } catch {
      // raced with another prune or job: left as it is
    }
  }
}
