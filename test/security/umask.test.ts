import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileLocks } from '../../src/runners/builtin/file-locks.js';
import { writeFileTool } from '../../src/runners/builtin/file-tools.js';
import { guardScope } from '../../src/runners/builtin/guard.js';
import type { ToolContext } from '../../src/runners/builtin/tool-context.js';
import { realWorkspace } from '../../src/runners/builtin/workspace-paths.js';
import { writeScopeFor } from '../../src/runners/builtin/write-scope.js';
import { runProcess } from '../../src/platform/process/run-process.js';
import { restrictUmask, userUmask } from '../../src/platform/process/umask.js';
import { tempDir } from '../helpers/temp.js';

const mode = (path: string) => statSync(path).mode & 0o777;

// vitest runs each file in its own process (pool: forks): this umask is this file's alone
let before: number;
beforeAll(() => {
  before = process.umask(0o022);
  restrictUmask();
});
afterAll(() => {
  process.umask(before);
});

describe('gaffer is private, the user’s work is not', () => {
  it('after restrictUmask, what gaffer writes itself is 0600/0700', () => {
    expect(userUmask()).toBe(0o022);
    const dir = tempDir('gaffer-umask-');
    writeFileSync(join(dir, 'own.log'), 'x');
    mkdirSync(join(dir, 'own'));
    expect(mode(join(dir, 'own.log'))).toBe(0o600);
    expect(mode(join(dir, 'own'))).toBe(0o700);
  });

  it('a worker process starts with the user’s umask, and a file it creates has the user’s mode', async () => {
    const ws = tempDir('gaffer-umask-ws-');
    const result = await runProcess({
      shellCommand: 'umask; echo hi > made.txt; mkdir made',
      cwd: ws,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      timeoutMs: 20_000,
    });
    expect(result.exitCode).toBe(0);
    expect(result.tail.trim()).toBe('0022');
    expect(mode(join(ws, 'made.txt'))).toBe(0o644);
    expect(mode(join(ws, 'made'))).toBe(0o755);
    // argv commands too, and a missing program still fails (exit 127 from the wrapper's exec)
    const argv = await runProcess({ argv: ['/bin/sh', '-c', 'umask'], cwd: ws, env: {}, timeoutMs: 20_000 });
    expect(argv.tail.trim()).toBe('0022');
    const missing = await runProcess({ argv: ['/nonexistent/gaffer-program'], cwd: ws, env: {}, timeoutMs: 20_000 });
    expect(missing.exitCode === 127 || missing.cause !== null).toBe(true);
  });

  it('the builtin agent’s write_file creates files and folders with the user’s mode', () => {
    const ws = tempDir('gaffer-umask-tools-');
    const root = realWorkspace(ws);
    const ctx: ToolContext = {
      root,
      scope: writeScopeFor('worker', []),
      locks: new FileLocks(),
      holder: { id: 'h1', name: 'worker-1' },
      guard: guardScope(root, { HOME: '/nonexistent-home' }),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      signal: new AbortController().signal,
      commandTimeoutMs: 5_000,
      commandOutputBytes: 1024,
    };
    expect(writeFileTool(ctx, { path: 'src/deep/new.ts', content: 'export {};\n' })).toMatchObject({ status: 'ok' });
    expect(readFileSync(join(ws, 'src/deep/new.ts'), 'utf8')).toBe('export {};\n');
    expect(mode(join(ws, 'src/deep/new.ts'))).toBe(0o644);
    expect(mode(join(ws, 'src'))).toBe(0o755);
    expect(mode(join(ws, 'src/deep'))).toBe(0o755);
    // and gaffer's own umask is back afterwards
    writeFileSync(join(ws, 'after.log'), 'x');
    expect(mode(join(ws, 'after.log'))).toBe(0o600);
  });
});
