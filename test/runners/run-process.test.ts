import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProcessStartTime } from '../../src/platform/process/process-start-time.js';
import { runProcess } from '../../src/platform/process/run-process.js';
import { fixture, liveGroupMembers, makeTempDir } from './helpers.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

describe('runProcess', () => {
  it('kills the whole group at the timeout, children that ignore SIGTERM included', async () => {
    let spawned: { pgid: number; startedAt: number } | null = null;
    const lines: string[] = [];
    const result = await runProcess({
      argv: [fixture('ignore-term-and-fork.sh')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 700,
      graceMs: 300,
      onSpawn: (info) => {
        spawned = info;
      },
      onOutput: (l) => lines.push(...l),
    });
    expect(result.timedOut).toBe(true);
    expect(result.isCancelled).toBe(false);
    expect(result.signal).toBe('SIGKILL'); // SIGTERM was ignored: the grace ran out
    expect(result.isGroupGone).toBe(true);
    expect(spawned).not.toBeNull();
    expect(result.pgid).toBe(spawned!.pgid);
    expect(lines[0]).toBe(`ready ${result.pgid}`);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
    expect(result.durationMs).toBeGreaterThanOrEqual(1000);
    expect(result.durationMs).toBeLessThan(5000);
  });

  it('kills the whole group on cancel through the AbortSignal', async () => {
    const controller = new AbortController();
    const started = performance.now();
    const running = runProcess({
      argv: [fixture('ignore-term-and-fork.sh')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 60_000,
      graceMs: 200,
      signal: controller.signal,
      onOutput: (l) => {
        if (l.some((x) => x.startsWith('ready'))) controller.abort();
      },
    });
    const result = await running;
    expect(result.isCancelled).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('does not start anything when the signal is already aborted', async () => {
    const result = await runProcess({
      shellCommand: 'echo hi',
      cwd: makeTempDir(),
      env,
      timeoutMs: 5000,
      signal: AbortSignal.abort(),
    });
    expect(result).toMatchObject({ isCancelled: true, pgid: null, outputBytes: 0, cause: null });
  });

  it('gives the child /dev/null as stdin, so a read ends at once', async () => {
    const result = await runProcess({
      shellCommand: 'read x; echo "got:$x"',
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
    });
    expect(result.exitCode).toBe(0);
    expect(result.tail).toBe('got:\n');
    expect(result.durationMs).toBeLessThan(5000);
  });

  it('kills what the leader left behind in its group after a normal exit', async () => {
    const result = await runProcess({
      argv: [fixture('leave-orphans.sh')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
      graceMs: 500,
    });
    expect(result.exitCode).toBe(0);
    expect(result.timedOut).toBe(false);
    expect(result.strayKilled).toBe(true);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
  });

  it('reports the group id and the leader start time read from /proc', async () => {
    let startedFromProc: number | null = null;
    const result = await runProcess({
      shellCommand: 'sleep 0.2',
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
      onSpawn: ({ pgid }) => {
        startedFromProc = readProcessStartTime(pgid);
      },
    });
    expect(result.startedAt).not.toBeNull();
    expect(result.startedAt).toBe(startedFromProc);
    expect(Math.abs(result.startedAt! - Date.now() / 1000)).toBeLessThan(5);
  });

  it('splits lines across chunk boundaries and keeps the unfinished last line until exit', async () => {
    const lines: string[] = [];
    const result = await runProcess({
      argv: [fixture('split-output.js')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
      onOutput: (l) => lines.push(...l),
    });
    expect(result.exitCode).toBe(0);
    expect(lines).toEqual(['hello', 'world', 'café', 'last without newline']);
  });

  it('merges stdout and stderr into the tail and the log', async () => {
    const dir = makeTempDir();
    const logFile = join(dir, 'logs', 'w.log');
    const result = await runProcess({
      shellCommand: 'echo out; echo err >&2',
      cwd: dir,
      env,
      timeoutMs: 10_000,
      logFile,
    });
    expect(result.tail).toContain('out\n');
    expect(result.tail).toContain('err\n');
    expect(result.outputBytes).toBe(8);
    expect(readFileSync(logFile, 'utf8').split('\n').sort()).toEqual(['', 'err', 'out']);
    expect(result.log).toEqual({ totalBytes: 8, droppedBytes: 0, error: null });
  });

  it('keeps only the newest tailBytes of output in the tail', async () => {
    const result = await runProcess({
      shellCommand: 'seq 1 20000',
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
      tailBytes: 1024,
    });
    expect(result.outputBytes).toBeGreaterThan(100_000);
    expect(Buffer.byteLength(result.tail)).toBeLessThanOrEqual(1024);
    expect(result.tail.endsWith('19999\n20000\n')).toBe(true);
  });

  it('caps the log: the head, a dropped-bytes line, the newest tail', async () => {
    const dir = makeTempDir();
    const logFile = join(dir, 'w.log');
    const result = await runProcess({
      shellCommand: 'seq 1 100000',
      cwd: dir,
      env,
      timeoutMs: 10_000,
      logFile,
      logHeadBytes: 1000,
      logTailBytes: 5000,
    });
    const text = readFileSync(logFile, 'utf8');
    const total = result.outputBytes;
    const dropped = total - 6000;
    expect(result.log).toEqual({ totalBytes: total, droppedBytes: dropped, error: null });
    expect(text.startsWith('1\n2\n3\n')).toBe(true);
    expect(text).toContain(`[gaffer: ${dropped} bytes of output dropped here]\n`);
    expect(text.endsWith('99999\n100000\n')).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThan(6000 + 80);
    expect(existsSync(`${logFile}.ring`)).toBe(false);
  });

  it('returns a cause, not a throw, when the cwd does not exist', async () => {
    const result = await runProcess({ shellCommand: 'true', cwd: '/nonexistent/gaffer-dir', env, timeoutMs: 5000 });
    expect(result.cause).toBe('cwd does not exist: /nonexistent/gaffer-dir');
    expect(result.pgid).toBeNull();
    expect(result.exitCode).toBeNull();
  });

  it('returns a cause, not a throw, when the program does not exist', async () => {
    const result = await runProcess({
      argv: ['/nonexistent/gaffer-program'],
      cwd: makeTempDir(),
      env,
      timeoutMs: 5000,
    });
    expect(result.cause).toMatch(/cannot start \/nonexistent\/gaffer-program: .*ENOENT/);
    expect(result.pgid).toBeNull();
  });

  it('measures the duration by the monotonic clock', async () => {
    const result = await runProcess({ shellCommand: 'sleep 0.3', cwd: makeTempDir(), env, timeoutMs: 10_000 });
    expect(result.exitCode).toBe(0);
    expect(result.durationMs).toBeGreaterThanOrEqual(300);
    expect(result.durationMs).toBeLessThan(3000);
  });
});
