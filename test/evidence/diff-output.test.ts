import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildChangesJson, fileDiff, findClaimedOnly, isCaseInsensitiveFs } from '../../src/evidence/index.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { snap, tempDir, write } from './helpers.js';

describe('fileDiff', () => {
  it('gives a unified diff of a text file against a later checkpoint and against the live workspace', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'src/api.ts': 'one\ntwo\nthree\n', 'old.ts': 'bye\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, { 'src/api.ts': 'one\nTWO\nthree\n', 'new.ts': 'hello' });
    await fs.rm(path.join(ws, 'old.ts'));
    const post = await snap(ws, data, 'post');
    const expected =
      'diff --git a/src/api.ts b/src/api.ts\n--- a/src/api.ts\n+++ b/src/api.ts\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n';
    expect(await fileDiff(pre, post, 'src/api.ts')).toBe(expected);
    expect(await fileDiff(pre, null, './src/api.ts')).toBe(expected);
    expect(await fileDiff(pre, null, 'new.ts')).toBe(
      'diff --git a/new.ts b/new.ts\nnew file mode 100644\n--- /dev/null\n+++ b/new.ts\n@@ -0,0 +1 @@\n+hello\n\\ No newline at end of file\n',
    );
    expect(await fileDiff(pre, post, 'old.ts')).toBe(
      'diff --git a/old.ts b/old.ts\ndeleted file mode 100644\n--- a/old.ts\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n',
    );
    expect(await fileDiff(pre, post, 'untouched.ts')).toBe('');
  });

  it('gives a size line for binary files and a mode line for an exec-bit change', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'src/x.png': Buffer.alloc(1024, 0), 'run.sh': 'echo\n' });
    const pre = await snap(ws, data, 'pre');
    await write(ws, { 'src/x.png': Buffer.alloc(2048, 0) });
    await fs.chmod(path.join(ws, 'run.sh'), 0o755);
    expect(await fileDiff(pre, null, 'src/x.png')).toBe('Binary file src/x.png: 1024 -> 2048 bytes\n');
    expect(await fileDiff(pre, null, 'run.sh')).toBe(
      'diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n',
    );
  });

  it('says the content of a file over the size cap was not recorded', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'big.bin': Buffer.alloc(4000, 1) });
    const pre = await snap(ws, data, 'pre', { sizeCapBytes: 1000 });
    await write(ws, { 'big.bin': Buffer.alloc(5000, 1) });
    expect(await fileDiff(pre, null, 'big.bin')).toBe(
      'big.bin: content not recorded (over the size cap): size 4000 -> 5000\n',
    );
  });
});

describe('claims', () => {
  const changed = { added: ['src/new.ts'], modified: ['src/api.ts', 'lib/Util.ts'], deleted: ['docs/old.md'] };

  it('matches normalized claims on whole trailing path segments against all three lists', () => {
    const claims = [
      './src/api.ts',
      'src\\new.ts',
      'api.ts',
      'old.md',
      '/home/me/project/src/api.ts',
      'src//api.ts',
      '',
    ];
    expect(findClaimedOnly(claims, changed)).toEqual([]);
  });

  it('names claims the changes do not back', () => {
    expect(findClaimedOnly(['i.ts', 'other/api.ts', 'src/api.ts/', 'README.md'], changed)).toEqual([
      'README.md',
      'i.ts',
      'other/api.ts',
    ]);
  });

  it('compares case-insensitively only when asked', () => {
    expect(findClaimedOnly(['lib/util.ts'], changed)).toEqual(['lib/util.ts']);
    expect(findClaimedOnly(['lib/util.ts'], changed, { caseInsensitive: true })).toEqual([]);
  });

  it('knows this filesystem is case-sensitive', async () => {
    expect(await isCaseInsensitiveFs(await tempDir())).toBe(
      process.platform === 'darwin' || process.platform === 'win32',
    );
  });
});

describe('changes JSON', () => {
  const before: Snapshot = {
    source: 'checkpoint',
    id: '3f1c2a9b0d4e5f60718293a4b5c6d7e8f9a0b1c2',
    workspace: '/w',
    skipped: ['run/pipe'],
    truncated: false,
    largeFilesByStat: false,
  };

  it('caps each list at 60 and keeps the count exact', () => {
    const many = Array.from({ length: 75 }, (_, i) => `f${String(i).padStart(3, '0')}.ts`);
    const json = buildChangesJson(
      before,
      { added: many, modified: ['m.ts'], deleted: [] },
      { verificationWrote: ['coverage/lcov.info'] },
    );
    expect(json.count).toBe(76);
    expect(json.added).toHaveLength(60);
    expect(json.added[59]).toBe('f059.ts');
    expect(json.truncated).toBe(true);
    expect(json).toMatchObject({
      source: 'checkpoint',
      checkpoint: '3f1c2a9b0d4e',
      modified: ['m.ts'],
      deleted: [],
      snapshot_truncated: false,
    });
    expect(json.verification_wrote).toEqual(['coverage/lcov.info']);
    expect(json.git).toBeUndefined();
  });

  it('merges skipped files and truncation of the after-snapshot, and carries git facts', () => {
    const after: Snapshot = { ...before, id: 'ffff', skipped: ['run/sock'], truncated: true };
    const git = { repo: true as const, dirty_count: 4, shortstat: '3 files changed' };
    const json = buildChangesJson(before, { added: [], modified: [], deleted: [] }, { after, git });
    expect(json).toEqual({
      source: 'checkpoint',
      checkpoint: '3f1c2a9b0d4e',
      count: 0,
      added: [],
      modified: [],
      deleted: [],
      truncated: false,
      snapshot_truncated: true,
      skipped: ['run/pipe', 'run/sock'],
      verification_wrote: [],
      git,
    });
  });
});
