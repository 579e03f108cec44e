import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readHeadHasCommit } from '../../src/evidence/head-commit.js';
import { cleanEnv, git, tempDir, write } from './helpers.js';

/** What git itself says: `rev-parse --verify HEAD^{commit}` succeeds. */
function gitSays(dir: string): boolean {
  try {
    execFileSync('git', ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], {
      cwd: dir,
      env: cleanEnv(),
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

async function repository(): Promise<string> {
  const repo = await tempDir();
  await write(repo, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'init');
  return repo;
}

describe("a repository's HEAD read from its files", () => {
  it('says there is a commit only where git says so, and leaves to git what its files do not show plainly', async () => {
    const repo = await repository();
    const cases: [string, string, true | null][] = [
      ['the top of a repository with a commit', repo, true],
      ['a folder inside it', path.join(repo, 'sub'), true],
    ];
    const worktree = path.join(path.dirname(repo), `${path.basename(repo)}-wt`);
    git(repo, 'worktree', 'add', '-q', '-b', 'wt', worktree);
    cases.push(['a linked worktree', worktree, true]);
    const detached = await repository();
    git(detached, 'checkout', '-q', '--detach');
    cases.push(['a detached HEAD', detached, true]);
    const packedRefs = await repository();
    git(packedRefs, 'pack-refs', '--all');
    cases.push(['a branch in packed-refs, its commit loose', packedRefs, true]);
    const packed = await repository();
    git(packed, 'gc', '-q');
    cases.push(['a packed commit: git is asked', packed, null]);
    const unborn = await tempDir();
    git(unborn, 'init', '-q');
    cases.push(['a repository with no commit yet', unborn, null]);
    const plain = await tempDir();
    cases.push(['a folder outside any repository', plain, null]);
    const extended = await repository();
    git(extended, 'config', 'extensions.worktreeConfig', 'true');
    cases.push(['a repository with an extension', extended, null]);
    for (const [what, dir, expected] of cases) {
      expect(readHeadHasCommit(dir), what).toBe(expected);
      // never a yes git would not give
      if (expected === true) expect(gitSays(dir), what).toBe(true);
    }
    expect(gitSays(unborn)).toBe(false);
    await fs.rm(worktree, { recursive: true, force: true });
  });
});
