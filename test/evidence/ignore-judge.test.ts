import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/evidence/index.js';
import { git, lsTree, snap, tempDir, write } from './helpers.js';

// issue 32: the checkpoint's ignore rules judge every snapshot compared with it (ignore-judge.ts),
// at no cost to a job whose rules did not change. Real git; every git process gaffer starts is
// counted through a `git` first on PATH that logs its arguments, then runs the real one.

let log = '';
let savedPath: string | undefined;
beforeAll(async () => {
  const shim = await tempDir('gaffer-git-shim-');
  log = path.join(shim, 'calls.log');
  const real = git(shim, '--exec-path').trim();
  writeFileSync(path.join(shim, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${real}/git' "$@"\n`);
  chmodSync(path.join(shim, 'git'), 0o755);
  writeFileSync(log, '');
  savedPath = process.env.PATH;
  process.env.PATH = `${shim}:${process.env.PATH ?? ''}`;
});
afterAll(() => {
  process.env.PATH = savedPath;
});

/** The git calls made while `fn` runs. */
async function gitCalls<T>(fn: () => Promise<T>): Promise<{ value: T; calls: string[] }> {
  const from = readFileSync(log, 'utf8').length;
  const value = await fn();
  return { value, calls: readFileSync(log, 'utf8').slice(from).split('\n').filter(Boolean) };
}

async function repo(files: Record<string, string>): Promise<{ ws: string; data: string }> {
  const root = await tempDir();
  const ws = path.join(root, 'ws');
  const data = path.join(root, 'data');
  mkdirSync(ws);
  await write(ws, files);
  git(ws, 'init', '-q');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', 'init');
  return { ws, data };
}

const judging = (call: string): boolean => / -i |check-ignore|ls-tree|cat-file/.test(` ${call} `);

describe('the checkpoint judges', () => {
  it('a job whose ignore rules did not change starts no git process more than a snapshot compared with nothing', async () => {
    const files = { '.gitignore': '*.log\n', 'src/a.js': 'a\n', 'tests/.gitignore': 'tmp/\n', 'tests/t.js': 't\n' };
    const counts: number[] = [];
    for (const judged of [false, true]) {
      const { ws, data } = await repo(files);
      const pre = await snap(ws, data, 'pre');
      await write(ws, { 'src/a.js': 'changed\n', 'src/b.js': 'new\n', 'out.log': 'ignored\n' });
      const { value: post, calls } = await gitCalls(() => snap(ws, data, 'post', judged ? { like: pre } : {}));
      expect(calls.filter(judging)).toEqual([]);
      expect(post.hiddenByIgnore).toBeUndefined();
      expect(await diffSnapshots(pre, post)).toEqual({ added: ['src/b.js'], modified: ['src/a.js'], deleted: [] });
      counts.push(calls.length);
    }
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[1]).toBe(counts[0]);
  });

  it('a `.gitignore` that ignores itself is in the checkpoint (the rules are evidence too)', async () => {
    const { ws, data } = await repo({ 'a.js': 'a\n' });
    await write(ws, { 'tests/.gitignore': '.gitignore\nconftest.py\n', 'tests/conftest.py': 'x\n' });
    const s = await snap(ws, data, 'pre');
    expect([...lsTree(s).keys()].sort()).toEqual(['a.js', 'tests/.gitignore']);
  });

  it('a core.excludesFile set in .git/config hides nothing: the file it hides is in the snapshot, named', async () => {
    const { ws, data } = await repo({ 'a.js': 'a\n', 'tests/t.py': 't\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, { '.git/hide': 'conftest.py\n', 'tests/conftest.py': 'evil\n' });
    git(ws, 'config', 'core.excludesFile', path.join(ws, '.git', 'hide'));
    const { value: post, calls } = await gitCalls(() => snap(ws, data, 'post', { like: pre }));
    expect(post.hiddenByIgnore).toEqual(['tests/conftest.py']);
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['tests/conftest.py'], modified: [], deleted: [] });
    // the price of a changed rule: one listing of the ignored files and one judgement, the checkpoint read, one more checkpoint
    expect(calls.filter(judging).length).toBeGreaterThan(0);
  });

  it('the checkpoint’s own rules still hold: what they ignored stays out, what a removed rule lets in comes in', async () => {
    const { ws, data } = await repo({ '.gitignore': '*.log\ncache/\n', 'a.js': 'a\n' });
    await write(ws, { 'old.log': 'x\n', 'cache/c.js': 'c\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, {
      '.gitignore': '*.log\ncache/\n*.tmp\nsecret.js\nlib/\n',
      'new.log': 'y\n',
      'x.tmp': 'z\n',
      'secret.js': 's\n',
      'cache/d.js': 'd\n',
      'lib/l.js': 'l\n',
    });
    const post = await snap(ws, data, 'post', { like: pre });
    expect(post.hiddenByIgnore).toEqual(['lib/l.js', 'secret.js', 'x.tmp']);
    expect(await diffSnapshots(pre, post)).toEqual({
      added: ['lib/l.js', 'secret.js', 'x.tmp'],
      modified: ['.gitignore'],
      deleted: [],
    });
  });

  it('outside a repository, and in a folder the new rule ignores as a whole: the hidden files are found', async () => {
    const root = await tempDir();
    const ws = path.join(root, 'ws');
    const data = path.join(root, 'data');
    await write(ws, { 'a.js': 'a\n', 'node_modules/dep/index.js': 'd\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, {
      'helpers/.gitignore': '*\n',
      'helpers/deep/setup.js': 'evil\n',
      '.gitignore': 'node_modules/\nlib/\n',
      'lib/x.js': 'x\n',
      'node_modules/dep/more.js': 'm\n',
    });
    const post = await snap(ws, data, 'post', { like: pre });
    expect(post.hiddenByIgnore).toEqual(['helpers/deep/setup.js', 'lib/x.js']);
    expect(await diffSnapshots(pre, post)).toEqual({
      added: ['.gitignore', 'helpers/.gitignore', 'helpers/deep/setup.js', 'lib/x.js'],
      modified: [],
      deleted: [],
    });
  });
});
