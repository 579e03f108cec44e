import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/evidence/index.js';
import { canBeDenied, git, lsTree, snap, stored, tempDir, write } from './helpers.js';

describe('content-exact checkpoints', () => {
  it('stores the files of nested repositories (with and without a commit) as content, never a gitlink', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    git(ws, 'init', '-q');
    await write(ws, { 'top.txt': 't\n', 'libs/committed/lib.ts': 'lib\n', 'libs/fresh/new.ts': 'new\n' });
    git(path.join(ws, 'libs/committed'), 'init', '-q');
    await write(ws, { 'libs/committed/.gitignore': 'secret.txt\n', 'libs/committed/secret.txt': 's\n' });
    git(path.join(ws, 'libs/committed'), 'add', '-A');
    git(path.join(ws, 'libs/committed'), 'commit', '-qm', 'x');
    git(path.join(ws, 'libs/fresh'), 'init', '-q');
    git(ws, 'add', 'top.txt');
    git(ws, 'commit', '-qm', 'top');

    const pre = await snap(ws, data, 'pre');
    const tree = lsTree(pre);
    expect([...tree.keys()].sort()).toEqual([
      'libs/committed/.gitignore',
      'libs/committed/lib.ts',
      'libs/fresh/new.ts',
      'top.txt',
    ]);
    expect([...tree.values()].some((e) => e.mode === '160000')).toBe(false);

    await write(ws, { 'libs/committed/lib.ts': 'lib2\n', 'libs/fresh/new.ts': 'new2\n' });
    const post = await snap(ws, data, 'post');
    expect((await diffSnapshots(pre, post)).modified).toEqual(['libs/committed/lib.ts', 'libs/fresh/new.ts']);
  });

  it('stores a registered submodule folder by its files', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    const upstream = await tempDir();
    git(upstream, 'init', '-q');
    await write(upstream, { 'mod.ts': 'm\n' });
    git(upstream, 'add', '-A');
    git(upstream, 'commit', '-qm', 'm');
    git(ws, 'init', '-q');
    git(ws, '-c', 'protocol.file.allow=always', 'submodule', '--quiet', 'add', upstream, 'vendor/mod');
    git(ws, 'commit', '-qm', 'sub');
    const pre = await snap(ws, data, 'pre');
    const tree = lsTree(pre);
    expect(tree.get('vendor/mod/mod.ts')?.mode).toBe('100644');
    expect([...tree.values()].some((e) => e.mode === '160000')).toBe(false);
  });

  it('stores CRLF and filtered files byte-exact whatever the workspace .gitattributes say', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    git(ws, 'init', '-q');
    // the user's repo config defines a filter that would rewrite content on `git add`
    git(ws, 'config', 'filter.upper.clean', 'tr a-z A-Z');
    git(ws, 'config', 'filter.upper.required', 'true');
    const crlf = Buffer.from('line one\r\nline two\r\n');
    await write(ws, {
      '.gitattributes': '* text eol=lf\n*.up filter=upper\n*.lfs filter=lfs diff=lfs merge=lfs -text\n',
      'win.txt': crlf,
      'shout.up': 'quiet words\n',
      'big.lfs': 'not a pointer\r\n',
    });
    const pre = await snap(ws, data, 'pre');
    expect(stored(pre, 'win.txt').equals(crlf)).toBe(true);
    expect(stored(pre, 'shout.up').toString()).toBe('quiet words\n');
    expect(stored(pre, 'big.lfs').toString()).toBe('not a pointer\r\n');
  });

  it('leaves out .gitignored files unless the request names them', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    git(ws, 'init', '-q');
    await write(ws, {
      '.gitignore': '*.log\nout/\n',
      'app.ts': 'a\n',
      'debug.log': 'x\n',
      'trace.log': 'y\n',
      'out/report.html': '<p>\n',
      'node_modules/pkg/index.js': 'p\n',
    });
    const plain = await snap(ws, data, 'pre');
    expect([...lsTree(plain).keys()].sort()).toEqual(['.gitignore', 'app.ts']);
    const named = await snap(ws, data, 'pre2', {
      alwaysInclude: ['./debug.log', 'out', 'node_modules/pkg/index.js', 'missing.txt'],
    });
    expect([...lsTree(named).keys()].sort()).toEqual([
      '.gitignore',
      'app.ts',
      'debug.log',
      'node_modules/pkg/index.js',
      'out/report.html',
    ]);
  });

  it('a workspace inside a larger repository honours the parent .gitignore', async () => {
    const repo = await tempDir();
    const data = await tempDir('gaffer-data-');
    git(repo, 'init', '-q');
    await write(repo, {
      '.gitignore': '*.tmp\npackages/app/generated/\n',
      'packages/app/src/main.ts': 'm\n',
      'packages/app/cache.tmp': 't\n',
      'packages/app/generated/g.ts': 'g\n',
      'packages/other/o.ts': 'o\n',
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'init');
    const ws = path.join(repo, 'packages/app');
    await write(ws, { 'src/untracked.ts': 'u\n', 'more.tmp': 'm\n' });
    const pre = await snap(ws, data, 'pre');
    expect([...lsTree(pre).keys()].sort()).toEqual(['src/main.ts', 'src/untracked.ts']);
  });

  it('stores symlinks as links: a normal one, a loop, one pointing outside', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'real.txt': 'r\n', 'dir/inner.txt': 'i\n' });
    await fs.symlink('real.txt', path.join(ws, 'link.txt'));
    await fs.symlink('loop-b', path.join(ws, 'loop-a'));
    await fs.symlink('loop-a', path.join(ws, 'loop-b'));
    await fs.symlink('/etc', path.join(ws, 'outside'));
    await fs.symlink('dir', path.join(ws, 'dirlink'));
    const pre = await snap(ws, data, 'pre');
    const tree = lsTree(pre);
    for (const [p, target] of [
      ['link.txt', 'real.txt'],
      ['loop-a', 'loop-b'],
      ['loop-b', 'loop-a'],
      ['outside', '/etc'],
      ['dirlink', 'dir'],
    ] as const) {
      expect(tree.get(p)?.mode).toBe('120000');
      expect(stored(pre, p).toString()).toBe(target);
    }
    expect(tree.has('outside/passwd')).toBe(false);
    expect(tree.has('dirlink/inner.txt')).toBe(false);
    await fs.rm(path.join(ws, 'link.txt'));
    await fs.symlink('dir/inner.txt', path.join(ws, 'link.txt'));
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['link.txt'], deleted: [] });
  });

  it('skips a FIFO and lists it, without failing the checkpoint', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n', 'run/keep.txt': 'k\n' });
    execFileSync('mkfifo', [path.join(ws, 'run/pipe')]);
    const pre = await snap(ws, data, 'pre');
    expect(pre.source).toBe('checkpoint');
    expect(pre.skipped).toEqual(['run/pipe']);
    expect([...lsTree(pre).keys()].sort()).toEqual(['a.txt', 'run/keep.txt']);
  });

  it('a FIFO planted in a folder whose mtime is then put back is still listed (the folder cache goes by ctime, which no one can set)', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n', 'run/keep.txt': 'k\n' });
    // old enough (past the racy second) for the first checkpoint to cache the folder's listing
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const pre = await snap(ws, data, 'pre');
    expect(pre.skipped).toEqual([]);
    const before = await fs.stat(path.join(ws, 'run'), { bigint: true });
    execFileSync('mkfifo', [path.join(ws, 'run/pipe')]);
    // the attacker's cover: the folder's mtime exactly as it was, to the nanosecond
    const ns = before.mtimeNs;
    execFileSync('touch', [
      '-m',
      '-d',
      `@${ns / 1_000_000_000n}.${String(ns % 1_000_000_000n).padStart(9, '0')}`,
      path.join(ws, 'run'),
    ]);
    expect((await fs.stat(path.join(ws, 'run'), { bigint: true })).mtimeNs).toBe(before.mtimeNs);
    const post = await snap(ws, data, 'post', { like: pre });
    expect(post.skipped).toEqual(['run/pipe']);
  });

  it.skipIf(!canBeDenied)('skips an unreadable file and lists it', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n', 'secret.txt': 's\n' });
    await fs.chmod(path.join(ws, 'secret.txt'), 0o000);
    const pre = await snap(ws, data, 'pre');
    expect(pre.source).toBe('checkpoint');
    expect(pre.skipped).toEqual(['secret.txt']);
    expect([...lsTree(pre).keys()]).toEqual(['a.txt']);
  });

  it('records files over the size cap by stat and still sees them change', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'small.txt': 's\n', 'big.bin': Buffer.alloc(4096, 7) });
    const pre = await snap(ws, data, 'pre', { sizeCapBytes: 1024 });
    expect(pre.largeFilesByStat).toBe(true);
    expect(lsTree(pre).has('big.bin')).toBe(false);
    await write(ws, { 'big.bin': Buffer.alloc(5000, 8), 'huge.bin': Buffer.alloc(2048, 1) });
    const post = await snap(ws, data, 'post', { sizeCapBytes: 1024 });
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['huge.bin'], modified: ['big.bin'], deleted: [] });
    await fs.rm(path.join(ws, 'huge.bin'));
    await write(ws, { 'big.bin': 'small now\n' });
    const last = await snap(ws, data, 'last', { sizeCapBytes: 1024 });
    expect(last.largeFilesByStat).toBe(false);
    expect(await diffSnapshots(post, last)).toEqual({ added: [], modified: ['big.bin'], deleted: ['huge.bin'] });
  });
});
