import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCommandTool } from '../../../src/runners/builtin/command-tool.js';
import { FileLocks } from '../../../src/runners/builtin/file-locks.js';
import {
  editFileTool,
  grepTool,
  listFilesTool,
  readFileTool,
  writeFileTool,
} from '../../../src/runners/builtin/file-tools.js';
import { guardScope } from '../../../src/runners/builtin/guard.js';
import type { ToolContext } from '../../../src/runners/builtin/tool-context.js';
import { realWorkspace } from '../../../src/runners/builtin/workspace-paths.js';
import { writeScopeFor } from '../../../src/runners/builtin/write-scope.js';
import { tempDir } from './helpers.js';

let ws: ReturnType<typeof tempDir>;
let outside: ReturnType<typeof tempDir>;
let ctx: ToolContext;

beforeEach(() => {
  ws = tempDir('gaffer-tools-ws-');
  outside = tempDir('gaffer-tools-out-');
  writeFileSync(join(outside.dir, 'secret.txt'), 'top secret\n');
  mkdirSync(join(ws.dir, 'src'));
  writeFileSync(join(ws.dir, 'src', 'app.ts'), 'const a = 1;\nconst b = 2;\nconst a2 = 1;\n');
  symlinkSync(outside.dir, join(ws.dir, 'escape')); // a directory link out
  symlinkSync(join(outside.dir, 'secret.txt'), join(ws.dir, 'secret-link.txt')); // a file link out
  symlinkSync(join(outside.dir, 'planted.txt'), join(ws.dir, 'dangling.txt')); // a dangling link out
  symlinkSync(join(ws.dir, 'src'), join(ws.dir, 'src-link')); // a link that stays inside
  const root = realWorkspace(ws.dir);
  ctx = {
    root,
    scope: writeScopeFor('worker', []),
    locks: new FileLocks(),
    holder: { id: 'h1', name: 'worker-1' },
    guard: guardScope(root, { HOME: outside.dir }),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: outside.dir, VISIBLE: 'yes' },
    signal: new AbortController().signal,
    commandTimeoutMs: 5_000,
    commandOutputBytes: 1024,
  };
});
afterEach(() => {
  ws.cleanup();
  outside.cleanup();
});

describe('path confinement (symlinks included)', () => {
  it.each(['../secret.txt', '/etc/passwd', 'src/../../x', 'escape/secret.txt', 'secret-link.txt'])(
    'read_file refuses %s',
    (path) => {
      const out = readFileTool(ctx, { path });
      expect(out.status).toBe('refused');
      expect(out.text).toContain('outside the workspace');
      expect(out.text).not.toContain('top secret');
    },
  );

  it.each(['../planted.txt', 'escape/planted.txt', 'dangling.txt', 'escape/new/dir/file.txt'])(
    'write_file refuses %s and nothing appears outside',
    (path) => {
      const out = writeFileTool(ctx, { path, content: 'pwned' });
      expect(out).toMatchObject({ status: 'refused', why: expect.stringContaining('outside the workspace') });
      expect(existsSync(join(outside.dir, 'planted.txt'))).toBe(false);
      expect(existsSync(join(outside.dir, 'new'))).toBe(false);
    },
  );

  it('edit_file through a link out is refused and the target is untouched', () => {
    const out = editFileTool(ctx, { path: 'secret-link.txt', old_text: 'top', new_text: 'no' });
    expect(out.status).toBe('refused');
    expect(readFileSync(join(outside.dir, 'secret.txt'), 'utf8')).toBe('top secret\n');
  });

  it('paths inside (absolute, or through an inside link) work and claim the real relative path', () => {
    expect(readFileTool(ctx, { path: join(ws.dir, 'src', 'app.ts') })).toMatchObject({
      status: 'ok',
      text: expect.stringContaining('const b'),
    });
    expect(writeFileTool(ctx, { path: 'src-link/new.ts', content: 'x' })).toMatchObject({
      status: 'ok',
      wrote: 'src/new.ts',
    });
    expect(readFileSync(join(ws.dir, 'src', 'new.ts'), 'utf8')).toBe('x');
  });

  it('list_files and grep do not follow links out', () => {
    const list = listFilesTool(ctx, { recursive: true });
    expect(list.text).toContain('src/app.ts');
    expect(list.text).not.toContain('secret');
    expect(grepTool(ctx, { pattern: 'secret' }).text).toBe('no matches');
    expect(grepTool(ctx, { pattern: 'x', path: 'escape' }).status).toBe('refused');
  });
});

describe('edit_file is exact and unique', () => {
  it('replaces one unique occurrence', () => {
    expect(editFileTool(ctx, { path: 'src/app.ts', old_text: 'const b = 2;', new_text: 'const b = 3;' })).toMatchObject(
      { status: 'ok', wrote: 'src/app.ts' },
    );
    expect(readFileSync(join(ws.dir, 'src/app.ts'), 'utf8')).toBe('const a = 1;\nconst b = 3;\nconst a2 = 1;\n');
  });

  it('refuses text that is missing or not unique, changing nothing', () => {
    expect(editFileTool(ctx, { path: 'src/app.ts', old_text: 'const c', new_text: 'x' })).toMatchObject({
      status: 'failed',
      text: expect.stringContaining('not found'),
    });
    expect(editFileTool(ctx, { path: 'src/app.ts', old_text: ' = 1;', new_text: ' = 9;' })).toMatchObject({
      status: 'failed',
      text: expect.stringContaining('appears 2 times'),
    });
    expect(readFileSync(join(ws.dir, 'src/app.ts'), 'utf8')).toBe('const a = 1;\nconst b = 2;\nconst a2 = 1;\n');
  });
});

describe('run_command', () => {
  it('runs in the workspace with the given env (no model key) and reports the exit code', async () => {
    const out = await runCommandTool(ctx, { command: 'pwd; echo "v=$VISIBLE k=${GAFFER_MODEL_KEY:-none}"; exit 3' });
    expect(out.status).toBe('failed');
    expect(out.text).toContain('exit code 3');
    expect(out.text).toContain(realWorkspace(ws.dir));
    expect(out.text).toContain('v=yes k=none');
  });

  it('keeps only the newest output bytes and says how much was cut', async () => {
    const out = await runCommandTool(ctx, { command: 'seq 1 5000' });
    expect(out.status).toBe('ok');
    expect(out.text).toContain('5000');
    expect(out.text).toMatch(/first \d+ bytes of output not shown/);
    expect(Buffer.byteLength(out.text)).toBeLessThan(1300);
  });

  it('kills a command past its time', async () => {
    const began = Date.now();
    const out = await runCommandTool({ ...ctx, commandTimeoutMs: 300 }, { command: 'sleep 30' });
    expect(out).toMatchObject({ status: 'failed', text: expect.stringContaining('ran longer than 0.3 s') });
    expect(Date.now() - began).toBeLessThan(5_000);
  });

  it('refuses a destructive command without running it', async () => {
    const out = await runCommandTool(ctx, { command: `rm -rf ${outside.dir}` });
    expect(out).toMatchObject({ status: 'refused', why: expect.stringContaining('deletes outside the workspace') });
    expect(existsSync(join(outside.dir, 'secret.txt'))).toBe(true);
  });
});
