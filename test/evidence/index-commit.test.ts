import { execFileSync } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commitIndex, readIndexEntries, writeCommit, writeIndexTree } from '../../src/evidence/index-commit.js';
import { writeTrees } from '../../src/evidence/tree-object.js';
import { cleanEnv, git, tempDir, write } from './helpers.js';

const WHO = { name: 'gaffer', email: 'gaffer@localhost' };
const REF = 'refs/heads/main';

/** A repository with one commit on `main` whose names test git's tree order (a folder sorts as if its name ended in '/'). */
async function repository(): Promise<{ repo: string; gitDir: string; head: string }> {
  const repo = await tempDir();
  await write(repo, {
    'a-b': '1\n',
    'a.b': '2\n',
    'a/x.txt': '3\n',
    a0: '4\n',
    'sub/deep/c.txt': 'c\n',
    'sub/d.txt': 'd\n',
    'run.sh': '#!/bin/sh\n',
    'ü/é.txt': 'accents\n',
  });
  await fs.chmod(path.join(repo, 'run.sh'), 0o755);
  await fs.symlink('a.b', path.join(repo, 'link'));
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'init');
  return { repo, gitDir: path.join(repo, '.git'), head: git(repo, 'rev-parse', 'HEAD').trim() };
}

/** Lays out a repository's HEAD tree from its index, as a fan-out's checkpoints lay out their base (tree-object.ts). */
function layOut(gitDir: string): string | null {
  return writeTrees(path.join(gitDir, 'objects'), readIndexEntries(path.join(gitDir, 'index')) ?? [], [], {
    remember: true,
    hashOnly: true,
  });
}

