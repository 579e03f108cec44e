import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diffSnapshots, fileDiff } from '../../src/evidence/index.js';
import { snap, tempDir, write } from './helpers.js';

const savedPath = process.env.PATH;
afterEach(() => {
  process.env.PATH = savedPath;
});

/** PATH without git: a folder holding only `node` itself. */
async function pathWithoutGit(): Promise<string> {
  const bin = await tempDir('gaffer-bin-');
  await fs.symlink(process.execPath, path.join(bin, 'node'));
  return bin;
}

describe('mtime fallback', () => {
  it('is used when git is not on PATH, says why, and still sees changes', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, {
      'a.txt': 'a\n',
      'gone.txt': 'g\n',
      'sub/b.txt': 'b\n',
      'node_modules/m.js': 'm\n',
      '.git/HEAD': 'x\n',
    });
    await fs.symlink('a.txt', path.join(ws, 'link'));
    process.env.PATH = await pathWithoutGit();
    const pre = await snap(ws, data, 'pre');
    expect(pre.source).toBe('mtime');
    expect(pre.fallbackReason).toBe('git is not on PATH');
    expect(pre.manifestFile).toBe(path.join(data, 'snapshots', 'job1', 'pre.json'));
    expect(pre.truncated).toBe(false);

    await write(ws, { 'sub/b.txt': 'b changed, longer\n', 'new.txt': 'n\n', 'node_modules/m.js': 'ignored change\n' });
    await fs.rm(path.join(ws, 'gone.txt'));
    await fs.chmod(path.join(ws, 'a.txt'), 0o755);
    await fs.rm(path.join(ws, 'link'));
    await fs.symlink('sub/b.txt', path.join(ws, 'link'));
    const post = await snap(ws, data, 'post', { like: pre });
    expect(post.source).toBe('mtime');
    expect(await diffSnapshots(pre, post)).toEqual({
      added: ['new.txt'],
      modified: ['a.txt', 'link', 'sub/b.txt'],
      deleted: ['gone.txt'],
    });
    expect(await fileDiff(pre, post, 'sub/b.txt')).toBe(
      'sub/b.txt: content not recorded (mtime evidence): size 2 -> 18\n',
    );
    expect(await fileDiff(pre, null, 'new.txt')).toBe(
      'new.txt: content not recorded (mtime evidence): size absent -> 2\n',
    );
    expect(await fileDiff(pre, post, 'gone.txt')).toBe(
      'gone.txt: content not recorded (mtime evidence): size 2 -> absent\n',
    );
  });

  it('an mtime `like` forces the fallback even with git available', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n' });
    const pre = await snap(ws, data, 'pre', { forceMtime: true });
    expect(pre.source).toBe('mtime');
    const post = await snap(ws, data, 'post', { like: pre });
    expect(post.source).toBe('mtime');
    expect(post.fallbackReason).toContain('mtime snapshot');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: [], deleted: [] });
  });

  it('a job whose snapshots fell back to mtime keeps that source even once git works again', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n' });
    process.env.PATH = await pathWithoutGit();
    const pre = await snap(ws, data, 'pre');
    process.env.PATH = savedPath;
    const post = await snap(ws, data, 'post');
    expect([pre.source, post.source]).toEqual(['mtime', 'mtime']);
    expect(post.fallbackReason).toBe('earlier snapshots of this job are mtime snapshots');
    const other = await snap(ws, data, 'pre', { jobId: 'another-job' });
    expect(other.source).toBe('checkpoint');
  });

  it('stops at its cap, says truncated, and does not invent changes past the cap', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`f${String(i).padStart(2, '0')}.txt`] = `${i}\n`;
    await write(ws, files);
    const pre = await snap(ws, data, 'pre', { forceMtime: true, mtimeMaxEntries: 10 });
    expect(pre.truncated).toBe(true);
    await write(ws, { 'f03.txt': 'changed\n', 'f25.txt': 'changed past the cap\n', 'a-new.txt': 'n\n' });
    await fs.rm(path.join(ws, 'f29.txt'));
    const post = await snap(ws, data, 'post', { forceMtime: true, mtimeMaxEntries: 10 });
    // the walk is sorted: a-new.txt pushes one file out of the window, which is not a deletion
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['a-new.txt'], modified: ['f03.txt'], deleted: [] });
  });

  it('a checkpoint followed by an mtime snapshot counts files written since the checkpoint', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const pre = await snap(ws, data, 'pre');
    expect(pre.source).toBe('checkpoint');
    await new Promise((r) => setTimeout(r, 20));
    await write(ws, { 'a.txt': 'a2\n', 'd.txt': 'd\n' });
    await fs.rm(path.join(ws, 'c.txt'));
    const post = await snap(ws, data, 'post', { forceMtime: true });
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['d.txt'], modified: ['a.txt'], deleted: ['c.txt'] });
  });
});
