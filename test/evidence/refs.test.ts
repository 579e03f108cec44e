import { execFileSync } from 'node:child_process';
import { lstatSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeRef } from '../../src/evidence/refs.js';
import { git, tempDir } from './helpers.js';

/** A bare repository holding two blobs; refs may name any object. */
async function repo(): Promise<{ gitDir: string; a: string; b: string }> {
  const gitDir = path.join(await tempDir(), 'shadow.git');
  git(path.dirname(gitDir), 'init', '-q', '--bare', gitDir);
  const blob = (text: string) =>
    execFileSync('git', [`--git-dir=${gitDir}`, 'hash-object', '-w', '--stdin'], {
      input: text,
      encoding: 'utf8',
    }).trim();
  return { gitDir, a: blob('a\n'), b: blob('b\n') };
}

const opts = (gitDir: string) => ({ cwd: gitDir, timeoutMs: 10_000 });
const resolve = (gitDir: string, ref: string) =>
  git(gitDir, `--git-dir=${gitDir}`, 'rev-parse', '--verify', ref).trim();
const inode = (gitDir: string, ref: string) => lstatSync(path.join(gitDir, ...ref.split('/'))).ino;

describe('writeRef', () => {
  it('links a ref naming the same object as the last one written; another object gets a file of its own', async () => {
    const { gitDir, a, b } = await repo();
    await writeRef(gitDir, 'refs/gaffer/w/j1/pre', a, opts(gitDir));
    await writeRef(gitDir, 'refs/gaffer/w/j1/post', a, opts(gitDir));
    await writeRef(gitDir, 'refs/gaffer/w/j2/pre', b, opts(gitDir));
    expect(inode(gitDir, 'refs/gaffer/w/j1/post')).toBe(inode(gitDir, 'refs/gaffer/w/j1/pre'));
    expect(inode(gitDir, 'refs/gaffer/w/j2/pre')).not.toBe(inode(gitDir, 'refs/gaffer/w/j1/pre'));
    expect([resolve(gitDir, 'refs/gaffer/w/j1/pre'), resolve(gitDir, 'refs/gaffer/w/j1/post')]).toEqual([a, a]);
    expect(resolve(gitDir, 'refs/gaffer/w/j2/pre')).toBe(b);
    // git removing one of the links leaves the other whole
    git(gitDir, `--git-dir=${gitDir}`, 'update-ref', '-d', 'refs/gaffer/w/j1/pre');
    expect(resolve(gitDir, 'refs/gaffer/w/j1/post')).toBe(a);
  });

  it('never links, nor reads, what was put where the last ref file was: a FIFO, another file, nothing', async () => {
    const { gitDir, a, b } = await repo();
    const file = (ref: string) => path.join(gitDir, ...ref.split('/'));
    await writeRef(gitDir, 'refs/gaffer/w/j1/pre', a, opts(gitDir));
    // a FIFO in its place: reading it would block the engine's thread
    unlinkSync(file('refs/gaffer/w/j1/pre'));
    execFileSync('mkfifo', [file('refs/gaffer/w/j1/pre')]);
    await writeRef(gitDir, 'refs/gaffer/w/j1/post', a, opts(gitDir));
    expect(lstatSync(file('refs/gaffer/w/j1/post')).isFile()).toBe(true);
    expect(resolve(gitDir, 'refs/gaffer/w/j1/post')).toBe(a);
    // another object's id renamed over it, as git writes a ref
    writeFileSync(file('refs/gaffer/w/x.lock'), `${b}\n`);
    renameSync(file('refs/gaffer/w/x.lock'), file('refs/gaffer/w/j1/post'));
    await writeRef(gitDir, 'refs/gaffer/w/j2/pre', a, opts(gitDir));
    expect(resolve(gitDir, 'refs/gaffer/w/j2/pre')).toBe(a);
    // gone (a prune): written again
    unlinkSync(file('refs/gaffer/w/j2/pre'));
    await writeRef(gitDir, 'refs/gaffer/w/j2/post', a, opts(gitDir));
    expect(resolve(gitDir, 'refs/gaffer/w/j2/post')).toBe(a);
    // no lock left behind by any of it
    expect(execFileSync('find', [gitDir, '-name', '*.lock'], { encoding: 'utf8' }).trim()).toBe('');
  });
});
