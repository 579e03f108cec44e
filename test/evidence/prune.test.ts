import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, pruneSnapshots } from '../../src/evidence/index.js';
import { cleanEnv, snap, stored, tempDir, write } from './helpers.js';

function refs(gitDir: string): string[] {
  const out = execFileSync('git', [`--git-dir=${gitDir}`, 'for-each-ref', '--format=%(refname)'], {
    encoding: 'utf8',
    env: cleanEnv(),
  });
  return out.split('\n').filter((r) => r !== '');
}

describe('pruneSnapshots', () => {
  it('deletes the refs, objects and manifests of pruned jobs and keeps the others', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'kept\n', 'big.bin': Buffer.alloc(3000, 1) });
    const kept = await snap(ws, data, 'pre', { jobId: 'keep-me', sizeCapBytes: 1000 });
    await write(ws, { 'a.txt': 'only in the pruned job\n' });
    const doomed = await snap(ws, data, 'pre', { jobId: 'old-job', sizeCapBytes: 1000 });
    const doomedBlob = execFileSync('git', [`--git-dir=${doomed.gitDir}`, 'rev-parse', `${doomed.id}:a.txt`], {
      encoding: 'utf8',
    }).trim();
    await snap(ws, data, 'pre', { jobId: 'old-job-mtime', forceMtime: true });
    await write(ws, { 'a.txt': 'kept, later\n' });
    const keptLater = await snap(ws, data, 'post', { jobId: 'keep-me', sizeCapBytes: 1000 });
    const gitDir = kept.gitDir as string;

    expect(await pruneSnapshots(data, new Set(['keep-me']))).toEqual({ refsDeleted: 1 });
    expect(refs(gitDir)).toEqual([keptLater.ref, kept.ref]); // sorted: post < pre
    expect(existsSync(doomed.manifestFile as string)).toBe(false);
    expect(existsSync(kept.manifestFile as string)).toBe(true);
    expect(existsSync(path.join(data, 'snapshots', 'old-job-mtime'))).toBe(false);
    expect(stored(kept, 'a.txt').toString()).toBe('kept\n');
    // the doomed job's only blob is gone from the object store
    expect(() =>
      execFileSync('git', [`--git-dir=${gitDir}`, 'cat-file', '-e', doomedBlob], { stdio: 'ignore' }),
    ).toThrow();

    // the per-workspace index survives gc: the next checkpoint (no re-hash) has readable blobs
    await write(ws, { 'b.txt': 'b\n' });
    const next = await snap(ws, data, 'next', { jobId: 'keep-me', sizeCapBytes: 1000 });
    expect(stored(next, 'a.txt').toString()).toBe('kept, later\n');
    expect(await diffSnapshots(kept, next)).toEqual({ added: ['b.txt'], modified: ['a.txt'], deleted: [] });
  });

  it('a shadow folder whose repository was removed and whose lock was taken again is passed over', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n' });
    const kept = await snap(ws, data, 'pre', { jobId: 'keep-me' });
    // what a lock taken on a pruned repository leaves until the next checkpoint makes it again
    mkdirSync(path.join(data, 'shadow', '0000000000000000.git'));
    expect(await pruneSnapshots(data, new Set(['keep-me']))).toEqual({ refsDeleted: 0 });
    expect(refs(kept.gitDir as string)).toEqual([kept.ref]);
  });

  it('removes a shadow repository left without refs, and the next job recreates it', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n' });
    const first = await snap(ws, data, 'pre', { jobId: 'gone' });
    expect(await pruneSnapshots(data, new Set())).toEqual({ refsDeleted: 1 });
    expect(existsSync(first.gitDir as string)).toBe(false);
    const again = await snap(ws, data, 'pre', { jobId: 'new' });
    expect(again.source).toBe('checkpoint');
    expect(stored(again, 'a.txt').toString()).toBe('a\n');
  });

  it("keeps the blobs the workspace's index holds, so the next checkpoint need not re-hash", async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'first\n' });
    await snap(ws, data, 'pre', { jobId: 'stays' });
    await write(ws, { 'a.txt': 'only the pruned job and the index hold this\n' });
    const pruned = await snap(ws, data, 'pre', { jobId: 'pruned' });
    const blob = execFileSync('git', [`--git-dir=${pruned.gitDir}`, 'rev-parse', `${pruned.id}:a.txt`], {
      encoding: 'utf8',
    }).trim();
    expect(await pruneSnapshots(data, new Set(['stays']))).toEqual({ refsDeleted: 1 });
    expect(() =>
      execFileSync('git', [`--git-dir=${pruned.gitDir}`, 'cat-file', '-e', blob], { stdio: 'ignore' }),
    ).not.toThrow();
  });

  it('a checkpoint after a prune never reuses a commit the prune removed', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'kept\n' });
    await snap(ws, data, 'pre', { jobId: 'stays' });
    await write(ws, { 'a.txt': 'only the pruned job has this commit\n' });
    const pruned = await snap(ws, data, 'pre', { jobId: 'pruned' });
    expect(await pruneSnapshots(data, new Set(['stays']))).toEqual({ refsDeleted: 1 });
    // nothing changed on disk since the pruned checkpoint: its tree is the index's, its commit is gone
    const next = await snap(ws, data, 'pre', { jobId: 'next' });
    expect(next.id).not.toBe(pruned.id);
    expect(() =>
      execFileSync('git', [`--git-dir=${next.gitDir}`, 'cat-file', '-e', `${next.id}^{commit}`], { stdio: 'ignore' }),
    ).not.toThrow();
    expect(stored(next, 'a.txt').toString()).toBe('only the pruned job has this commit\n');
  });
});
