import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBounded, readWorkspaceText } from '../../src/platform/files/bounded-read.js';
import { readCommittedHints } from '../../src/verification/workspace-hints.js';
import { detectTestCommand } from '../../src/verification/detect.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const mkfifo = (path: string) => execFileSync('mkfifo', [path]);
const git = (ws: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: ws, stdio: 'ignore' });

describe('readBounded (issue 32: a file a worker left is never a hang or a swell)', () => {
  it('reads a regular file, and says "missing" for none', () => {
    const ws = makeWorkspace({ 'a.txt': 'hello' });
    expect(readWorkspaceText(ws, 'a.txt')).toBe('hello');
    expect(readBounded(join(ws, 'nope'), { maxBytes: 10 })).toMatchObject({ ok: false, missing: true });
  });

  it('refuses a FIFO at once (no writer: an open would block), naming it', () => {
    const ws = makeWorkspace({});
    mkfifo(join(ws, 'package.json'));
    const started = Date.now();
    expect(readBounded(join(ws, 'package.json'), { maxBytes: 1 << 20, within: ws })).toEqual({
      ok: false,
      missing: false,
      why: 'a FIFO, not a regular file: not read',
    });
    expect(readBounded(join(ws, 'package.json'), { maxBytes: 1 << 20 })).toMatchObject({
      ok: false,
      why: 'a FIFO, not a regular file: not read',
    });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('refuses a link to /dev/zero and a link out of the workspace; follows a link that stays inside', () => {
    const ws = makeWorkspace({ 'real.json': '{}' });
    const outside = join(tempDir('gaffer-outside-'), 'secret');
    writeFileSync(outside, 'secret');
    symlinkSync('/dev/zero', join(ws, 'zero.json'));
    symlinkSync(outside, join(ws, 'out.json'));
    symlinkSync('real.json', join(ws, 'in.json'));
    expect(readBounded(join(ws, 'zero.json'), { maxBytes: 1 << 20, within: ws })).toMatchObject({
      ok: false,
      why: expect.stringContaining('a link out of'),
    });
    expect(readBounded(join(ws, 'zero.json'), { maxBytes: 1 << 20 })).toMatchObject({
      ok: false,
      why: 'a symbolic link: not followed',
    });
    expect(readBounded(join(ws, 'out.json'), { maxBytes: 1 << 20, within: ws })).toMatchObject({
      ok: false,
      why: expect.stringContaining(`(to ${outside})`),
    });
    expect(readWorkspaceText(ws, 'in.json')).toBe('{}');
    // a folder above the file that leads out is a link out too
    symlinkSync(join(outside, '..'), join(ws, '.gaffer'));
    expect(readBounded(join(ws, '.gaffer', 'secret'), { maxBytes: 1 << 20, within: ws })).toMatchObject({
      ok: false,
      why: expect.stringContaining('a link out of'),
    });
  });

  it('refuses a file over the cap without reading it', () => {
    const ws = makeWorkspace({ 'big.json': 'x'.repeat(2048) });
    expect(readBounded(join(ws, 'big.json'), { maxBytes: 1024 })).toMatchObject({
      ok: false,
      why: '2048 bytes, over the 1024-byte cap: not read',
    });
  });

  it('detection names a refused manifest and goes on without it', () => {
    const ws = makeWorkspace({ Makefile: 'test:\n\ttrue\n' });
    mkfifo(join(ws, 'package.json'));
    symlinkSync('/dev/zero', join(ws, 'pyproject.toml'));
    const refused: string[] = [];
    expect(detectTestCommand(ws, {}, refused)).toMatchObject({ command: 'make test' });
    expect(refused).toEqual([
      'package.json: a FIFO, not a regular file: not read',
      expect.stringMatching(/^pyproject\.toml: a link out of .* \(to \/dev\/zero\): not followed$/),
    ]);
  });
});

describe('readCommittedHints (issue 32: hints an earlier worker left steer nothing)', () => {
  const hints = (command: string) => JSON.stringify({ verify: { command } });

  it('goes by HEAD: a working copy that differs is named and ignored', async () => {
    const ws = makeWorkspace({ '.gaffer/workspace.json': hints('npm run check') }, { git: true });
    expect(await readCommittedHints(ws)).toEqual({
      hints: { verify: { command: 'npm run check' } },
      warnings: [],
      untrusted: null,
    });
    writeFileSync(join(ws, '.gaffer', 'workspace.json'), hints('echo all tests passed'));
    expect(await readCommittedHints(ws)).toMatchObject({
      hints: { verify: { command: 'npm run check' } },
      untrusted: ".gaffer/workspace.json changed since HEAD: ignored (HEAD's hints used)",
    });
  });

  it('an uncommitted hints file (a new repository, or none at all) is not used, and says so', async () => {
    const repo = makeWorkspace({ 'README.md': 'x' }, { git: true });
    mkdirSync(join(repo, '.gaffer'));
    writeFileSync(join(repo, '.gaffer', 'workspace.json'), hints('echo all tests passed'));
    const plain = makeWorkspace({ '.gaffer/workspace.json': hints('echo all tests passed') });
    const unborn = makeWorkspace({ '.gaffer/workspace.json': hints('echo all tests passed') });
    git(unborn, 'init', '-q');
    for (const ws of [repo, plain, unborn]) {
      expect(await readCommittedHints(ws)).toEqual({
        hints: {},
        warnings: [],
        untrusted: '.gaffer/workspace.json not committed: ignored (hints are read as committed at HEAD)',
      });
    }
  });

  it('a FIFO in place of the hints file is named, and HEAD still decides', async () => {
    const ws = makeWorkspace({ '.gaffer/workspace.json': hints('npm run check') }, { git: true });
    execFileSync('rm', [join(ws, '.gaffer', 'workspace.json')]);
    mkfifo(join(ws, '.gaffer', 'workspace.json'));
    expect(await readCommittedHints(ws)).toMatchObject({
      hints: { verify: { command: 'npm run check' } },
      untrusted: ".gaffer/workspace.json: a FIFO, not a regular file: not read (HEAD's hints used)",
    });
  });
});
