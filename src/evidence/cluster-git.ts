import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runGit, runGitOk } from './git.js';
import { REMOTE_PROTOCOLS } from '../domain/remote-repo.js';
import type { RepoFacts } from './worktree-git.js';

/**
 * The git side of a cluster (spec 09): the coordinator exports a workspace's base as a bundle and
 * takes a node's commit back from one, applying it to the workspace so its own snapshot — not the
 * node's word — is the evidence; a node keeps a bare cache per workspace, works in a worktree on
 * `gaffer/<job>/<task>` and bundles its commit. Hooks, fsmonitor, auto-gc and signing are off on
 * every call: gaffer's git work runs no code of the repository's.
 */

const TIMEOUT_MS = 300_000;
const SAFE = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.pager=cat',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
  '-c',
  'commit.gpgSign=false',
];
const IDENTITY = {
  GIT_AUTHOR_NAME: 'gaffer',
  GIT_AUTHOR_EMAIL: 'gaffer@localhost',
  GIT_COMMITTER_NAME: 'gaffer',
  GIT_COMMITTER_EMAIL: 'gaffer@localhost',
};
const SHA = /^[0-9a-f]{40,64}$/;
/** Every git call that names a job's remote repository: plain transports only, and no prompt for a credential (a missing one fails, named). */
const REMOTE_ENV = { GIT_ALLOW_PROTOCOL: REMOTE_PROTOCOLS, GIT_TERMINAL_PROMPT: '0' };

const git = async (
  cwd: string,
  args: string[],
  env?: Record<string, string>,
  input?: Buffer | string,
): Promise<string> =>
  (
    await runGitOk([...SAFE, ...args], {
      cwd,
      timeoutMs: TIMEOUT_MS,
      ...(env ? { env } : {}),
      ...(input !== undefined ? { input } : {}),
    })
  )
    .toString('utf8')
    .trim();

/** The ref that keeps an exported base alive in the coordinator's repository while attempts use it. */
export const baseRef = (sha: string): string => `refs/gaffer/bases/${sha}`;

/**
 * The workspace as it stands — HEAD plus tracked edits, deletions and untracked files that are not
 * ignored — as a commit (a private index, `commit-tree`: no hook, the user's index and branches
 * untouched), kept by {@link baseRef}. Its dates are HEAD's, so the same tree on the same HEAD is the
 * same commit: a node that has it already need not fetch it again. With nothing uncommitted it is
 * HEAD itself.
 */
