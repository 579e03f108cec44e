import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diffSnapshots, fileDiff, readGitFacts } from '../../src/evidence/index.js';
import { fingerprint, git, lsTree, snap, tempDir, write } from './helpers.js';

const saved = {
  GIT_DIR: process.env.GIT_DIR,
  GIT_WORK_TREE: process.env.GIT_WORK_TREE,
  GIT_INDEX_FILE: process.env.GIT_INDEX_FILE,
};

afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

async function committedRepo(): Promise<string> {
  const ws = await tempDir();
  git(ws, 'init', '-q');
  await write(ws, { 'src/a.ts': 'a\n', 'src/b.ts': 'b\n', '.gitignore': '*.log\n' });
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', 'init');
  return ws;
}

describe('isolation from the user and the caller', () => {
  it('a caller GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE pointing elsewhere change nothing there, and the snapshot is still right', async () => {
    const decoy = await committedRepo();
    await write(decoy, { 'decoy-only.txt': 'd\n' });
    const decoyBefore = fingerprint(decoy);
    process.env.GIT_DIR = path.join(decoy, '.git');
    process.env.GIT_WORK_TREE = decoy;
    process.env.GIT_INDEX_FILE = path.join(decoy, '.git', 'index');

    const ws = await committedRepo();
    const data = await tempDir('gaffer-data-');
    const pre = await snap(ws, data, 'pre');
    expect([...lsTree(pre).keys()].sort()).toEqual(['.gitignore', 'src/a.ts', 'src/b.ts']);
    await write(ws, { 'src/a.ts': 'a2\n' });
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['src/a.ts'], deleted: [] });
    expect(await readGitFacts(ws)).toEqual({
      repo: true,
      dirty_count: 1,
      shortstat: '1 file changed, 1 insertion(+), 1 deletion(-)',
    });
    expect(await fileDiff(pre, null, 'src/a.ts')).toContain('+a2');
    expect(fingerprint(decoy)).toBe(decoyBefore);
  });

  it("never writes to the user's .git (index, refs, config, no new files), even with stat-dirty files", async () => {
    const ws = await committedRepo();
    const data = await tempDir('gaffer-data-');
    // a later mtime on an unchanged tracked file makes it stat-dirty: `git diff` would refresh the index
    const later = new Date(Date.now() + 5000);
    await fs.utimes(path.join(ws, '.gitignore'), later, later);
    await write(ws, { 'src/b.ts': 'b2\n', 'new.ts': 'n\n', 'x.log': 'l\n' });
    const before = fingerprint(path.join(ws, '.git'));
    const pre = await snap(ws, data, 'pre');
    await write(ws, { 'src/a.ts': 'a3\n' });
    const post = await snap(ws, data, 'post');
    await diffSnapshots(pre, post);
    await fileDiff(pre, null, 'src/a.ts');
    const facts = await readGitFacts(ws);
    expect(facts?.dirty_count).toBe(3);
    expect(fingerprint(path.join(ws, '.git'))).toBe(before);
  });

  it('git facts: undefined outside a repository, counts scoped to a workspace inside one', async () => {
    expect(await readGitFacts(await tempDir())).toBeUndefined();
    const repo = await committedRepo();
    await write(repo, { 'src/a.ts': 'changed\n', 'elsewhere.txt': 'e\n' });
    expect(await readGitFacts(path.join(repo, 'src'))).toEqual({
      repo: true,
      dirty_count: 1,
      shortstat: '1 file changed, 1 insertion(+), 1 deletion(-)',
    });
    const unborn = await tempDir();
    git(unborn, 'init', '-q');
    await write(unborn, { 'a.txt': 'a\n' });
    expect(await readGitFacts(unborn)).toEqual({ repo: true, dirty_count: 1, shortstat: '' });
  });

  it('takes over a lock left by a crashed process, and a stale index.lock', async () => {
    const ws = await committedRepo();
    const data = await tempDir('gaffer-data-');
    const pre = await snap(ws, data, 'pre');
    const gitDir = pre.gitDir as string;
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    await fs.writeFile(path.join(gitDir, 'gaffer.lock'), `${dead}\n`);
    await fs.writeFile(path.join(gitDir, 'gaffer-index.lock'), '');
    await write(ws, { 'src/a.ts': 'after the crash\n' });
    const post = await snap(ws, data, 'post', { gitTimeoutMs: 10_000 });
    expect(post.source).toBe('checkpoint');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['src/a.ts'], deleted: [] });
  });

  it('a git call past its timeout is killed and the snapshot falls back to mtime, saying why', async () => {
    const ws = await committedRepo();
    // enough files that no listing of them ends within the 1 ms (a tiny repository's git calls can, on a busy machine)
    await write(
      ws,
      Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`many/d${i % 30}/f${i}.txt`, `${i}\n`])),
    );
    const data = await tempDir('gaffer-data-');
    const shot = await snap(ws, data, 'pre', { gitTimeoutMs: 1 });
    expect(shot.source).toBe('mtime');
    expect(shot.fallbackReason).toMatch(/^shadow repository failed: .*timed out/);
  });
});
