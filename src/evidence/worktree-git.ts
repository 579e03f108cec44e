import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runGit, runGitOk, splitNul, type GitCallOptions } from './git.js';

/**
 * The git side of worktree isolation (spec 06): the base commit, the worktrees and branches, their
 * commits, merges and the patch that carries a result back. Every call runs with the user's hooks
 * and fsmonitor off (`-c`, which beats the repository's config): gaffer's git work runs no code of
 * the repository's. Calls on one repository are serialized by the caller (`serialized` below).
 */

const TIMEOUT_MS = 120_000;
/** Overrides on every call in the user's repository: no hook, no fsmonitor daemon, no pager. */
const SAFE = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'core.pager=cat'];
/** The identity of gaffer's commits (the user's global config is never read). */
const IDENTITY = { GIT_AUTHOR_NAME: 'gaffer', GIT_AUTHOR_EMAIL: 'gaffer@localhost', GIT_COMMITTER_NAME: 'gaffer', GIT_COMMITTER_EMAIL: 'gaffer@localhost' };

const call = (cwd: string, env?: Record<string, string>): GitCallOptions => ({ cwd, timeoutMs: TIMEOUT_MS, ...(env ? { env } : {}) });
const git = async (cwd: string, args: string[], env?: Record<string, string>): Promise<string> =>
  (await runGitOk([...SAFE, ...args], call(cwd, env))).toString('utf8').trim();

/** Where a workspace sits in its repository. */
export interface RepoFacts {
  /** The repository's top folder. */
  top: string;
  /** The workspace relative to it ('' at the top). */
  prefix: string;
  /** The shared git dir (for serializing calls on one repository). */
  commonDir: string;
  head: string;
}

/** The workspace's repository, or why worktree isolation cannot use it (spec 06: not a repository, or no commit yet). */
export async function readRepo(workspace: string): Promise<RepoFacts | { refused: string }> {
  const inside = await runGit([...SAFE, 'rev-parse', '--show-toplevel', '--show-prefix', '--git-common-dir'], call(workspace));
  if (inside.exitCode !== 0) return { refused: 'is not inside a git repository — run `git init` and commit, or use isolation "shared"' };
  const [top = '', prefix = '', common = ''] = inside.stdout.toString('utf8').split('\n');
  const head = await runGit([...SAFE, 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], call(workspace));
  if (head.exitCode !== 0) return { refused: 'is a git repository with no commit yet — commit once, or use isolation "shared"' };
  return { top, prefix: prefix.replace(/\/$/, ''), commonDir: path.resolve(workspace, common), head: head.stdout.toString('utf8').trim() };
}

/** A commit gaffer made, with its tree (compared with a task's result tree without asking git). */
export interface BaseCommit {
  commit: string;
  /** Null when not known (git is asked). */
  tree: string | null;
}

/**
 * A commit holding HEAD plus the working tree's uncommitted changes — tracked edits, deletions and
 * untracked files that are not ignored — made through a private index with `commit-tree` (no hook
 * runs, the user's index and branches are untouched). Its parent is HEAD.
 */
