import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { diffSnapshots } from '../../src/evidence/diff.js';
import { recallTreeDiff } from '../../src/evidence/known-diffs.js';
import { cleanEnv, snap, tempDir, write } from './helpers.js';

type Step = [what: string, change: (ws: string) => Promise<void>, known: boolean];

/** `git diff-tree --name-status` between two checkpoints, as the diff would read it without a known answer. */
function gitTreeDiff(a: Snapshot, b: Snapshot): { added: string[]; modified: string[]; deleted: string[] } {
  const out = execFileSync(
    'git',
    [`--git-dir=${a.gitDir}`, 'diff-tree', '-r', '-z', '--no-renames', '--name-status', a.id, b.id],
    { env: cleanEnv() },
  );
  const parts = out
    .toString('utf8')
    .split('\0')
    .filter((p) => p !== '');
  const lists = { added: [] as string[], modified: [] as string[], deleted: [] as string[] };
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const status = parts[i] as string;
    const p = parts[i + 1] as string;
    (status === 'A' ? lists.added : status === 'D' ? lists.deleted : lists.modified).push(p);
  }
  return { added: lists.added.sort(), modified: lists.modified.sort(), deleted: lists.deleted.sort() };
}

const steps: Step[] = [
  ['a file added', (ws) => write(ws, { 'new.txt': 'n\n' }), true],
  [
    'files added in a new folder, one deleted',
    async (ws) => {
      await write(ws, { 'dir/deep/x.js': 'x\n', 'dir/y.js': 'y\n' });
      await fs.rm(path.join(ws, 'a.txt'));
    },
    true,
  ],
  ['a file modified: only git can say', (ws) => write(ws, { 'src/b.js': 'b changed\n' }), false],
  [
    'a file replaced by a folder of the same name',
    async (ws) => {
      await fs.rm(path.join(ws, 'new.txt'));
      await write(ws, { 'new.txt/inner.txt': 'inner\n' });
    },
    true,
  ],
  [
    'a folder replaced by a file of the same name',
    async (ws) => {
      await fs.rm(path.join(ws, 'dir'), { recursive: true });
      await write(ws, { dir: 'now a file\n' });
    },
    true,
  ],
  [
    'a symlink added, an ignored file added',
    async (ws) => {
      await fs.symlink('src/b.js', path.join(ws, 'link'));
      await write(ws, { 'x.log': 'ignored\n' });
    },
    true,
  ],
  [
    'a large file added (recorded by stat, not in the tree)',
    (ws) => write(ws, { 'big.bin': Buffer.alloc(3000, 7) }),
    true,
  ],
  ['the large file made small again', (ws) => write(ws, { 'big.bin': 'small\n' }), true],
  [
    'a FIFO appears',
    async (ws) => {
      execFileSync('mkfifo', [path.join(ws, 'src/pipe')]);
    },
    true,
  ],
  ['nothing changed', async () => undefined, true],
];

describe('a checkpoint that only added new paths and removed indexed ones', () => {
  it('gives the same diff as git without asking it, and asks git when an indexed file was hashed again', async () => {
    const ws = await tempDir();
    await write(ws, { 'a.txt': 'a\n', 'src/b.js': 'b\n', '.gitignore': '*.log\n' });
    const data = await tempDir('gaffer-data-');
    const opts = { sizeCapBytes: 1000 };
    let before = await snap(ws, data, 'pre', opts);
    for (const [i, [what, change, known]] of steps.entries()) {
      await change(ws);
      const after = await snap(ws, data, `s${i}`, opts);
      const delta = before.id === after.id ? null : recallTreeDiff(before.gitDir as string, before.id, after.id);
      // a folder that became a file once sent this checkpoint to the mtime fallback (ENOTDIR in the special-file scan)
      expect(after.source, what).toBe('checkpoint');
      expect(delta !== null, what).toBe(known && before.id !== after.id);
      const viaGit = gitTreeDiff(before, after);
      if (delta !== null)
        expect({ added: [...delta.added].sort(), modified: [], deleted: [...delta.deleted].sort() }, what).toEqual(
          viaGit,
        );
      // the large-file and skipped-file rules then apply to the tree's change as they do to git's
      const diff = await diffSnapshots(before, after);
      if (
        !after.largeFilesByStat &&
        !before.largeFilesByStat &&
        after.skipped.length === 0 &&
        before.skipped.length === 0
      )
        expect(diff, what).toEqual(viaGit);
      before = after;
    }
  });
});