const read = (repo: string, ...args: string[]) =>
  execFileSync('git', args, { cwd: repo, env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

describe("a task's commit written from its index without a git process", () => {
  it('is the commit git would make: the tree git writes from that index, the branch moved, its reflogs, nothing left to commit', async () => {
    const { repo, gitDir, head } = await repository();
    expect(layOut(gitDir)).toBe(read(repo, 'rev-parse', 'HEAD^{tree}'));
    await write(repo, { 'sub/deep/new.txt': 'new\n', 'a/y.txt': 'y\n', 'sub/d.txt': 'D\n', 'ü/ö.txt': 'more\n' });
    await fs.rm(path.join(repo, 'a-b'));
    git(repo, 'add', '-A', '--', 'sub/deep/new.txt', 'a/y.txt', 'sub/d.txt', 'a-b', 'ü/ö.txt');
    const expectedTree = read(repo, 'write-tree');
    const result = commitIndex(
      { gitDir, commonDir: gitDir },
      REF,
      head,
      'gaffer: job j, task t',
      WHO,
      new Date(1_700_000_000_000),
    );
    expect(result).not.toBeNull();
    expect(result).not.toBe('unchanged');
    const commit = (result as { commit: string }).commit;
    expect(read(repo, 'rev-parse', 'HEAD')).toBe(commit);
    expect(read(repo, 'rev-parse', `${commit}^{tree}`)).toBe(expectedTree);
    expect(read(repo, 'rev-parse', `${commit}^`)).toBe(head);
    expect(read(repo, 'log', '-1', '--format=%an <%ae> %at|%cn <%ce>|%B', commit)).toBe(
      'gaffer <gaffer@localhost> 1700000000|gaffer <gaffer@localhost>|gaffer: job j, task t',
    );
    expect(read(repo, 'status', '--porcelain')).toBe('');
    read(repo, 'fsck', '--strict', '--no-dangling');
    expect(
      readFileSync(path.join(gitDir, 'logs', 'refs', 'heads', 'main'), 'utf8')
        .trim()
        .split('\n')
        .at(-1),
    ).toMatch(
      new RegExp(`^${head} ${commit} gaffer <gaffer@localhost> 1700000000 [+-]\\d{4}\\tcommit: gaffer: job j, task t$`),
    );
    expect(read(repo, 'reflog', '-1', '--format=%gs', 'HEAD')).toBe('commit: gaffer: job j, task t');
  });

  it('says unchanged when the index holds the parent tree (git would find nothing to commit)', async () => {
    const { repo, gitDir, head } = await repository();
    layOut(gitDir);
    await write(repo, { 'a.b': 'changed\n' });
    await write(repo, { 'a.b': '2\n' });
    git(repo, 'add', '-A', '--', 'a.b');
    expect(commitIndex({ gitDir, commonDir: gitDir }, REF, head, 'm', WHO)).toBe('unchanged');
    expect(read(repo, 'rev-parse', 'HEAD')).toBe(head);
  });

  it('leaves to git an index or repository it cannot be sure of', async () => {
    const cases: [string, (repo: string) => Promise<unknown> | unknown][] = [
      ['index version 4', (repo) => git(repo, 'update-index', '--index-version', '4')],
      ['a split index', (repo) => git(repo, 'update-index', '--split-index')],
      [
        'an intent-to-add entry',
        async (repo) => {
          await write(repo, { 'later.txt': 'l\n' });
          git(repo, 'add', '-N', 'later.txt');
        },
      ],
      ['a packed branch', (repo) => git(repo, 'pack-refs', '--all')],
      ['a shared repository', (repo) => git(repo, 'config', 'core.sharedRepository', 'group')],
      [
        'a commit encoding (git writes an encoding header)',
        (repo) => git(repo, 'config', 'i18n.commitEncoding', 'ISO-8859-1'),
      ],
      ['an included config', (repo) => git(repo, 'config', 'include.path', 'more.config')],
      // another git holds the branch: git would fail to lock it, and so does this
      ['the branch locked', (repo) => fs.writeFile(path.join(repo, '.git', 'refs', 'heads', 'main.lock'), '')],
    ];
    for (const [what, setup] of cases) {
      const { repo, gitDir, head } = await repository();
      layOut(gitDir);
      await write(repo, { 'new.txt': 'n\n' });
      git(repo, 'add', '-A', '--', 'new.txt');
      await setup(repo);
      expect(commitIndex({ gitDir, commonDir: gitDir }, REF, head, 'm', WHO), what).toBeNull();
      expect(read(repo, 'rev-parse', 'HEAD'), what).toBe(head);
    }
  });

  it('leaves to git a parent tree this process has not laid out (git would not write its packed trees again)', async () => {
    const repo = await tempDir();
    await write(repo, { 'unique.txt': `${process.pid} ${Date.now()} ${Math.random()}\n`, 'sub/b.txt': 'b\n' });
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'init');
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    await write(repo, { 'new.txt': 'n\n' });
    git(repo, 'add', '-A', '--', 'new.txt');
    const gitDir = path.join(repo, '.git');
    expect(commitIndex({ gitDir, commonDir: gitDir }, REF, head, 'm', WHO)).toBeNull();
    expect(read(repo, 'rev-parse', 'HEAD')).toBe(head);
  });

  it('leaves to git a branch that moved from the parent it was given', async () => {
    const { repo, gitDir, head } = await repository();
    layOut(gitDir);
    await write(repo, { 'new.txt': 'n\n' });
    git(repo, 'add', '-A', '--', 'new.txt');
    git(repo, 'commit', '-qm', 'moved');
    expect(commitIndex({ gitDir, commonDir: gitDir }, REF, head, 'm', WHO)).toBeNull();
  });

  it("writes the commit git commit-tree writes (same id) for a job's base", async () => {
    const { repo, head } = await repository();
    const tree = read(repo, 'rev-parse', 'HEAD^{tree}');
    const at = new Date(1_700_000_000_000);
    const minutes = -at.getTimezoneOffset();
    const zone = `${minutes < 0 ? '-' : '+'}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0')}${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
    const date = `1700000000 ${zone}`;
    const env = {
      ...cleanEnv(),
      GIT_AUTHOR_NAME: 'gaffer',
      GIT_AUTHOR_EMAIL: 'gaffer@localhost',
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_NAME: 'gaffer',
      GIT_COMMITTER_EMAIL: 'gaffer@localhost',
      GIT_COMMITTER_DATE: date,
    };
    const byGit = execFileSync('git', ['commit-tree', tree, '-p', head, '-m', 'gaffer: base of job j'], {
      cwd: repo,
      env,
      encoding: 'utf8',
    }).trim();
    // a repository of its own, so the object found is the one written here
    const other = await repository();
    execFileSync('git', ['fetch', '-q', repo, 'main:theirs'], { cwd: other.repo, env: cleanEnv() });
    const ours = writeCommit(other.gitDir, tree, head, 'gaffer: base of job j', WHO, at);
    expect(ours).toBe(byGit);
    read(other.repo, 'update-ref', 'refs/heads/base', ours as string);
    read(other.repo, 'fsck', '--strict', '--no-dangling');
  });

  it("builds the tree from the parent's layout (only the changed folders hashed again) as git writes it, a folder emptied and one added", async () => {
    const { repo, gitDir, head } = await repository();
    const parentTree = read(repo, 'rev-parse', 'HEAD^{tree}');
    expect(layOut(gitDir)).toBe(parentTree);
    await fs.rm(path.join(repo, 'a/x.txt'));
    await write(repo, { 'sub/deep/new.txt': 'new\n', 'ü/é.txt': 'changed\n', 'z/new/file.txt': 'z\n' });
    git(repo, 'add', '-A', '--', 'a/x.txt', 'sub/deep/new.txt', 'ü/é.txt', 'z/new/file.txt');
    const expectedTree = read(repo, 'write-tree');
    const result = commitIndex({ gitDir, commonDir: gitDir }, REF, head, 'm', WHO);
    expect(read(repo, 'rev-parse', `${(result as { commit: string }).commit}^{tree}`)).toBe(expectedTree);
    read(repo, 'fsck', '--strict', '--no-dangling');
  });

  it("writes the tree git write-tree writes from a private index of the workspace (a job's base), once HEAD's tree is laid out", async () => {
    const { repo, gitDir, head } = await repository();
    await write(repo, { 'sub/new.txt': 'new\n', 'a.b': 'changed\n' });
    await fs.rm(path.join(repo, 'a/x.txt'));
    const index = path.join(await tempDir(), 'index');
    await fs.copyFile(path.join(gitDir, 'index'), index);
    execFileSync('git', ['add', '-A', '--', '.'], { cwd: repo, env: { ...cleanEnv(), GIT_INDEX_FILE: index } });
    const byGit = execFileSync('git', ['write-tree'], {
      cwd: repo,
      env: { ...cleanEnv(), GIT_INDEX_FILE: index },
      encoding: 'utf8',
    }).trim();
    const unique = await repository();
    await write(unique.repo, { 'unique.txt': `${Math.random()}\n` });
    git(unique.repo, 'add', '-A');
    git(unique.repo, 'commit', '-qm', 'unique');
    // HEAD's tree not laid out: git writes it
    expect(
      writeIndexTree(unique.gitDir, path.join(unique.gitDir, 'index'), git(unique.repo, 'rev-parse', 'HEAD').trim()),
    ).toBeNull();
    layOut(gitDir);
    expect(writeIndexTree(gitDir, index, head)).toBe(byGit);
    read(repo, 'fsck', '--strict');
  });
});