export async function commitWorkingTree(repo: RepoFacts, message: string): Promise<BaseCommit> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gaffer-base-'));
  const index = path.join(dir, 'index');
  const env = { ...IDENTITY, GIT_INDEX_FILE: index };
  try {
    // the user's index as the start: its stat cache spares hashing what did not change (a copy: theirs is never written)
    const own = await git(repo.top, ['rev-parse', '--path-format=absolute', '--git-path', 'index']);
    if (existsSync(own)) copyFileSync(own, index);
    else await git(repo.top, ['read-tree', repo.head], env);
    await git(repo.top, ['add', '-A', '--', '.'], env);
    const tree = await git(repo.top, ['write-tree'], env);
    return { commit: await git(repo.top, ['commit-tree', tree, '-p', repo.head, '-m', message], env), tree };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `git worktree add --no-checkout -b <branch> <dir> <base>`: the repository-wide part of making a
 * worktree (its administrative folder, its branch), the part calls on one repository must take
 * turns for. `checkOutWorktree` fills it.
 */
export async function addWorktree(repo: RepoFacts, dir: string, branch: string, base: string): Promise<WorktreeGit> {
  await git(repo.top, ['worktree', 'add', '--quiet', '--no-checkout', '-b', branch, dir, base], IDENTITY);
  // read now, before any worker could rewrite the `.git` file that names it
  const pointer = readFileSync(path.join(dir, '.git'), 'utf8').match(/^gitdir: (.+)$/m);
  if (!pointer?.[1]) throw new Error(`${dir}/.git does not name its git dir`);
  return { dir, gitDir: path.resolve(dir, pointer[1].trim()) };
}

/**
 * A worktree as gaffer made it: its folder and its administrative folder, read when it was made.
 * gaffer's later calls in it name both (`--git-dir`, `--work-tree`) and never follow the folder's
 * `.git` file, which a worker can rewrite — say, to point gaffer's reset at the user's own checkout.
 */
export interface WorktreeGit {
  dir: string;
  gitDir: string;
}

const pinned = (wt: WorktreeGit, args: string[]): string[] => [`--git-dir=${wt.gitDir}`, `--work-tree=${wt.dir}`, ...args];

/**
 * Checks out a new worktree's HEAD into it and its index (what `worktree add` does itself, here
 * outside the repository's turn: it touches that worktree alone), then keeps a copy of that index
 * at `indexCopy`: the base with fresh stat data, the start of the task's commit.
 */
export async function checkOutWorktree(wt: WorktreeGit, indexCopy: string): Promise<void> {
  // a split index would need its shared part beside the copy
  await git(wt.dir, pinned(wt, ['-c', 'core.splitIndex=false', 'reset', '--hard', '--quiet', '--no-recurse-submodules']));
  copyFileSync(path.join(wt.gitDir, 'index'), indexCopy);
}

/**
 * Puts a task's result on its branch: the base plus the given paths (top-relative, changed or
 * deleted) as the worktree holds them — nothing else. The commit is built through a private index
 * started from the base (its index copy when there is one, else read from the commit), and the
 * branch, the worktree's HEAD and its index are set to it, so a commit the worker made itself (say,
 * of a file it then deleted: content the evidence never saw) is not on the branch and cannot be
 * merged. Returns the new tip, or null when nothing differs from the base (the branch is then at it).
 */
export async function commitWorktree(wt: WorktreeGit, branch: string, base: BaseCommit & { index: string | null }, message: string, paths: readonly string[]): Promise<string | null> {
  const { dir } = wt;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gaffer-task-'));
  const index = path.join(tmp, 'index');
  const env = { ...IDENTITY, GIT_INDEX_FILE: index, GIT_LITERAL_PATHSPECS: '1' };
  try {
    let tip = base.commit;
    if (paths.length > 0) {
      if (base.index !== null && existsSync(base.index)) copyFileSync(base.index, index);
      else await git(dir, pinned(wt, ['read-tree', base.commit]), env);
      const added = await runGit([...SAFE, ...pinned(wt, ['add', '-A', '--pathspec-from-file=-', '--pathspec-file-nul'])], { ...call(dir, env), input: `${paths.join('\0')}\0` });
      if (added.exitCode !== 0) throw new Error(`git add in ${dir}: ${added.stderr.trim()}`);
      const tree = await git(dir, pinned(wt, ['write-tree']), env);
      const baseTree = base.tree ?? (await git(dir, pinned(wt, ['rev-parse', `${base.commit}^{tree}`])));
      if (tree !== baseTree) tip = await git(dir, pinned(wt, ['commit-tree', tree, '-p', base.commit, '-m', message]), IDENTITY);
    }
    // the worktree on its branch again (a worker may have switched it), then the branch and the
    // index at the tip: the working tree as it is
    const ref = `refs/heads/${branch}`;
    if (readFileSync(path.join(wt.gitDir, 'HEAD'), 'utf8').trim() !== `ref: ${ref}`) await git(dir, pinned(wt, ['symbolic-ref', 'HEAD', ref]));
    await git(dir, pinned(wt, ['reset', '-q', '--mixed', tip]));
    return tip === base.commit ? null : tip;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Removes a worktree without `--force`: git's refusal (modified or untracked files left) comes back as the reason. */
export async function removeWorktree(repo: RepoFacts, dir: string): Promise<string | null> {
  const result = await runGit([...SAFE, 'worktree', 'remove', dir], call(repo.top));
  return result.exitCode === 0 ? null : result.stderr.trim().split('\n').slice(-2).join(' ') || `exit ${result.exitCode}`;
}

/** The paths one commit changed against another (renames as delete + add). */
export async function changedPaths(cwd: string, from: string, to: string): Promise<string[]> {
  return splitNul(await runGitOk([...SAFE, 'diff', '--name-only', '--no-renames', '-z', from, to, '--'], call(cwd)));
}

/** Merges a branch into the worktree at `dir`: the new tip, or the conflicting paths (the merge undone). */
export async function mergeInto(dir: string, branch: string, message: string): Promise<{ merged: string } | { conflicts: string[]; reason: string }> {
  const merged = await runGit([...SAFE, 'merge', '--no-ff', '--no-edit', '-m', message, branch], call(dir, IDENTITY));
  if (merged.exitCode === 0) return { merged: await git(dir, ['rev-parse', 'HEAD']) };
  const conflicts = splitNul(await runGitOk([...SAFE, 'diff', '--name-only', '--diff-filter=U', '-z'], call(dir)));
  await runGit([...SAFE, 'merge', '--abort'], call(dir));
  const reason = merged.stdout.toString('utf8').concat(merged.stderr).trim().split('\n').slice(-2).join(' ');
  return { conflicts, reason };
}

/**
 * Applies the change `from..to` to a working tree (not its index): `git apply --check` first, so a
 * patch that does not apply cleanly changes nothing. Null when applied, else git's reason.
 */
export async function applyToWorkingTree(repo: RepoFacts, from: string, to: string): Promise<string | null> {
  const patch = await runGitOk([...SAFE, 'diff', '--binary', '--no-renames', from, to, '--'], call(repo.top));
  if (patch.length === 0) return null;
  for (const args of [['apply', '--check'], ['apply']]) {
    const result = await runGit([...SAFE, ...args, '--whitespace=nowarn', '-'], { ...call(repo.top), input: patch });
    if (result.exitCode !== 0) return result.stderr.trim().split('\n').slice(0, 3).join(' ') || `git apply exit ${result.exitCode}`;
  }
  return null;
}

/** Deletes a branch that is gaffer's; `-d` (merged only) unless `force`. Null when deleted, else git's reason. */
export async function deleteBranch(repo: RepoFacts, branch: string, force: boolean): Promise<string | null> {
  const result = await runGit([...SAFE, 'branch', force ? '-D' : '-d', branch], call(repo.top));
  return result.exitCode === 0 ? null : result.stderr.trim();
}

/** Whether `commit` is an ancestor of `of`. */
export async function isAncestor(cwd: string, commit: string, of: string): Promise<boolean> {
  return (await runGit([...SAFE, 'merge-base', '--is-ancestor', commit, of], call(cwd))).exitCode === 0;
}

/** gaffer's branches (`gaffer/…`) with their tips. */
export async function listGafferBranches(cwd: string): Promise<{ branch: string; commit: string }[]> {
  const out = await git(cwd, ['for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads/gaffer/']);
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [branch = '', commit = ''] = line.split(' ');
      return { branch, commit };
    });
}

/** `git worktree prune`: forgets worktrees whose folders are gone. */
export async function pruneWorktreeRecords(repo: RepoFacts): Promise<void> {
  await git(repo.top, ['worktree', 'prune']);
}

const queues = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier call for the same repository in this process (spec 06: git calls on one repository are serialized). */
export function serialized<T>(repo: RepoFacts, fn: () => Promise<T>): Promise<T> {
  const previous = queues.get(repo.commonDir) ?? Promise.resolve();
  const run = previous.then(fn, fn);
  const tail = run.catch(() => undefined);
  queues.set(repo.commonDir, tail);
  void tail.then(() => {
    if (queues.get(repo.commonDir) === tail) queues.delete(repo.commonDir);
  });
  return run;
}
