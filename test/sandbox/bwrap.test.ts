import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sandboxStatus, wrapWithSandbox } from '../../src/platform/sandbox/bwrap.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { tempDir } from '../helpers/temp.js';

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

function run(argv: string[]): { status: number | null; stdout: string; stderr: string } {
  const [file, ...args] = argv;
  const r = spawnSync(file as string, args, { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the sandbox probe', () => {
  afterEach(() => {
    probeSandbox({ refresh: true });
  });

  it('is cached, and says why when bwrap is missing', () => {
    expect(probeSandbox()).toBe(probeSandbox());
    const missing = probeSandbox({ refresh: true, env: { PATH: '/nonexistent' } });
    expect(missing).toEqual({
      available: false,
      reason: 'bwrap is not on PATH',
      version: null,
      binary: null,
      flags: [],
      tmpOverlay: false,
      unixSocketFilter: false,
      unixSocketFilterReason: 'no sandbox',
    });
    expect(sandboxStatus()).toEqual({ available: false, reason: 'bwrap is not on PATH', version: null });
    expect(wrapWithSandbox({ shellCommand: 'true', workspace: tempDir() })).toBeNull();
  });
});

describe.skipIf(!probe.available)(`wrapWithSandbox${SKIP}`, () => {
  it('builds the argv: read-only root, private /tmp before the binds, pid namespace, no capabilities, its own network namespace, chdir to the workspace', () => {
    const ws = tempDir();
    const wrapped = wrapWithSandbox({ shellCommand: 'echo hi', workspace: ws });
    expect(wrapped?.sandboxed).toBe(true);
    const argv = wrapped?.argv ?? [];
    const text = argv.join(' ');
    // issue 32: behind the shell that opens the unix-socket filter on fd 9 and execs bwrap
    expect(argv.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(argv[4]).toBe(probe.binary);
    expect(text).toContain('--seccomp 9');
    for (const part of [
      '--ro-bind / /',
      '--dev /dev',
      '--proc /proc',
      '--unshare-pid',
      '--die-with-parent',
      '--cap-drop ALL',
      '--tmpfs /tmp',
      `--bind ${ws} ${ws}`,
      '--setenv TMPDIR /tmp',
      `--chdir ${ws}`,
    ]) {
      expect(text).toContain(part);
    }
    expect(text.indexOf('--tmpfs /tmp')).toBeLessThan(text.indexOf(`--bind ${ws}`));
    // issue 11: no route to the host's loopback (gaffer's API) unless a runner asks for more
    expect(argv).toContain('--unshare-net');
    expect(wrapped?.network).toBe('none');
    expect(argv).not.toContain('--new-session');
    expect(argv.slice(-4)).toEqual(['--', '/bin/sh', '-c', 'echo hi']);
  });

  it('runs an argv as given, without a network, binds extra writable dirs (created) and a TMPDIR in the data dir', () => {
    const ws = tempDir();
    const state = join(tempDir(), 'state', '.agent');
    const tmp = join(tempDir(), 'tmp');
    const wrapped = wrapWithSandbox({
      argv: [
        '/bin/sh',
        '-c',
        'echo s > "$1/state.txt"; echo t > "$TMPDIR/t.txt"; echo "$TMPDIR"; cat /proc/net/dev',
        'sh',
        state,
      ],
      workspace: ws,
      writable: [state],
      tmpDir: tmp,
      network: { mode: 'none' },
    });
    expect(wrapped?.argv).toContain('--unshare-net');
    const r = run(wrapped?.argv ?? []);
    expect(r.status).toBe(0);
    expect(readFileSync(join(state, 'state.txt'), 'utf8')).toBe('s\n');
    expect(readFileSync(join(tmp, 't.txt'), 'utf8')).toBe('t\n');
    expect(r.stdout.split('\n')[0]).toBe(tmp);
    // only loopback in a fresh network namespace
    const interfaces = r.stdout
      .split('\n')
      .slice(3)
      .map((l) => l.split(':')[0]?.trim())
      .filter(Boolean);
    expect(interfaces).toEqual(['lo']);
  });

  it('keeps the filesystem read-only outside the binds', () => {
    const ws = tempDir();
    const outside = join(process.cwd(), `.gaffer-sandbox-probe-${process.pid}`);
    const wrapped = wrapWithSandbox({ shellCommand: `echo x > ${JSON.stringify(outside)}`, workspace: ws });
    const r = run(wrapped?.argv ?? []);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Read-only file system/);
    expect(existsSync(outside)).toBe(false);
  });
});