export async function exportBase(repo: RepoFacts): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gaffer-export-'));
  const index = path.join(dir, 'index');
  try {
    if (existsSync(repo.index)) copyFileSync(repo.index, index);
    else await git(repo.top, ['read-tree', repo.head], { GIT_INDEX_FILE: index });
    await git(repo.top, ['add', '-A', '--', '.'], { GIT_INDEX_FILE: index });
    const tree = await git(repo.top, ['write-tree'], { GIT_INDEX_FILE: index });
    const [date = '', headTree] = (await git(repo.top, ['log', '-1', '--format=%cI%n%T', repo.head])).split('\n');
    const env = { ...IDENTITY, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
    // nothing uncommitted: HEAD itself, which a node may fetch from the job's remote repository
    const sha =
      tree === headTree
        ? repo.head
        : await git(
            repo.top,
            ['commit-tree', tree, '-p', repo.head, '-m', 'gaffer: the workspace as exported to a node'],
            env,
          );
    await git(repo.top, ['update-ref', baseRef(sha), sha]);
    return sha;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes a bundle of the exported base (its whole history: a node with an empty cache can clone from it). */
export async function bundleBase(repo: RepoFacts, sha: string, file: string): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  await git(repo.top, ['bundle', 'create', '-q', file, baseRef(sha)]);
}

/** Drops the refs the coordinator made for one base or one result (the objects go with git's next gc). */
export async function dropRefs(repo: RepoFacts, refs: readonly string[]): Promise<void> {
  for (const ref of refs) await runGit([...SAFE, 'update-ref', '-d', ref], { cwd: repo.top, timeoutMs: TIMEOUT_MS });
}

/**
 * Fetches a node's branch from its bundle into the coordinator's repository under `into`; the
 * commit it holds, or why not (a bundle that is not one, or does not hold the branch).
 */
export async function fetchResult(
  repo: RepoFacts,
  from: { bundle: string } | { remote: string },
  branch: string,
  into: string,
): Promise<{ commit: string } | { refused: string }> {
  const source = 'bundle' in from ? from.bundle : from.remote;
  const fetched = await runGit(
    [
      ...SAFE,
      'fetch',
      '-q',
      '--no-tags',
      '--no-write-fetch-head',
      '--no-auto-gc',
      '--',
      source,
      `+refs/heads/${branch}:${into}`,
    ],
    { cwd: repo.top, timeoutMs: TIMEOUT_MS, ...('remote' in from ? { env: REMOTE_ENV } : {}) },
  );
  if (fetched.exitCode !== 0)
    return {
      refused: `git fetch of the node's ${'bundle' in from ? 'bundle' : `branch from ${from.remote}`} failed: ${fetched.stderr.trim().split('\n').slice(-2).join(' ') || `exit ${fetched.exitCode}`}`,
    };
  const commit = await git(repo.top, ['rev-parse', '--verify', `${into}^{commit}`]);
  return SHA.test(commit) ? { commit } : { refused: `the node's branch is not a commit: ${commit}` };
}

/**
 * Applies what changed from `base` to `result` under the workspace (`repo.prefix`) to the
 * workspace's files — not its index, not its branch: `git apply --check` first, so a change that
 * does not apply cleanly changes nothing. Null when applied (or nothing changed), else git's
 * reason. What the node changed outside the workspace is not applied, and is named.
 */
export async function applyResult(
  repo: RepoFacts,
  base: string,
  result: string,
): Promise<{ refused: string | null; outside: string[] }> {
  const scope = repo.prefix === '' ? '.' : repo.prefix;
  const all = (await git(repo.top, ['diff', '--name-only', '--no-renames', base, result, '--']))
    .split('\n')
    .filter(Boolean);
  const inside = (p: string) => repo.prefix === '' || p === repo.prefix || p.startsWith(`${repo.prefix}/`);
  const outside = all.filter((p) => !inside(p));
  const patch = (
    await runGitOk([...SAFE, 'diff', '--binary', '--no-renames', '--full-index', base, result, '--', scope], {
      cwd: repo.top,
      timeoutMs: TIMEOUT_MS,
    })
  ).subarray(0);
  if (patch.length === 0) return { refused: null, outside };
  for (const args of [['apply', '--check'], ['apply']]) {
    const applied = await runGit([...SAFE, ...args, '--whitespace=nowarn', '-'], {
      cwd: repo.top,
      timeoutMs: TIMEOUT_MS,
      input: patch,
    });
    if (applied.exitCode !== 0)
      return {
        refused: applied.stderr.trim().split('\n').slice(0, 3).join(' ') || `git apply exit ${applied.exitCode}`,
        outside,
      };
  }
  return { refused: null, outside };
}

// ---- a job on a remote repository (spec 09 "Remote workspaces") ----

/**
 * Fetches `ref` of the remote `url` into the bare cache `cache` as `into`; the commit, or git's
 * reason it could not (an unreachable remote, a missing ref, a credential git does not have).
 */
export async function fetchRemoteRef(
  cache: string,
  url: string,
  ref: string,
  into: string,
): Promise<{ commit: string } | { refused: string }> {
  const fetched = await runGit(
    [
      ...SAFE,
      `--git-dir=${cache}`,
      'fetch',
      '-q',
      '--no-tags',
      '--no-write-fetch-head',
      '--no-auto-gc',
      '--',
      url,
      `+${ref}:${into}`,
    ],
    { cwd: cache, timeoutMs: TIMEOUT_MS, env: REMOTE_ENV },
  );
  if (fetched.exitCode !== 0)
    return { refused: fetched.stderr.trim().split('\n').slice(-2).join(' ') || `git fetch exit ${fetched.exitCode}` };
  const commit = await git(cache, [`--git-dir=${cache}`, 'rev-parse', '--verify', `${into}^{commit}`]);
  return SHA.test(commit) ? { commit } : { refused: `${ref} is not a commit` };
}

/** A worktree of the cache at `commit`, detached (the job's checkout on the coordinator). */
export async function addDetachedWorktree(cache: string, dir: string, commit: string): Promise<void> {
  mkdirSync(path.dirname(dir), { recursive: true });
  await git(cache, [`--git-dir=${cache}`, 'worktree', 'prune']);
  await git(cache, [`--git-dir=${cache}`, 'worktree', 'add', '-q', '-f', '--detach', dir, commit], IDENTITY);
}

/** Removes a worktree of the cache and the refs that kept its commits (their objects go with git's next gc). */
export async function removeCacheWorktree(cache: string, dir: string, refs: readonly string[]): Promise<void> {
  await runGit([...SAFE, `--git-dir=${cache}`, 'worktree', 'remove', '--force', dir], {
    cwd: cache,
    timeoutMs: TIMEOUT_MS,
  });
  rmSync(dir, { recursive: true, force: true });
  await runGit([...SAFE, `--git-dir=${cache}`, 'worktree', 'prune'], { cwd: cache, timeoutMs: TIMEOUT_MS });
  for (const ref of refs)
    await runGit([...SAFE, `--git-dir=${cache}`, 'update-ref', '-d', ref], { cwd: cache, timeoutMs: TIMEOUT_MS });
}

/** Pushes the cache's `branch` to the same branch of the remote (forced: the attempt's branch is its own); null, else git's reason. */
export async function pushBranch(cache: string, url: string, branch: string): Promise<string | null> {
  const pushed = await runGit(
    [
      ...SAFE,
      `--git-dir=${cache}`,
      'push',
      '-q',
      '--no-verify',
      '--porcelain',
      '--',
      url,
      `+refs/heads/${branch}:refs/heads/${branch}`,
    ],
    { cwd: cache, timeoutMs: TIMEOUT_MS, env: REMOTE_ENV },
  );
  return pushed.exitCode === 0
    ? null
    : pushed.stderr.trim().split('\n').slice(-2).join(' ') || `git push exit ${pushed.exitCode}`;
}

// ---- the node's side ----

/** A cache of one repository (a node's, or the coordinator's of a remote): a bare repository made on first use, never auto-collected. */
export async function openCache(dir: string): Promise<void> {
  if (existsSync(path.join(dir, 'HEAD'))) return;
  mkdirSync(dir, { recursive: true });
  await git(dir, ['init', '-q', '--bare', dir]);
  // never collected: the snapshots of the jobs checked out from it borrow its objects (remote-checkout.ts)
  await git(dir, [`--git-dir=${dir}`, 'config', 'gc.auto', '0']);
  await git(dir, [`--git-dir=${dir}`, 'config', 'maintenance.auto', 'false']);
}

/** Whether the cache holds `sha` as a commit. */
export async function hasCommit(cache: string, sha: string): Promise<boolean> {
  return (
    (
      await runGit([...SAFE, `--git-dir=${cache}`, 'cat-file', '-e', `${sha}^{commit}`], {
        cwd: cache,
        timeoutMs: TIMEOUT_MS,
      })
    ).exitCode === 0
  );
}

/** Fetches a base bundle's ref into the cache under the same name. */
export async function fetchBase(cache: string, file: string, sha: string): Promise<void> {
  await git(cache, [
    `--git-dir=${cache}`,
    'fetch',
    '-q',
    '--no-tags',
    '--no-write-fetch-head',
    '--no-auto-gc',
    file,
    `+${baseRef(sha)}:${baseRef(sha)}`,
  ]);
}

/** A worktree of the cache at `base` on `branch` (made anew: a branch of an earlier attempt is reset). */
export async function addNodeWorktree(cache: string, dir: string, branch: string, base: string): Promise<void> {
  mkdirSync(path.dirname(dir), { recursive: true });
  const add = [...SAFE, `--git-dir=${cache}`, 'worktree', 'add', '-q', '-f', '-B', branch, dir, base];
  if ((await runGit(add, { cwd: cache, timeoutMs: TIMEOUT_MS, env: IDENTITY })).exitCode === 0) return;
  // a worktree of a node killed mid-attempt is forgotten first (its branch is free again), then once more
  await git(cache, [`--git-dir=${cache}`, 'worktree', 'prune']);
  await runGitOk(add, { cwd: cache, timeoutMs: TIMEOUT_MS, env: IDENTITY });
}

/**
 * Commits everything the worktree holds that is not ignored onto its branch (no hook, no signing);
 * the branch's tip, which is `base` itself when nothing changed.
 */
export async function commitNodeWork(dir: string, message: string): Promise<string> {
  await git(dir, ['add', '-A', '--', '.']);
  const staged = await runGit([...SAFE, 'diff', '--cached', '--quiet'], { cwd: dir, timeoutMs: TIMEOUT_MS });
  if (staged.exitCode !== 0)
    await git(dir, ['commit', '-q', '--no-verify', '--cleanup=verbatim', '-m', message], IDENTITY);
  return git(dir, ['rev-parse', '--verify', 'HEAD^{commit}']);
}

/** Bundles the branch's commits since `base` (the coordinator has the base: it made it). */
export async function bundleNodeWork(cache: string, branch: string, base: string, file: string): Promise<void> {
  mkdirSync(path.dirname(file), { recursive: true });
  await git(cache, [`--git-dir=${cache}`, 'bundle', 'create', '-q', file, `refs/heads/${branch}`, `^${base}`]);
}

/** Removes an attempt's worktree and its branch from the cache (its commit stays until git's gc). */
export async function removeNodeWorktree(cache: string, dir: string, branch: string): Promise<void> {
  await runGit([...SAFE, `--git-dir=${cache}`, 'worktree', 'remove', '--force', dir], {
    cwd: cache,
    timeoutMs: TIMEOUT_MS,
  });
  rmSync(dir, { recursive: true, force: true });
  await runGit([...SAFE, `--git-dir=${cache}`, 'worktree', 'prune'], { cwd: cache, timeoutMs: TIMEOUT_MS });
  await runGit([...SAFE, `--git-dir=${cache}`, 'branch', '-q', '-D', branch], { cwd: cache, timeoutMs: TIMEOUT_MS });
}
