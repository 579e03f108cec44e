import { execFileSync } from 'node:child_process';
import { promises as fs, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, fileDiff } from '../../src/evidence/index.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { packedCheckinLimits, RACY_REFRESH_MIN } from '../../src/evidence/shadow-checkpoint.js';
import { addToIndex, joinNul, packedCheckinBatch } from '../../src/evidence/shadow-index.js';
import { git, lsTree, snap, stored, tempDir, write } from './helpers.js';

async function repoWorkspace(files: Record<string, string | Buffer>): Promise<{ ws: string; data: string }> {
  const ws = await tempDir();
  const data = await tempDir('gaffer-data-');
  git(ws, 'init', '-q');
  await write(ws, files);
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', 'init');
  return { ws, data };
}

describe('checkpoint diff', () => {
  it('reports an added, a modified and a deleted file, sorted', async () => {
    const { ws, data } = await repoWorkspace({ 'src/api.ts': 'a\n', 'src/old.ts': 'o\n', 'README.md': 'r\n' });
    const pre = await snap(ws, data, 'pre');
    expect(pre.source).toBe('checkpoint');
    expect(pre.ref).toMatch(/^refs\/gaffer\/[0-9a-f]{16}\/job1\/pre$/);
    await write(ws, { 'src/api.ts': 'a2\n', 'src/new.ts': 'n\n', 'b.ts': 'b\n' });
    await fs.rm(path.join(ws, 'src/old.ts'));
    const post = await snap(ws, data, 'post', { like: pre });
    expect(await diffSnapshots(pre, post)).toEqual({
      added: ['b.ts', 'src/new.ts'],
      modified: ['src/api.ts'],
      deleted: ['src/old.ts'],
    });
  });

  it('reports a rename as a delete plus an add', async () => {
    const { ws, data } = await repoWorkspace({ 'a/one.ts': 'same content\n' });
    const pre = await snap(ws, data, 'pre');
    await fs.rename(path.join(ws, 'a/one.ts'), path.join(ws, 'a/two.ts'));
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['a/two.ts'], modified: [], deleted: ['a/one.ts'] });
  });

  it('an unchanged workspace diffs empty', async () => {
    const { ws, data } = await repoWorkspace({ 'x.txt': 'x\n' });
    const pre = await snap(ws, data, 'pre');
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: [], deleted: [] });
  });

  it('an exec-bit change is a modification', async () => {
    const { ws, data } = await repoWorkspace({ 'run.sh': 'echo hi\n' });
    const pre = await snap(ws, data, 'pre');
    expect(lsTree(pre).get('run.sh')?.mode).toBe('100644');
    await fs.chmod(path.join(ws, 'run.sh'), 0o755);
    const post = await snap(ws, data, 'post');
    expect(lsTree(post).get('run.sh')?.mode).toBe('100755');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['run.sh'], deleted: [] });
  });

  it('a file turned into a symlink is a modification', async () => {
    const { ws, data } = await repoWorkspace({ 'conf.json': '{}\n', 'real.json': '{"a":1}\n' });
    const pre = await snap(ws, data, 'pre');
    await fs.rm(path.join(ws, 'conf.json'));
    await fs.symlink('real.json', path.join(ws, 'conf.json'));
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['conf.json'], deleted: [] });
  });

  it('a binary change is seen', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2, 3]);
    const { ws, data } = await repoWorkspace({ 'img/x.png': png });
    const pre = await snap(ws, data, 'pre');
    expect(stored(pre, 'img/x.png').equals(png)).toBe(true);
    await write(ws, { 'img/x.png': Buffer.concat([png, Buffer.from([0, 9])]) });
    const post = await snap(ws, data, 'post');
    expect((await diffSnapshots(pre, post)).modified).toEqual(['img/x.png']);
  });

  it('snapshots a folder that is not a repository', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, {
      'notes.txt': 'n\n',
      'sub/deep/file.py': 'print(1)\n',
      '.gitignore': '*.log\n',
      'out.log': 'noise\n',
    });
    const pre = await snap(ws, data, 'pre');
    expect(pre.source).toBe('checkpoint');
    expect([...lsTree(pre).keys()].sort()).toEqual(['.gitignore', 'notes.txt', 'sub/deep/file.py']);
    await write(ws, { 'sub/deep/file.py': 'print(2)\n' });
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['sub/deep/file.py'], deleted: [] });
  });

  it('leaves out the excluded folders at any depth', async () => {
    const { ws, data } = await repoWorkspace({ 'src/a.ts': 'a\n' });
    await write(ws, {
      'node_modules/x/index.js': 'x\n',
      'pkg/node_modules/y.js': 'y\n',
      'py/__pycache__/m.pyc': 'c\n',
      'py/.venv/lib/site.py': 's\n',
      'web/dist/app.js': 'd\n',
      'rust/target/debug/bin': 'b\n',
      '.gaffer/state.json': '{}\n',
      'build.gradle': 'a file named like a folder is kept\n',
    });
    const pre = await snap(ws, data, 'pre');
    expect([...lsTree(pre).keys()].sort()).toEqual(['build.gradle', 'src/a.ts']);
  });

  it('never snapshots its own data dir when it lives inside the workspace', async () => {
    const { ws } = await repoWorkspace({ 'a.txt': 'a\n' });
    const data = path.join(ws, 'var', 'gaffer-data');
    const pre = await snap(ws, data, 'pre');
    expect([...lsTree(pre).keys()]).toEqual(['a.txt']);
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: [], deleted: [] });
  });

  it('a re-checkpoint after a few changes only re-hashes those (much faster than the first)', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    const files: Record<string, string> = {};
    for (let i = 0; i < 3000; i++) files[`d${i % 30}/f${i}.txt`] = `${i} ${'x'.repeat(2000)}\n`;
    await write(ws, files);
    // a second passes so no entry is "racily clean" (same-second mtime as the index)
    await new Promise((r) => setTimeout(r, 1100));
    let t = performance.now();
    const pre = await snap(ws, data, 'pre');
    const first = performance.now() - t;
    await snap(ws, data, 'warm');
    await write(ws, { 'd1/f1.txt': 'changed\n', 'd2/f2.txt': 'changed\n' });
    t = performance.now();
    const post = await snap(ws, data, 'post');
    const second = performance.now() - t;
    expect((await diffSnapshots(pre, post)).modified).toEqual(['d1/f1.txt', 'd2/f2.txt']);
    expect(second).toBeLessThan(first / 2);
  });

  it('refs keep every snapshot of a job reachable', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n' });
    const pre = await snap(ws, data, 'pre');
    const refs = execFileSync('git', [`--git-dir=${pre.gitDir}`, 'for-each-ref', '--format=%(objectname) %(refname)'], {
      encoding: 'utf8',
    });
    expect(refs.trim()).toBe(`${pre.id} ${pre.ref}`);
  });

  it('deleting a tracked file alone (the listing does not change) is a deletion, and it can come back', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const pre = await snap(ws, data, 'pre');
    await fs.rm(path.join(ws, 'b.txt'));
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: [], deleted: ['b.txt'] });
    await write(ws, { 'b.txt': 'b\n' });
    const back = await snap(ws, data, 'back');
    expect(await diffSnapshots(pre, back)).toEqual({ added: [], modified: [], deleted: [] });
  });

  it('a file that becomes ignored leaves the next snapshot', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'keep.ts': 'k\n', 'trace.log': 't\n' });
    const pre = await snap(ws, data, 'pre');
    expect(lsTree(pre).has('trace.log')).toBe(true);
    await write(ws, { '.gitignore': '*.log\n' });
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['.gitignore'], modified: [], deleted: ['trace.log'] });
  });

  it('stays right when another process rewrote the shadow index since the last checkpoint', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const pre = await snap(ws, data, 'pre');
    // another gaffer process checkpointed meanwhile: it emptied the index this process remembers
    execFileSync('git', [`--git-dir=${pre.gitDir}`, 'read-tree', '--empty'], {
      env: { ...process.env, GIT_INDEX_FILE: path.join(pre.gitDir as string, 'gaffer-index') },
    });
    await write(ws, { 'a.txt': 'a2\n' });
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['a.txt'], deleted: [] });
  });

  it('concurrent snapshots of one workspace are serialized and all land', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n' });
    const shots = await Promise.all(['one', 'two', 'three'].map((label) => snap(ws, data, label)));
    expect(shots.map((s) => s.source)).toEqual(['checkpoint', 'checkpoint', 'checkpoint']);
    const refs = execFileSync('git', [`--git-dir=${shots[0]?.gitDir}`, 'for-each-ref', '--format=%(refname)'], {
      encoding: 'utf8',
    });
    expect(
      refs
        .trim()
        .split('\n')
        .map((r) => r.split('/').pop()),
    ).toEqual(['one', 'three', 'two']);
  });

  it('handles paths with spaces, unicode, glob characters and a leading dash', async () => {
    const names = ['dir with space/ünïcødé.txt', 'weird[1]*?.txt', '-rf', 'emoji 🙂.md'];
    const { ws, data } = await repoWorkspace(Object.fromEntries(names.map((n) => [n, `${n}\n`])));
    const pre = await snap(ws, data, 'pre');
    expect([...lsTree(pre).keys()].sort()).toEqual([...names].sort());
    for (const n of names) await write(ws, { [n]: `${n} changed\n` });
    const post = await snap(ws, data, 'post');
    expect((await diffSnapshots(pre, post)).modified).toEqual([...names].sort());
    expect(await fileDiff(pre, post, 'weird[1]*?.txt')).toContain('+weird[1]*?.txt changed');
  });

  it('an untracked file named like an index entry of `ls-files -s` is itself in the checkpoint, not the name after its tab', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n', 'src/b.txt': 'b\n' });
    const pre = await snap(ws, data, 'pre');
    const disguised = `100644 ${'0'.repeat(40)} 0\ta.txt`;
    const sha256 = `aaaaaa ${'1'.repeat(64)} 3\tgone.txt`;
    await write(ws, {
      [disguised]: 'hidden\n',
      [`src/${sha256}`]: 'hidden too\n',
      [`src/160000 ${'2'.repeat(40)} 0\tsub`]: 'x\n',
    });
    // a fresh data dir: a first checkpoint lists the workspace in full
    for (const [p, d] of [[pre, data] as const, [null, await tempDir('gaffer-data-')] as const]) {
      const post = await snap(ws, d, 'post');
      expect([...lsTree(post).keys()].sort()).toEqual(
        ['a.txt', 'src/b.txt', disguised, `src/${sha256}`, `src/160000 ${'2'.repeat(40)} 0\tsub`].sort(),
      );
      if (p !== null) expect((await diffSnapshots(p, post)).added).toHaveLength(3);
    }
  });

  it("a new index of many files is hashed into packs, a batch each: the tree git's own add writes, later checkpoints loose again", async () => {
    const files: Record<string, string> = { 'empty.txt': '', 'one.txt': '1' };
    for (let i = 0; i < 4100; i++) files[`src/d${i % 40}/f${i}.ts`] = `export const v${i} = ${i};\n`;
    const { ws, data } = await repoWorkspace(files);
    // an hour old: no entry is racily clean when the index is written (git keeps such entries in
    // the split index's own part, whatever the shared index holds)
    const old = new Date(Date.now() - 3_600_000);
    await Promise.all(Object.keys(files).map((f) => fs.utimes(path.join(ws, f), old, old)));
    const saved = [packedCheckinLimits.minPaths, packedCheckinBatch.paths] as const;
    packedCheckinLimits.minPaths = 10;
    // the paths come in chunks of 2,000: three batches, a pack each
    packedCheckinBatch.paths = 2000;
    try {
      const pre = await snap(ws, data, 'pre');
      const gitDir = pre.gitDir as string;
      const packs = (): string[] => readdirSync(path.join(gitDir, 'objects', 'pack')).sort();
      const looseBlobs = (): string[] =>
        git(gitDir, 'count-objects', '-v')
          .split('\n')
          .filter((l) => l.startsWith('count:'));
      expect(packs().filter((p) => p.endsWith('.pack'))).toHaveLength(3);
      expect(packs().some((p) => p.startsWith('tmp_'))).toBe(false);
      // one shared index of every path, not two batches left in the split index's own part
      const own = statSync(path.join(gitDir, 'gaffer-index')).size;
      const shared = readdirSync(gitDir).filter((n) => n.startsWith('sharedindex.'));
      expect(shared).toHaveLength(1);
      // (the last batch's 100 entries left there: 8.4 KB of a 277 KB shared index; none: 1.4 KB)
      expect(own).toBeLessThan(statSync(path.join(gitDir, shared[0] as string)).size / 100);
      // the same tree as `git add -A` + `write-tree` into a fresh index
      const index = path.join(await tempDir(), 'index');
      const tree = execFileSync('sh', ['-c', 'git add -A && git write-tree'], {
        cwd: ws,
        env: { ...process.env, GIT_INDEX_FILE: index },
        encoding: 'utf8',
      }).trim();
      expect(git(gitDir, 'rev-parse', `${pre.id}^{tree}`).trim()).toBe(tree);
      expect(stored(pre, 'src/d5/f5.ts').toString()).toBe('export const v5 = 5;\n');
      const loose = looseBlobs();
      await write(ws, { 'src/d5/f5.ts': 'changed\n', 'new.txt': 'n\n' });
      const post = await snap(ws, data, 'post', { like: pre });
      expect(await diffSnapshots(pre, post)).toEqual({ added: ['new.txt'], modified: ['src/d5/f5.ts'], deleted: [] });
      expect(await fileDiff(pre, post, 'src/d5/f5.ts')).toContain('+changed');
      expect(packs().filter((p) => p.endsWith('.pack'))).toHaveLength(3);
      expect(looseBlobs()).not.toEqual(loose);
      expect(git(gitDir, 'fsck', '--no-dangling')).toBe('');
    } finally {
      [packedCheckinLimits.minPaths, packedCheckinBatch.paths] = saved;
    }
  });

  it('a packed update-index that dies on a path leaves no unfinished pack: the path is dropped, the rest packed', async () => {
    const ws = await tempDir();
    const gitDir = path.join(await tempDir('gaffer-data-'), 'shadow.git');
    git(ws, 'init', '-q', '--bare', gitDir);
    await write(ws, { 'a.txt': 'a\n', 'b.txt': 'b\n', 'dir/c.txt': 'c\n' });
    const base = [`--git-dir=${gitDir}`, `--work-tree=${ws}`];
    const opts = { cwd: ws, timeoutMs: 30_000, env: { GIT_INDEX_FILE: path.join(gitDir, 'gaffer-index') } };
    // `dir` is a folder: git stops at it ("Unable to process path dir") after packing what came before
    const paths = ['a.txt', 'b.txt', 'dir'];
    async function* stream(): AsyncIterable<string> {
      yield joinNul(paths);
    }
    const dropped = await addToIndex(base, opts, stream(), () => paths, { gitDir, when: Promise.resolve(true) });
    expect([...dropped]).toEqual(['dir']);
    const packs = readdirSync(path.join(gitDir, 'objects', 'pack'));
    expect(packs.filter((p) => p.startsWith('tmp_'))).toEqual([]);
    expect(packs.filter((p) => p.endsWith('.pack'))).toHaveLength(1);
    const listed = execFileSync('git', [`--git-dir=${gitDir}`, 'ls-files', '-z'], {
      env: { ...process.env, ...opts.env },
    });
    expect(listed.toString()).toBe('a.txt\0b.txt\0');
  });

  it('a file changed and ignored in the same step leaves the snapshot', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'keep.ts': 'k\n', 'trace.log': 't\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, { 'trace.log': 't2\n', '.gitignore': '*.log\n' });
    const post = await snap(ws, data, 'post');
    expect([...lsTree(post).keys()].sort()).toEqual(['.gitignore', 'keep.ts']);
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['.gitignore'], modified: [], deleted: ['trace.log'] });
  });

  it('rebuilds a corrupt shadow index instead of failing', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n' });
    const pre = await snap(ws, data, 'pre');
    await fs.writeFile(path.join(pre.gitDir as string, 'gaffer-index'), 'not an index');
    await write(ws, { 'a.txt': 'a2\n' });
    const post = await snap(ws, data, 'post');
    expect(post.source).toBe('checkpoint');
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: ['a.txt'], deleted: [] });
  });

  it('unchanged content keeps its commit (nothing to diff); every checkpoint still has its own ref, readable by git', async () => {
    const { ws, data } = await repoWorkspace({ 'a.txt': 'a\n' });
    const pre = await snap(ws, data, 'pre', { jobId: 'job-one' });
    const post = await snap(ws, data, 'post', { jobId: 'job-one' });
    const again = await snap(ws, data, 'pre', { jobId: 'job-two' });
    expect(post.id).toBe(pre.id);
    expect(again.id).toBe(pre.id);
    const gitDir = pre.gitDir as string;
    const refs = execFileSync('git', [`--git-dir=${gitDir}`, 'for-each-ref', '--format=%(refname) %(objectname)'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n');
    expect(refs.sort()).toEqual([pre.ref, post.ref, again.ref].map((ref) => `${ref} ${pre.id}`).sort());
    expect(await diffSnapshots(pre, post)).toEqual({ added: [], modified: [], deleted: [] });
    await write(ws, { 'a.txt': 'changed\n' });
    const changed = await snap(ws, data, 'post', { jobId: 'job-two' });
    expect(changed.id).not.toBe(pre.id);
    expect(
      execFileSync('git', [`--git-dir=${gitDir}`, 'rev-parse', changed.ref as string], { encoding: 'utf8' }).trim(),
    ).toBe(changed.id);
    expect(await diffSnapshots(again, changed)).toEqual({ added: [], modified: ['a.txt'], deleted: [] });
  });

  it('racy git: an index written in the second its files were is written again once that second has passed; a same-size same-mtime edit still shows', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
    const indexFile = async (s: Snapshot) => (await fs.stat(path.join(s.gitDir as string, 'gaffer-index'))).mtimeMs;
    // early in a second, so the files and the index are (most likely) written within it
    await new Promise((resolve) => setTimeout(resolve, 1020 - (Date.now() % 1000)));
    const files: Record<string, string> = {};
    for (let i = 0; i < RACY_REFRESH_MIN.files + 30; i++)
      files[`src/f${String(i).padStart(2, '0')}.txt`] = `file ${i}\n`;
    await write(ws, files);
    const pre = await snap(ws, data, 'pre');
    const writtenS = Math.floor((await indexFile(pre)) / 1000);
    let racy = 0;
    for (const rel of Object.keys(files))
      if (Math.floor((await fs.stat(path.join(ws, rel))).mtimeMs / 1000) >= writtenS) racy++;
    await nextSecond();
    const unchanged = await snap(ws, data, 'unchanged');
    expect(unchanged.id).toBe(pre.id);
    if (racy >= RACY_REFRESH_MIN.files) {
      // its entries were racily clean (git re-reads them on every look): refreshed, so written later
      expect(Math.floor((await indexFile(unchanged)) / 1000)).toBeGreaterThan(writtenS);
    }

    // the classic racy edit: same size, mtime put back, in the second the index is written
    await write(ws, { 'src/new.txt': 'n\n' });
    const before = await snap(ws, data, 'before');
    const edited = path.join(ws, 'src/f07.txt');
    const { mtime } = await fs.stat(edited);
    await fs.writeFile(edited, 'FILE 7\n');
    await fs.utimes(edited, mtime, mtime);
    await nextSecond();
    const after = await snap(ws, data, 'after');
    expect(await diffSnapshots(before, after)).toEqual({ added: [], modified: ['src/f07.txt'], deleted: [] });
  });
});
