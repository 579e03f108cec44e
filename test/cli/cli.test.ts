import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[], input?: string) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], { encoding: 'utf8', input, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The pid of the process whose command line is exactly `cmdline` (NUL-separated args joined by spaces). */
function findProcess(cmdline: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ') === cmdline)
        return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return -1;
}

/** Alive and not a zombie (an orphan's zombie waits for whatever reaps in this container). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

describe('the gaffer CLI', () => {
  it('--version and -V print the package version and exit 0; gaffer demo runs the example to a proved end from any folder', () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const r = spawnSync(BIN, [flag], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(version);
    }
    // the demo copies the example into a temp dir of its own: run from an unrelated folder, its TMPDIR ours
    const where = tempDir();
    const demo = spawnSync(BIN, ['demo'], {
      cwd: where,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, TMPDIR: where },
    });
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stderr).toContain('status done, proof proved; exit 0');
  }, 150_000);

  it('dispatch runs a job in process: exit 0 on done, the exact JSON with --json', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace(CALC_FILES);
    const r = gaffer(data, [
      '--json',
      'dispatch',
      '--workspace',
      ws,
      '--task',
      'fix add',
      '--command',
      FIX_ADD,
      '--files',
      'src/math.js',
    ]);
    expect(r.stderr).toMatch(/job [0-9a-f]{12} accepted/);
    expect(r.code).toBe(0);
    const job = JSON.parse(r.stdout);
    expect(job).toMatchObject({
      status: 'done',
      result: { proof: { verdict: 'proved' }, changes: { modified: ['src/math.js'] }, claimed_only: [] },
    });

    const status = gaffer(data, ['--json', 'status', job.id]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual(job);
    const human = gaffer(data, ['status', job.id]);
    expect(human.stdout).toContain(`job ${job.id}  done`);
    expect(human.stdout).toContain('verdict: 1/1 workers done');

    const list = gaffer(data, ['--json', 'list']);
    expect(JSON.parse(list.stdout).jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
    const events = gaffer(data, ['--json', 'events', job.id]);
    expect(JSON.parse(events.stdout).events.at(-1)).toMatchObject({ name: 'job', event: 'status', message: 'done' });
    const wait = gaffer(data, ['--json', 'wait', job.id, '--for', 'phase:settled']);
    expect(wait.code).toBe(0);
    expect(JSON.parse(wait.stdout)).toMatchObject({ met: true, condition: 'phase:settled' });
    expect(gaffer(data, ['cancel', job.id]).code).toBe(1);
  });

  it('dispatch takes a request file or stdin; a refusal exits 2 and starts nothing', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const request = JSON.stringify({
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'x', command: 'echo b >> a.txt' }],
    });
    const fromStdin = gaffer(data, ['--json', 'dispatch', '-'], request);
    expect(fromStdin.code).toBe(0);
    expect(JSON.parse(fromStdin.stdout).result.changes.modified).toEqual(['a.txt']);

    const bad = gaffer(
      data,
      ['--json', 'dispatch', '-'],
      JSON.stringify({ workspace: ws, tasks: ['x'], timeout_s: 1 }),
    );
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stderr)).toEqual({
      error: { code: 'invalid_request', message: 'timeout_s: must be 10 or more, got 1', field: 'timeout_s' },
    });
    const unknown = gaffer(
      data,
      ['dispatch', '-'],
      JSON.stringify({ workspace: ws, tasks: ['x'], endpoint: 'http://x' }),
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown key "endpoint"');
    expect(JSON.parse(gaffer(data, ['--json', 'list']).stdout).jobs).toHaveLength(1);
    expect(gaffer(data, ['status', 'ffffffffffff']).code).toBe(2);
    expect(gaffer(data, ['wait', 'ffffffffffff']).code).toBe(2);
    expect(gaffer(data, ['bogus-command']).code).toBe(2);
  });

  it('a relative workspace in a request file or on stdin is taken from the current directory, as --workspace is', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    mkdirSync(join(ws, 'sub'));
    const run = (args: string[], input?: string) => {
      const r = spawnSync(BIN, ['--data-dir', data, '--json', ...args], {
        encoding: 'utf8',
        input,
        cwd: ws,
        timeout: 60_000,
        env: { ...process.env, GAFFER_URL: '' },
      });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const request = (workspace: string) =>
      JSON.stringify({ workspace, verify: 'none', tasks: [{ instruction: 'x', command: 'echo b >> a.txt' }] });

    const fromStdin = run(['dispatch', '-'], request('.'));
    expect([fromStdin.code, fromStdin.stderr]).toEqual([0, expect.stringContaining(`in ${ws})`)]);
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({
      workspace: ws,
      status: 'done',
      result: { changes: { modified: ['a.txt'] } },
    });
    // a file elsewhere: its relative workspace is still the caller's directory's, not the file's folder's
    const file = join(tempDir(), 'job.json');
    writeFileSync(file, request('sub/..'));
    expect(JSON.parse(run(['dispatch', file]).stdout)).toMatchObject({ workspace: ws, status: 'done' });
    expect(
      JSON.parse(run(['dispatch', '--workspace', '.', '--verify', 'none', '--task', 'x', '--command', 'true']).stdout),
    ).toMatchObject({ workspace: ws });
  });

  it('a CLI killed with SIGKILL mid-job leaves an interrupted job, no worker process, and a free workspace', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    // a marker in the worker's command line finds it from here (inside a sandbox its $$ is another pid namespace's)
    const marker = `${120 + Math.floor(Math.random() * 1e6) / 1e7}`;
    const child = spawn(
      BIN,
      [
        '--data-dir',
        data,
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'none',
        '--task',
        'slow',
        '--command',
        `echo b > b.txt; sleep ${marker}`,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const jobId = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no job id: ${stderr}`)), 30_000);
      child.stderr.on('data', () => {
        const m = /job ([0-9a-f]{12}) accepted/.exec(stderr);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
    });
    const running = gaffer(data, ['--json', 'wait', jobId, '--for', 'worker:*:running', '--timeout-s', '30']);
    expect(running.code).toBe(0);
    // give the shell a moment to write its pid
    await new Promise((r) => setTimeout(r, 500));
    const workerPid = findProcess(`sleep ${marker}`);
    expect(alive(workerPid)).toBe(true);

    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const status = gaffer(data, ['--json', 'status', jobId]);
    const job = JSON.parse(status.stdout);
    expect(job.status).toBe('interrupted');
    expect(job.verdict).toContain('interrupted by a restart of gaffer — re-dispatch the remaining work');
    expect(job.result.workers[0]).toMatchObject({ status: 'interrupted' });
    expect(alive(workerPid)).toBe(false);

    const next = gaffer(data, [
      '--json',
      'dispatch',
      '--workspace',
      ws,
      '--verify',
      'none',
      '--task',
      'quick',
      '--command',
      'echo c > c.txt',
    ]);
    expect(next.code).toBe(0);
    expect(JSON.parse(next.stdout).status).toBe('done');
  });

  it('cancel from another process stops a job this CLI runs', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const child = spawn(
      BIN,
      [
        '--data-dir',
        data,
        '--json',
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'none',
        '--task',
        'slow',
        '--command',
        'echo b > b.txt; sleep 120',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    for (let i = 0; i < 300 && !/job ([0-9a-f]{12}) accepted/.test(stderr); i++)
      await new Promise((r) => setTimeout(r, 100));
    const jobId = (/job ([0-9a-f]{12}) accepted/.exec(stderr) as RegExpExecArray)[1] as string;
    expect(gaffer(data, ['wait', jobId, '--for', 'worker:*:running', '--timeout-s', '30']).code).toBe(0);
    const cancel = gaffer(data, ['--json', 'cancel', jobId]);
    expect(cancel.code).toBe(0);
    expect(await exited).toBe(1);
    const job = JSON.parse(stdout);
    expect(job.status).toBe('cancelled');
    expect(job.result.changes.added).toEqual(['b.txt']);
  });
});
