import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { BIN } from '../reliability/helpers.js';

const mode = (path: string) => statSync(path).mode & 0o777;

/** Every path under `dir` (files and directories), recursively, symlinks not followed. */
function pathsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    out.push(path);
    if (entry.isDirectory()) out.push(...pathsUnder(path));
  }
  return out;
}

const live: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of live.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** The CLI started the way a user's shell starts it: under umask 022 whatever the test runner's is. */
function gafferUnder022(
  args: string[],
  opts: { untilFile?: string; untilStderr?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string; fileMode: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', 'umask 022 && exec "$0" "$@"', BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GAFFER_URL: '' },
    });
    live.push(child);
    let stdout = '';
    let stderr = '';
    let fileMode: number | null = null;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const poll =
      opts.untilFile === undefined
        ? null
        : setInterval(() => {
            if (opts.untilFile === undefined || fileMode !== null || !existsSync(opts.untilFile)) return;
            // server.json may be written before the start-up lines are printed: stop only once both are there
            if (opts.untilStderr !== undefined && !stderr.includes(opts.untilStderr)) return;
            fileMode = mode(opts.untilFile);
            child.kill('SIGTERM');
          }, 50);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (poll !== null) clearInterval(poll);
      resolve({ code, stdout, stderr, fileMode });
    });
  });
}

describe('the data dir is private; the workspace keeps the user’s modes', () => {
  it('after a job, the data dir is 0700 and nothing in it is readable by group or others; a shell worker and the verification create files with the user’s umask', async () => {
    const data = join(tempDir('gaffer-files-'), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const run = await gafferUnder022([
      '--data-dir',
      data,
      '--json',
      'dispatch',
      '--workspace',
      ws,
      '--task',
      'write files',
      '--command',
      'echo hi > made.txt && mkdir newdir && umask > newdir/umask.txt',
      // the verification passes only under the user's umask
      '--verify',
      'test "$(umask)" = 0022',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const job = JSON.parse(run.stdout) as { status: string; result: { verification: { ok: boolean } } };
    expect(job.status).toBe('done');
    expect(job.result.verification.ok).toBe(true);
    // where bubblewrap works the worker ran inside it: the umask reaches through the sandbox
    if (probeSandbox().available) expect(run.stdout).toContain('"sandboxed": true');

    expect(mode(data)).toBe(0o700);
    expect(mode(join(data, 'gaffer.db'))).toBe(0o600);
    for (const side of ['gaffer.db-wal', 'gaffer.db-shm'])
      if (existsSync(join(data, side))) expect(mode(join(data, side))).toBe(0o600);
    const all = pathsUnder(data).filter((p) => !lstatSync(p).isSymbolicLink());
    const logs = all.filter((p) => p.startsWith(join(data, 'jobs')) && statSync(p).isFile());
    expect(logs.length).toBeGreaterThan(0); // the worker's log and instruction file
    for (const file of logs) expect([file, mode(file)]).toEqual([file, 0o600]);
    // shadow repositories (git's own files) and everything else: no group or other bit anywhere
    expect(all.filter((p) => p.includes(`${join(data, 'shadow')}`)).length).toBeGreaterThan(0);
    expect(all.filter((p) => (lstatSync(p).mode & 0o077) !== 0).map((p) => `${p} ${mode(p).toString(8)}`)).toEqual([]);

    // what the worker made in the workspace has the user's modes
    expect(mode(join(ws, 'made.txt'))).toBe(0o644);
    expect(mode(join(ws, 'newdir'))).toBe(0o755);
    expect(readFileSync(join(ws, 'newdir', 'umask.txt'), 'utf8').trim()).toBe('0022');
  });

  it('server.json is 0600, and an existing data dir with looser modes is tightened at start', async () => {
    const data = join(tempDir('gaffer-files-'), 'data');
    mkdirSync(data, { mode: 0o755 });
    chmodSync(data, 0o755);
    writeFileSync(join(data, 'gaffer.config.json'), '{}\n', { mode: 0o644 });
    chmodSync(join(data, 'gaffer.config.json'), 0o644);
    mkdirSync(join(data, 'jobs'), { mode: 0o755 });
    chmodSync(join(data, 'jobs'), 0o755);
    // not gaffer's: left as it is
    writeFileSync(join(data, 'notes.txt'), 'mine\n', { mode: 0o644 });
    chmodSync(join(data, 'notes.txt'), 0o644);

    const served = await gafferUnder022(['--data-dir', data, 'serve', '--port', '0'], {
      untilFile: join(data, 'server.json'),
      untilStderr: 'serving',
    });
    expect(served.stderr).toContain('serving');
    expect(served.fileMode).toBe(0o600);
    expect(mode(data)).toBe(0o700);
    expect(mode(join(data, 'gaffer.config.json'))).toBe(0o600);
    expect(mode(join(data, 'jobs'))).toBe(0o700);
    expect(mode(join(data, 'gaffer.db'))).toBe(0o600);
    expect(mode(join(data, 'notes.txt'))).toBe(0o644);
  });
});
