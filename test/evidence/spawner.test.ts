import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runGit } from '../../src/evidence/git.js';
import { spawnCommand, startStreamed, useSpawner, type SpawnResult } from '../../src/platform/spawner/spawner.js';
import { diffSnapshots } from '../../src/evidence/index.js';
import { cleanEnv, snap, tempDir, write } from './helpers.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
/** A shell script spawned the way `runGit` would spawn a call. */
function sh(script: string, timeoutMs = 10_000): Promise<SpawnResult> {
  return spawnCommand({ cmd: 'sh', args: ['-c', script], cwd: '/', env, timeoutMs, input: '' });
}

/** The parent pid of a command spawned the way `runGit` would spawn it. */
async function parentOf(): Promise<number> {
  return Number((await sh('echo $PPID')).stdout.toString().trim());
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

  it('gives each call exactly its own environment, though only what changed since the last is sent', async () => {
    release = useSpawner();
    const envOf = async (vars: Record<string, string>) =>
      (
        await spawnCommand({ cmd: 'env', args: [], cwd: '/', env: { ...env, ...vars }, timeoutMs: 10_000, input: '' })
      ).stdout
        .toString()
        .split('\n')
        .filter((line) => line.startsWith('GAFFER_T_'))
        .sort();
    expect(await envOf({ GAFFER_T_A: '1', GAFFER_T_B: '2' })).toEqual(['GAFFER_T_A=1', 'GAFFER_T_B=2']);
    // a value changed, one gone, one new: the helper must not keep the last call's
    expect(await envOf({ GAFFER_T_A: 'x y', GAFFER_T_C: '' })).toEqual(['GAFFER_T_A=x y', 'GAFFER_T_C=']);
    expect(await envOf({})).toEqual([]);
    // calls in flight at once, each with its own
    const many = await Promise.all(
      Array.from({ length: 6 }, (_, i) => envOf({ [`GAFFER_T_${i % 2 ? 'O' : 'E'}`]: `${i}` })),
    );
    expect(many).toEqual(Array.from({ length: 6 }, (_, i) => [`GAFFER_T_${i % 2 ? 'O' : 'E'}=${i}`]));
    // a worker, started as a stream, after them, and a call after it
    const streamed = await new Promise<string[]>((resolve, reject) => {
      let out = '';
      const stream = startStreamed(
        { file: 'env', args: [], cwd: '/', env: { ...env, GAFFER_T_W: 'w' } },
        {
          onSpawn: () => undefined,
          onFail: reject,
          onData: (_fd, chunk) => (out += chunk.toString()),
          onExit: () => undefined,
          onClose: () => resolve(out.split('\n').filter((line) => line.startsWith('GAFFER_T_'))),
          onLost: () => reject(new Error('helper lost')),
        },
      );
      if (stream === null) reject(new Error('no helper'));
    });
    expect(streamed).toEqual(['GAFFER_T_W=w']);
    expect(await envOf({ GAFFER_T_B: '2' })).toEqual(['GAFFER_T_B=2']);
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

  it('a large output comes whole and in order through its handed-over pipe — several at once, a slow one, a killed one, one whose helper dies — and the helper does not hold it', async () => {
    release = useSpawner();
    const helper = await parentOf();
    const hwm = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${helper}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
    const before = hwm();
    // `seq` prints numbered lines: a byte lost, doubled or out of order changes the text
    const big = (n: number, extra = '') => sh(`seq 1 ${n}${extra}`, 20_000);
    const expected = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\n`).join('');
    const [a, b, c] = await Promise.all([big(3_000_000), big(400_000), big(200_000, '; sleep 0.3; seq 1 5')]);
    expect(a.exitCode).toBe(0);
    expect(a.stdout.length).toBe(expected(3_000_000).length);
    expect(a.stdout.toString() === expected(3_000_000)).toBe(true);
    expect(b.stdout.toString() === expected(400_000)).toBe(true);
    expect(c.stdout.toString() === expected(200_000) + expected(5)).toBe(true);
    // ~21 MB went through; the helper held none of it (it would at least double it when copied into one message)
    expect(hwm() - before).toBeLessThan(12);
    // stderr and the exit code still come from the helper
    const failed = await sh('seq 1 300000; echo oops >&2; exit 3', 20_000);
    expect(failed.exitCode).toBe(3);
    expect(failed.stderr).toBe('oops\n');
    expect(failed.stdout.toString() === expected(300_000)).toBe(true);
    // a call killed at its timeout after its pipe went over ends, timed out
    const slow = await sh('seq 1 300000; exec sleep 30', 1_000);
    expect(slow.timedOut).toBe(true);
    // the helper killed after the pipe went over: the call runs again here, its output once
    const again = big(300_000, '; sleep 0.5');
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(helper, 'SIGKILL');
    const result = await again;
    expect(result.exitCode).toBe(0);
    expect(result.stdout.toString() === expected(300_000)).toBe(true);
  });

  it('calls in flight when the helper dies are run again here', async () => {
    release = useSpawner();
    const helper = await parentOf();
    const call = sh('sleep 0.3; echo done');
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
