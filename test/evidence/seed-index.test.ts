import { execFileSync } from 'node:child_process';
import { existsSync, promises as fs, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type * as QuickLookModule from '../../src/evidence/quick-look.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { diffSnapshots } from '../../src/evidence/diff.js';
import { shadowGitDir } from '../../src/evidence/paths.js';
import { readPlainIndex } from '../../src/evidence/seed-index.js';
import { shadowIndexFile } from '../../src/evidence/shadow-repo.js';
import { recallWarmState } from '../../src/evidence/warm-state.js';
import { addWorktree, checkOutWorktree, readRepo } from '../../src/evidence/worktree-git.js';
import { cleanEnv, git, lsTree, snap, tempDir, write } from './helpers.js';

// the quick look is spied on: a seeded shadow index makes the first checkpoint after it one
vi.mock('../../src/evidence/quick-look.js', async (importOriginal) => {
  const original = await importOriginal<typeof QuickLookModule>();
  return { ...original, quickLook: vi.fn(original.quickLook) };
});
const { quickLook } = await import('../../src/evidence/quick-look.js');
const looks = vi.mocked(quickLook);

/** What a checkpoint holds, comparable across data dirs. */
const contents = (s: Snapshot) => ({
  tree: Object.fromEntries(lsTree(s)),
  skipped: s.skipped,
  large: s.largeFilesByStat,
});

/** A worktree of `repo` on a new branch, made and checked out by gaffer's own calls; its index's copy. */
async function checkout(repo: string, name: string): Promise<{ dir: string; index: string }> {
  const facts = await readRepo(repo);
  if ('refused' in facts) throw new Error(facts.refused);
  const dir = path.join(path.dirname(repo), name);
  const wt = await addWorktree(facts, dir, name, facts.head);
  const index = path.join(path.dirname(repo), `${name}.base-index`);
  await checkOutWorktree(wt, index);
  return { dir, index };
}

const INCLUDE = ['new.txt', 'WORKSPACE.md'];

/**
 * A repository, its first worktree checkpointed as the base (in a shadow repository of its own),
 * and a second worktree whose pre-snapshot reuses that base, seeded with its checkout's index.
 */
async function seeded(
  files: Record<string, string>,
  setup?: (repo: string) => void,
  beforeSeed?: (ws: string) => Promise<void>,
) {
  const root = await tempDir();
  const repo = path.join(root, 'repo');
  await write(repo, files);
  git(repo, 'init', '-q');
  setup?.(repo);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'init');
  const tree = git(repo, 'rev-parse', 'HEAD^{tree}').trim();
  const data = path.join(root, 'data');
  const first = await checkout(repo, 'first');
  const base = await snap(first.dir, data, 'base', { alwaysInclude: INCLUDE, shadowOf: path.join(root, 'base-key') });
  const second = await checkout(repo, 'second');
  await beforeSeed?.(second.dir);
  const pre = await snap(second.dir, data, 'pre', {
    alwaysInclude: INCLUDE,
    reuse: base,
    seedIndex: { file: second.index, tree },
  });
  const seededIndex = existsSync(shadowIndexFile(shadowGitDir(data, second.dir)));
  return { root, repo, data, ws: second.dir, pre, seededIndex, base, tree };
}

/** The checkpoint after `change`: its diff from the pre-snapshot, whether it was a quick look, and whether it holds what a first checkpoint in a fresh data dir holds. */
async function after(s: Awaited<ReturnType<typeof seeded>>, change: (ws: string) => Promise<void>) {
  await change(s.ws);
  looks.mockClear();
  const post = await snap(s.ws, s.data, 'post', { alwaysInclude: INCLUDE, like: s.pre });
  const quick = looks.mock.results.length === 1 && (await looks.mock.results[0]?.value) !== null;
  const cold = await snap(s.ws, await tempDir('gaffer-data-'), 'cold', { alwaysInclude: INCLUDE });
  expect(contents(post)).toEqual(contents(cold));
  return { diff: await diffSnapshots(s.pre, post), quick };
}

const FILES = {
  'a.txt': 'aaaa\n',
  'sub/b.txt': 'b\n',
  'sub/deep/c.txt': 'c\n',
  'run.sh': '#!/bin/sh\n',
  '.gitignore': '*.log\n',
};

