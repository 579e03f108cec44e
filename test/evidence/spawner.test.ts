import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runGit } from '../../src/evidence/git.js';
import { spawnCommand, useSpawner } from '../../src/platform/spawner/spawner.js';
import { diffSnapshots } from '../../src/evidence/index.js';
import { cleanEnv, snap, tempDir, write } from './helpers.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
/** The parent pid of a command spawned the way `runGit` would spawn it. */
async function parentOf(): Promise<number> {
  const result = await spawnCommand({
    cmd: 'sh',
    args: ['-c', 'echo $PPID'],
    cwd: '/',
    env,
    timeoutMs: 10_000,
    input: '',
  });
  return Number(result.stdout.toString().trim());
}

let release: (() => void) | null = null;
afterEach(() => {
  release?.();
  release = null;
});

describe('the spawner helper', () => {
  it('starts commands from a helper process while in use, and from this process otherwise', async () => {
    expect(await parentOf()).toBe(process.pid);
    release = useSpawner();
    const helper = await parentOf();
    expect(helper).not.toBe(process.pid);
    // the helper is this process's child, and the same one for every call
    expect(readFileSync(`/proc/${helper}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]).toBe(String(process.pid));
    expect(await parentOf()).toBe(helper);
    release();
    release = null;
    expect(await parentOf()).toBe(process.pid);
  });

  it('gives git calls the same results: output bytes, exit codes, stdin and streamed stdin, timeouts', async () => {
    release = useSpawner();
    const dir = await tempDir();
    expect((await runGit(['init', '-q', dir], { cwd: dir, timeoutMs: 10_000 })).exitCode).toBe(0);
    const blob = await runGit(['hash-object', '-w', '--stdin'], {
      cwd: dir,
      timeoutMs: 10_000,
      input: Buffer.from([0, 1, 2, 255]),
    });
    const sha = blob.stdout.toString().trim();
    const back = await runGit(['cat-file', 'blob', sha], { cwd: dir, timeoutMs: 10_000 });
    expect([...back.stdout]).toEqual([0, 1, 2, 255]);

    async function* lines(): AsyncIterable<string> {
      for (let i = 0; i < 3; i++) yield `line ${i}\n`;
    }
    const streamed = await runGit(['hash-object', '--stdin'], { cwd: dir, timeoutMs: 10_000, input: lines() });
    const expected = execFileSync('git', ['hash-object', '--stdin'], {
      input: 'line 0\nline 1\nline 2\n',
      env: cleanEnv(),
    })
      .toString()
      .trim();
    expect(streamed.stdout.toString().trim()).toBe(expected);

    const failed = await runGit(['cat-file', '-e', '0'.repeat(40)], { cwd: dir, timeoutMs: 10_000 });
    expect(failed.exitCode).not.toBe(0);

    const slow = await spawnCommand({ cmd: 'sleep', args: ['5'], cwd: dir, env, timeoutMs: 100, input: '' });
    expect(slow.timedOut).toBe(true);
    const missing = await spawnCommand({
      cmd: 'no-such-program-gaffer',
      args: [],
      cwd: dir,
      env,
      timeoutMs: 1000,
      input: '',
    });
    expect(missing.spawnError).toMatch(/ENOENT/);
  });

  it('a failing input stream kills the command and is reported, the stream run to its end', async () => {
    release = useSpawner();
    let produced = 0;
    async function* broken(): AsyncIterable<string> {
      produced++;
      yield 'a\n';
      throw new Error('listing failed');
    }
    const result = await spawnCommand({ cmd: 'cat', args: [], cwd: '/', env, timeoutMs: 10_000, input: broken() });
    expect(result.inputError?.message).toBe('listing failed');
    expect(produced).toBe(1);
  });

  it('calls in flight when the helper dies are run again here', async () => {
    release = useSpawner();
    const helper = await parentOf();
    const call = spawnCommand({
      cmd: 'sh',
      args: ['-c', 'sleep 0.3; echo done'],
      cwd: '/',
      env,
      timeoutMs: 10_000,
      input: '',
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.kill(helper, 'SIGKILL');
    const result = await call;
    expect(result.exitCode).toBe(0);
    expect(result.stdout.toString()).toBe('done\n');
    // the next call starts a new helper
    const next = await parentOf();
    expect(next).not.toBe(helper);
    expect(next).not.toBe(process.pid);
  });

  it('checkpoints through the helper are the same checkpoints', async () => {
    const ws = await tempDir();
    const data = await tempDir('gaffer-data-');
    await write(ws, { 'a.txt': 'a\n', 'dir/b.txt': 'b\n' });
    release = useSpawner();
    const pre = await snap(ws, data, 'pre');
    await write(ws, { 'a.txt': 'changed\n', 'c.txt': 'new\n' });
    const post = await snap(ws, data, 'post');
    expect(await diffSnapshots(pre, post)).toEqual({ added: ['c.txt'], modified: ['a.txt'], deleted: [] });
  });
});
