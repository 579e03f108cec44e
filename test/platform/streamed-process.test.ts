import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readProcessStartTime } from '../../src/platform/process/process-start-time.js';
import { runProcess } from '../../src/platform/process/run-process.js';
import { useSpawner } from '../../src/platform/spawner/spawner.js';
import { fixture, liveGroupMembers, makeTempDir, waitFor } from '../runners/helpers.js';

// Workers started through the spawner helper (an engine opened with `spawner: true`) behave as
// workers started from this process: test/runners/run-process.test.ts, through the other path.

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

/** The parent pid of a process, from /proc. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The helper's pid: the parent of a worker started through it. */
async function helperPid(): Promise<number> {
  const result = await runProcess({ shellCommand: 'echo $PPID', cwd: makeTempDir(), env, timeoutMs: 10_000 });
  const pid = Number(result.tail.trim());
  // the tests signal it: never 0 (this process's own group) from an output that went missing
  if (!Number.isInteger(pid) || pid <= 1)
    throw new Error(`no helper pid in the output: ${JSON.stringify(result.tail)}`);
  return pid;
}

let release: (() => void) | null = null;
afterEach(() => {
  release?.();
  release = null;
});

describe('runProcess through the spawner helper', () => {
  it('starts the worker from the helper, in a group of its own, and reports its start time from /proc', async () => {
    const direct = await helperPid();
    expect(direct).toBe(process.pid);
    release = useSpawner();
    let spawned: { pgid: number; startedAt: number; fromProc: number | null; parent: number } | null = null;
    const result = await runProcess({
      shellCommand: 'sleep 0.2; echo $$',
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
      onSpawn: ({ pgid, startedAt }) => {
        spawned = { pgid, startedAt, fromProc: readProcessStartTime(pgid), parent: parentOf(pgid) };
      },
    });
    expect(result.exitCode).toBe(0);
    expect(result.cause).toBeNull();
    expect(result.helperLost).toBeNull();
    expect(spawned).not.toBeNull();
    const s = spawned!;
    expect(s.parent).not.toBe(process.pid);
    expect(parentOf(s.parent)).toBe(process.pid); // the helper is this process's child
    expect(result.pgid).toBe(s.pgid);
    expect(result.tail).toBe(`${s.pgid}\n`); // the leader: its pid is its group's id
    expect(result.startedAt).toBe(s.fromProc);
    expect(Math.abs(s.startedAt - Date.now() / 1000)).toBeLessThan(5);
  });

  it('kills the whole group at the timeout, children that ignore SIGTERM included', async () => {
    release = useSpawner();
    const lines: string[] = [];
    const result = await runProcess({
      argv: [fixture('ignore-term-and-fork.sh')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 700,
      graceMs: 300,
      onOutput: (l) => lines.push(...l),
    });
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGKILL');
    expect(result.isGroupGone).toBe(true);
    expect(lines[0]).toBe(`ready ${result.pgid}`);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
  });

  it('kills the whole group on cancel', async () => {
    release = useSpawner();
    const controller = new AbortController();
    let pgid = 0;
    const result = await runProcess({
      argv: [fixture('ignore-term-and-fork.sh')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 60_000,
      graceMs: 200,
      signal: controller.signal,
      onSpawn: (info) => {
        pgid = info.pgid;
      },
      onOutput: (l) => {
        // once the leader and both children are up: three live members to kill
        if (l.some((x) => x.startsWith('ready')))
          void waitFor(() => liveGroupMembers(pgid).length >= 3).then(() => controller.abort());
      },
    });
    expect(result.isCancelled).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.isGroupGone).toBe(true);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
  });

  it('gives the same output: stdin /dev/null, lines split across chunks, stdout and stderr in the log, every byte counted', async () => {
    release = useSpawner();
    const dir = makeTempDir();
    const read = await runProcess({ shellCommand: 'read x; echo "got:$x"', cwd: dir, env, timeoutMs: 10_000 });
    expect(read.tail).toBe('got:\n');
    const lines: string[] = [];
    const split = await runProcess({
      argv: [fixture('split-output.js')],
      cwd: dir,
      env,
      timeoutMs: 10_000,
      onOutput: (l) => lines.push(...l),
    });
    expect(split.exitCode).toBe(0);
    expect(lines).toEqual(['hello', 'world', 'café', 'last without newline']);
    const logFile = join(dir, 'logs', 'w.log');
    const merged = await runProcess({
      shellCommand: 'echo out; echo err >&2; exit 3',
      cwd: dir,
      env,
      timeoutMs: 10_000,
      logFile,
    });
    expect(merged.exitCode).toBe(3);
    expect(readFileSync(logFile, 'utf8').split('\n').sort()).toEqual(['', 'err', 'out']);
    // more output than the helper sends before it pauses the pipes: nothing lost, in order
    const big = await runProcess({ shellCommand: 'seq 1 200000', cwd: dir, env, timeoutMs: 30_000, tailBytes: 64 });
    expect(big.outputBytes).toBe(1_288_895);
    expect(big.tail.endsWith('199999\n200000\n')).toBe(true);
    // a slow reader here: the helper pauses the pipes (the worker waits, as on a full pipe) and nothing is lost
    let calls = 0;
    const slow = await runProcess({
      shellCommand: 'seq 1 200000',
      cwd: dir,
      env,
      timeoutMs: 60_000,
      tailBytes: 64,
      onTail: () => {
        calls++;
        const until = performance.now() + 2;
        while (performance.now() < until);
      },
    });
    expect(slow.outputBytes).toBe(1_288_895);
    expect(slow.tail.endsWith('199999\n200000\n')).toBe(true);
    expect(calls).toBeGreaterThan(0);
  });

  it('a worker that prints a lot: its pipes move from the helper to here mid-stream, every byte once and in order', async () => {
    release = useSpawner();
    const dir = makeTempDir();
    const logFile = join(dir, 'logs', 'big.log');
    // stdout and stderr both past the helper's copy limit (1 MiB), interleaved, with a slow reader here
    const script = 'seq 1 300000; seq 1 100000 >&2; seq 300001 400000';
    const result = await runProcess({
      shellCommand: script,
      cwd: dir,
      env,
      timeoutMs: 60_000,
      logFile,
      logHeadBytes: 10_000_000,
      onTail: () => {
        const until = performance.now() + 0.2;
        while (performance.now() < until);
      },
    });
    expect(result.exitCode).toBe(0);
    const expected = (from: number, to: number): string[] =>
      Array.from({ length: to - from + 1 }, (_, i) => String(from + i));
    const lines = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const out = lines.filter((_, i) => i < 300_000 || i >= 400_000);
    expect(lines.length).toBe(500_000);
    expect(out).toEqual([...expected(1, 300_000), ...expected(300_001, 400_000)]);
    expect(lines.slice(300_000, 400_000)).toEqual(expected(1, 100_000));
  });

  it("a helper that dies after it handed a worker's pipes over: they are read here to their close, the last words included", async () => {
    release = useSpawner();
    const helper = await helperPid();
    let pgid = 0;
    let killed = false;
    const lines: string[] = [];
    const script =
      "trap 'echo last words; exit 0' TERM; head -c 2000000 /dev/zero | tr '\\0' x; echo; echo printed; sleep 30 & wait";
    const result = await runProcess({
      shellCommand: script,
      cwd: makeTempDir(),
      env,
      timeoutMs: 60_000,
      graceMs: 2000,
      onSpawn: (info) => {
        pgid = info.pgid;
      },
      onOutput: (l) => {
        lines.push(...l.filter((x) => !x.startsWith('xxx')));
        if (!killed && l.includes('printed')) {
          killed = true;
          process.kill(helper, 'SIGKILL');
        }
      },
    });
    expect(lines).toEqual(['printed', 'last words']);
    expect(result.cause).toMatch(/spawner helper process died while the worker ran/);
    expect(result.isGroupGone).toBe(true);
    expect(liveGroupMembers(pgid)).toEqual([]);
  });

  it('returns a cause when the program does not exist or the cwd is missing', async () => {
    release = useSpawner();
    const missing = await runProcess({
      argv: ['/nonexistent/gaffer-program'],
      cwd: makeTempDir(),
      env,
      timeoutMs: 5000,
    });
    expect(missing.cause).toMatch(/cannot start \/nonexistent\/gaffer-program: .*ENOENT/);
    expect(missing.pgid).toBeNull();
    const noCwd = await runProcess({ shellCommand: 'true', cwd: '/nonexistent/gaffer-dir', env, timeoutMs: 5000 });
    expect(noCwd.cause).toBe('cwd does not exist: /nonexistent/gaffer-dir');
  });

  it('a release while a worker runs keeps the helper until the worker ended, followed to its end as before', async () => {
    const releaseNow = useSpawner();
    const helper = await helperPid();
    const running = runProcess({
      shellCommand: 'sleep 0.3; echo finished',
      cwd: makeTempDir(),
      env,
      timeoutMs: 10_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    releaseNow(); // the engine closes: the worker is still the helper's
    const result = await running;
    expect(result.exitCode).toBe(0);
    expect(result.tail).toBe('finished\n');
    expect(result.helperLost).toBeNull();
    // then the helper goes (it may take a moment to exit)
    await waitFor(() => {
      try {
        return readFileSync(`/proc/${helper}/stat`, 'utf8').split(') ')[1]?.[0] === 'Z';
      } catch {
        return true;
      }
    });
  });

  it('a helper that dies while the worker runs: the worker is stopped, its whole group, and the result says why', async () => {
    release = useSpawner();
    const helper = await helperPid();
    let pgid = 0;
    const result = await runProcess({
      argv: [fixture('ignore-term-and-fork.sh')],
      cwd: makeTempDir(),
      env,
      timeoutMs: 60_000,
      graceMs: 200,
      onSpawn: (info) => {
        pgid = info.pgid;
      },
      onOutput: (l) => {
        if (l.some((x) => x.startsWith('ready')))
          void waitFor(() => liveGroupMembers(pgid).length >= 3).then(() => process.kill(helper, 'SIGKILL'));
      },
    });
    expect(result.cause).toMatch(/spawner helper process died while the worker ran/);
    expect(result.helperLost).toBe(result.cause);
    expect(result.exitCode).toBeNull();
    expect(result.isGroupGone).toBe(true);
    expect(liveGroupMembers(pgid)).toEqual([]);
    // the next worker gets a new helper
    const next = await helperPid();
    expect(next).not.toBe(helper);
    expect(next).not.toBe(process.pid);
  });

  it('a helper that dies before the worker started: it is started here instead, and the result says so', async () => {
    release = useSpawner();
    const helper = await helperPid();
    process.kill(helper, 'SIGSTOP'); // it cannot read the request…
    const running = runProcess({ shellCommand: 'echo $PPID', cwd: makeTempDir(), env, timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.kill(helper, 'SIGKILL'); // …and dies with it unread
    const result = await running;
    expect(result.exitCode).toBe(0);
    expect(result.cause).toBeNull();
    expect(result.tail).toBe(`${process.pid}\n`);
    expect(result.helperLost).toMatch(/died before the worker started: gaffer started it itself/);
  });
});
