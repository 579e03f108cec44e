import { execFileSync } from 'node:child_process';
import { promises as fs, lstatSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type * as QuickLookModule from '../../src/evidence/quick-look.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { hashFiles } from '../../src/evidence/known-index.js';
import type { StatFacts } from '../../src/evidence/walk.js';
import { addWorktree, checkOutWorktree, readRepo } from '../../src/evidence/worktree-git.js';
import { git, lsTree, snap, tempDir, write } from './helpers.js';

// the quick look is spied on: a base seeded from its checkout is one
vi.mock('../../src/evidence/quick-look.js', async (importOriginal) => {
  const original = await importOriginal<typeof QuickLookModule>();
  return { ...original, quickLook: vi.fn(original.quickLook) };
});
const { quickLook } = await import('../../src/evidence/quick-look.js');
const looks = vi.mocked(quickLook);

const factsOf = (abs: string): StatFacts => {
  const st = lstatSync(abs);
  return {
    kind: st.isSymbolicLink() ? 'symlink' : 'file',
    size: st.size,
    mtimeMs: st.mtimeMs,
    ino: st.ino,
    mode: st.mode,
  };
};

describe('hashing a checkpoint’s few files in the engine’s thread', () => {
  it('hashes as git does, drops a path that is gone, and leaves to git a path that is not what its lstat said — a FIFO is never read', async () => {
    const ws = await tempDir();
    const objects = path.join(await tempDir(), 'objects');
    await write(ws, {
      'a.txt': 'a\n',
      'run.sh': '#!/bin/sh\n',
      'gone.txt': 'g\n',
      'grows.txt': 'small\n',
      fifo: 'was a file\n',
    });
    await fs.chmod(path.join(ws, 'run.sh'), 0o755);
    await fs.symlink('a.txt', path.join(ws, 'link'));
    const paths = ['a.txt', 'run.sh', 'link', 'gone.txt'];
    const facts = paths.map((p) => factsOf(path.join(ws, p)));
    await fs.rm(path.join(ws, 'gone.txt'));
    const done = hashFiles(ws, objects, [], paths, facts);
    expect(done?.dropped).toEqual(new Set(['gone.txt']));
    const blob = (p: string) =>
      execFileSync('git', ['hash-object', '--no-filters', p], { cwd: ws, encoding: 'utf8' }).trim();
    expect(done?.hashed.get('a.txt')).toEqual({ mode: 0o100644, id: blob('a.txt') });
    expect(done?.hashed.get('run.sh')).toEqual({ mode: 0o100755, id: blob('run.sh') });
    expect(done?.hashed.get('link')?.mode).toBe(0o120000);

    // looked at as files; then one grew and one became a FIFO with no writer (opening it to read would block)
    const grows = factsOf(path.join(ws, 'grows.txt'));
    const fifo = factsOf(path.join(ws, 'fifo'));
    await fs.appendFile(path.join(ws, 'grows.txt'), 'and more\n');
    await fs.rm(path.join(ws, 'fifo'));
    execFileSync('mkfifo', [path.join(ws, 'fifo')]);
    expect(hashFiles(ws, objects, [], ['grows.txt'], [grows])).toBeNull();
    expect(hashFiles(ws, objects, [], ['fifo'], [fifo])).toBeNull();
  });
});

/** What a checkpoint holds, comparable across data dirs. */
const contents = (s: Snapshot) => ({
  tree: Object.fromEntries(lsTree(s)),
  skipped: s.skipped,
  large: s.largeFilesByStat,
});

describe("a worktree job's base checkpoint, seeded from its checkout when the last job's base was a faithful checkout of the same tree", () => {
  it('is seeded only then, sees a file changed after the checkout (same size, mtime put back), and is not seeded once the checkout rules changed', async () => {
    const root = await tempDir();
    const repo = path.join(root, 'repo');
    await write(repo, { 'a.txt': 'aaaa\n', 'sub/b.txt': 'b\n', 'sub/deep/c.txt': 'c\n' });
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'init');
    const tree = git(repo, 'rev-parse', 'HEAD^{tree}').trim();
    const data = path.join(root, 'data');
    const shadowOf = path.join(root, 'base-key');
    let n = 0;
    /** A job's base: a new worktree checked out by gaffer's calls, `change`d, then checkpointed as the shared base is. */
    const base = async (change?: (dir: string) => Promise<void>) => {
      const facts = await readRepo(repo);
      if ('refused' in facts) throw new Error(facts.refused);
      const name = `wt${++n}`;
      const dir = path.join(root, name);
      const wt = await addWorktree(facts, dir, name, facts.head);
      const index = path.join(root, `${name}.index`);
      await checkOutWorktree(wt, index);
      await change?.(dir);
      looks.mockClear();
      const snapshot = await snap(dir, data, 'base', { jobId: `job${n}`, shadowOf, seedIndex: { file: index, tree } });
      const seeded = looks.mock.results.length === 1 && (await looks.mock.results[0]?.value) !== null;
      const cold = await snap(dir, await tempDir('gaffer-data-'), 'cold');
      expect(contents(snapshot), name).toEqual(contents(cold));
      return { snapshot, seeded };
    };

    const first = await base();
    expect(first.seeded).toBe(false);
    const second = await base();
    expect(second.seeded).toBe(true);
    expect(second.snapshot.id).toBe(first.snapshot.id);

    // changed before the checkpoint, and hidden from the stat a worker can set: seen, its content is the base
    const hidden = await base(async (dir) => {
      const file = path.join(dir, 'sub/b.txt');
      const { atime, mtime } = statSync(file);
      await fs.writeFile(file, 'B\n');
      utimesSync(file, atime, mtime);
    });
    expect(hidden.seeded).toBe(true);
    expect(lsTree(hidden.snapshot).get('sub/b.txt')?.sha).not.toBe(lsTree(first.snapshot).get('sub/b.txt')?.sha);
    // that base was not the tree checked out: the next one hashes every file again
    expect((await base()).seeded).toBe(false);
    expect((await base()).seeded).toBe(true);

    // the repository's own attributes changed: a checkout may write other bytes now, so no seed until a base hashed them
    await write(path.join(repo, '.git', 'info'), { attributes: '*.md text eol=crlf\n' });
    expect((await base()).seeded).toBe(false);
    expect((await base()).seeded).toBe(true);
    // and where they do rewrite the bytes checked out, no base is the tree checked out: never seeded
    await write(path.join(repo, '.git', 'info'), { attributes: '*.txt text eol=crlf\n' });
    const crlf = await base();
    expect(crlf.seeded).toBe(false);
    expect(crlf.snapshot.id).not.toBe(first.snapshot.id);
    expect((await base()).seeded).toBe(false);
  });
});
