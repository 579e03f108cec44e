import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runGit } from './git.js';
import { findRepoTop } from './listing.js';
import type { GitFacts } from '../domain/changes.js';

const FACTS_TIMEOUT_MS = 30_000;

/**
 * `git status`-ish facts of the user's own repository, scoped to the workspace: how many paths
 * `git status --porcelain` lists and `git diff --shortstat HEAD`. Undefined outside a repository.
 * Never writes to the user's `.git`: even with `--no-optional-locks` `git diff` refreshes the
 * index, so both commands run on a throwaway copy of it.
 */
export async function readGitFacts(workspace: string): Promise<GitFacts | undefined> {
  const cwd = path.resolve(workspace);
  // no `.git` at or above it: not in a repository, and no git process to learn that
  if (findRepoTop(cwd) === null) return undefined;
  const probe = await runGit(['rev-parse', '--is-inside-work-tree', '--git-path', 'index'], {
    cwd,
    timeoutMs: FACTS_TIMEOUT_MS,
  });
  const [inside, indexPath] = probe.stdout.toString('utf8').split('\n');
  if (probe.exitCode !== 0 || inside !== 'true' || indexPath === undefined || indexPath === '') return undefined;

  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gaffer-facts-'));
  try {
    const indexCopy = path.join(tmp, 'index');
    await fs.copyFile(path.resolve(cwd, indexPath), indexCopy).catch(() => undefined);
    const opts = { cwd, timeoutMs: FACTS_TIMEOUT_MS, env: { GIT_INDEX_FILE: indexCopy } };
    const common = ['--no-optional-locks', '-c', 'core.fsmonitor=false', '-c', 'core.quotePath=false'];
    const status = await runGit([...common, 'status', '--porcelain', '--', '.'], opts);
    if (status.exitCode !== 0) return undefined;
    const dirtyCount = status.stdout
      .toString('utf8')
      .split('\n')
      .filter((line) => line !== '').length;
    // an unborn HEAD (no commit yet) has no shortstat
    const diff = await runGit(
      [...common, 'diff', '--shortstat', '--no-ext-diff', '--no-textconv', 'HEAD', '--', '.'],
      opts,
    );
    const shortstat = diff.exitCode === 0 ? diff.stdout.toString('utf8').trim() : '';
    return { repo: true, dirty_count: dirtyCount, shortstat };
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}