describe("a task's shadow index seeded from its checkout's index", () => {
  it('starts the first checkpoint warm (a quick look) and it still sees every change, one that keeps size and mtime too', async () => {
    const s = await seeded(FILES, (repo) => execFileSync('chmod', ['+x', path.join(repo, 'run.sh')]));
    expect(s.seededIndex).toBe(true);
    const { diff, quick } = await after(s, async (ws) => {
      // same size, and its mtime put back: only its ctime (and racy git's content check) can tell
      const file = path.join(ws, 'a.txt');
      const { atime, mtime } = statSync(file);
      await fs.writeFile(file, 'AAAA\n');
      utimesSync(file, atime, mtime);
      await fs.rm(path.join(ws, 'sub/b.txt'));
      await fs.chmod(path.join(ws, 'run.sh'), 0o644);
      await write(ws, { 'new.txt': 'declared\n', 'sub/deep/d.txt': 'd\n', 'x.log': 'ignored\n' });
      await fs.symlink('a.txt', path.join(ws, 'link'));
    });
    expect(quick).toBe(true);
    expect(diff).toEqual({
      added: ['link', 'new.txt', 'sub/deep/d.txt'],
      modified: ['a.txt', 'run.sh'],
      deleted: ['sub/b.txt'],
    });
  });

  it('a file changed between the checkout and the seeding (same size, its mtime put back) is still seen', async () => {
    const s = await seeded(FILES, undefined, async (ws) => {
      const file = path.join(ws, 'sub/b.txt');
      const { atime, mtime } = statSync(file);
      await fs.writeFile(file, 'B\n');
      utimesSync(file, atime, mtime);
    });
    expect(s.seededIndex).toBe(true);
    const { diff } = await after(s, async () => undefined);
    expect(diff).toEqual({ added: [], modified: ['sub/b.txt'], deleted: [] });
  });

  it("shares one map of the tree's content between the tasks seeded from it (not one per task)", async () => {
    const s = await seeded(FILES);
    const third = await checkout(s.repo, 'third');
    await snap(third.dir, s.data, 'pre', {
      alwaysInclude: INCLUDE,
      reuse: s.base,
      seedIndex: { file: third.index, tree: s.tree },
    });
    const knownOf = (ws: string) =>
      recallWarmState(shadowGitDir(s.data, ws), shadowIndexFile(shadowGitDir(s.data, ws)))?.known?.entries;
    expect(knownOf(s.ws)?.size).toBe(Object.keys(FILES).length);
    expect(knownOf(third.dir)).toBe(knownOf(s.ws));
  });

  it('a worker that changed nothing leaves the pre-snapshot as it was (the same commit)', async () => {
    const s = await seeded(FILES);
    const { diff } = await after(s, async () => undefined);
    expect(diff).toEqual({ added: [], modified: [], deleted: [] });
  });

  it('is not seeded when the checkout rewrote the content (an eol attribute): the base holds other bytes than the commit, and the first checkpoint hashes every file', async () => {
    const s = await seeded({ ...FILES, '.gitattributes': '*.txt text eol=crlf\n' }, (repo) =>
      git(repo, 'config', 'core.safecrlf', 'false'),
    );
    expect(s.seededIndex).toBe(false);
    const { diff, quick } = await after(s, (ws) => write(ws, { 'sub/b.txt': 'B\r\n' }));
    expect(quick).toBe(false);
    expect(diff).toEqual({ added: [], modified: ['sub/b.txt'], deleted: [] });
  });

  it('is not seeded from an index that holds more than plain entries (skip-worktree needs version 3)', async () => {
    const root = await tempDir();
    await write(root, FILES);
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'init');
    const index = path.join(root, '.git', 'index');
    expect(readPlainIndex(readFileSync(index))?.paths.sort()).toEqual(Object.keys(FILES).sort());
    execFileSync('git', ['update-index', '--skip-worktree', 'a.txt'], { cwd: root, env: cleanEnv() });
    expect(readPlainIndex(readFileSync(index))).toBeNull();
  });
});

describe('checkpoints on a seeded index', () => {
  it('are built without writing the index while their changes are few, and each holds what a cold one holds, diffed as git diffs them', async () => {
    const s = await seeded(FILES);
    expect(s.seededIndex).toBe(true);
    const indexFile = shadowIndexFile(shadowGitDir(s.data, s.ws));
    const signature = () => {
      const st = statSync(indexFile, { bigint: true });
      return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    };
    const seededAs = signature();
    const steps: [string, (ws: string) => Promise<void>][] = [
      ['a file added', (ws) => write(ws, { 'new.txt': 'one\n' })],
      [
        'a checked-out file changed in place, same size, its mtime put back',
        async (ws) => {
          const file = path.join(ws, 'sub/deep/c.txt');
          const { atime, mtime } = statSync(file);
          await fs.writeFile(file, 'C\n');
          utimesSync(file, atime, mtime);
        },
      ],
      ['nothing more', async () => undefined],
      [
        'the new file changed, a checked-out one changed',
        (ws) => write(ws, { 'new.txt': 'two\n', 'sub/b.txt': 'B\n' }),
      ],
      [
        'a checked-out file deleted, one made executable, a symlink added',
        async (ws) => {
          await fs.rm(path.join(ws, 'a.txt'));
          await fs.chmod(path.join(ws, 'sub/deep/c.txt'), 0o755);
          await fs.symlink('sub/b.txt', path.join(ws, 'link'));
        },
      ],
      ['a changed file put back as checked out', (ws) => write(ws, { 'sub/b.txt': 'b\n' })],
      [
        'a file replaced by a folder',
        async (ws) => {
          await fs.rm(path.join(ws, 'run.sh'));
          await write(ws, { 'run.sh/inner.txt': 'inner\n' });
        },
      ],
    ];
    let before = s.pre;
    for (const [what, change] of steps) {
      await change(s.ws);
      const snapshot = await snap(s.ws, s.data, `s${steps.findIndex(([w]) => w === what)}`, {
        alwaysInclude: INCLUDE,
        like: s.pre,
      });
      const cold = await snap(s.ws, await tempDir('gaffer-data-'), 'cold', { alwaysInclude: INCLUDE });
      expect(contents(snapshot), what).toEqual(contents(cold));
      const viaGit = execFileSync(
        'git',
        [
          `--git-dir=${snapshot.gitDir}`,
          'diff-tree',
          '-r',
          '-z',
          '--no-renames',
          '--name-status',
          before.id,
          snapshot.id,
        ],
        { env: cleanEnv(), encoding: 'utf8' },
      );
      const parts = viaGit.split('\0').filter((p) => p !== '');
      const expected = { added: [] as string[], modified: [] as string[], deleted: [] as string[] };
      for (let i = 0; i + 1 < parts.length; i += 2)
        (parts[i] === 'A' ? expected.added : parts[i] === 'D' ? expected.deleted : expected.modified).push(
          parts[i + 1] as string,
        );
      expect(await diffSnapshots(before, snapshot), what).toEqual({
        added: expected.added.sort(),
        modified: expected.modified.sort(),
        deleted: expected.deleted.sort(),
      });
      before = snapshot;
    }
    // every step was hashed in the engine's thread: the index is the seed, as copied
    expect(signature()).toBe(seededAs);
  });
});
