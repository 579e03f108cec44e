import Database from 'better-sqlite3';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { BIN, call, eventually, processesWith, startServe } from './helpers.js';

// Every wait is on a real condition with a bound generous for a loaded 2-core machine: a wait that
// holds returns the moment it does; the bound only decides how long a real failure takes to say so.
const UP_MS = 60_000;
const GONE_MS = 30_000;
/** spec 07: a live server notices a dead job's holder "within seconds" (it looks every second). */
const NOTICED_MS = 10_000;

/** A unique `sleep` duration: the marker that finds the process from the host, sandboxed or not. */
const marker = () => `70.${String(Math.floor(Math.random() * 1e9)).padStart(9, '0')}`;

const env = (sandbox: 'off' | 'auto'): NodeJS.ProcessEnv => ({
  ...process.env,
  GAFFER_URL: '',
  GAFFER_SANDBOX: sandbox,
});

/** Live processes that are `sleep <mark>` itself or carry it in their command line (shells, bwrap). */
function survivors(mark: string): number[] {
  return processesWith(`sleep ${mark}`).concat(processesWith(`sleep\0${mark}\0`));
}

const started: ChildProcess[] = [];
const marks: string[] = [];
afterEach(async () => {
  for (const c of started.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
    }
  }
  // a failed test must not leave its sleeps behind
  for (const pid of marks.splice(0).flatMap(survivors)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
});

/** `gaffer dispatch` running its job in this child process (no server); resolves with the job id. */
async function dispatchInProcess(
  data: string,
  args: string[],
  sandbox: 'off' | 'auto',
): Promise<{ child: ChildProcess; jobId: string; exited: Promise<number | null> }> {
  const child = spawn(BIN, ['--data-dir', data, 'dispatch', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: env(sandbox),
  });
  started.push(child);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let stderr = '';
  child.stdout?.resume();
  const jobId = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no job id: ${stderr}`)), UP_MS);
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /job ([0-9a-f]{12}) accepted/.exec(stderr);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  return { child, jobId, exited };
}

/** Reads the store the way another process does (read-only, WAL). */
function readStore<T>(data: string, read: (db: Database.Database) => T): T {
  const db = new Database(join(data, 'gaffer.db'), { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const jobRow = (data: string, id: string) =>
  readStore(
    data,
    (db) =>
      db.prepare('SELECT status, phase FROM jobs WHERE id = ?').get(id) as { status: string; phase: string | null },
  );
const machineOf = (data: string, id: string) =>
  readStore(
    data,
    (db) =>
      JSON.parse(
        (db.prepare('SELECT machine_json FROM attempts WHERE job_id = ?').get(id) as { machine_json: string })
          .machine_json,
      ) as Record<string, unknown>,
  );
const countRows = (data: string, table: 'job_processes' | 'workspace_locks') =>
  readStore(data, (db) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);

describe('recovery: everything gaffer started for a dead job is stopped, by one path', () => {
  // unsandboxed, the verification outlives a killed gaffer unless recovery stops it; sandboxed
  // (bwrap --die-with-parent), a kill while the sandbox starts would leave it running just the same
  for (const sandbox of ['off', 'auto'] as const) {
    it(`kill -9 of gaffer serve while the verification runs (sandbox ${sandbox}): after a restart no process of it survives and the job reads interrupted`, async () => {
      const data = join(tempDir(), 'data');
      const ws = makeWorkspace({ 'a.txt': 'a\n' });
      const mark = marker();
      marks.push(mark);
      const first = await startServe(data, { env: env(sandbox) });
      const posted = await call(first.url, 'POST', '/api/jobs', {
        workspace: ws,
        verify: `sleep ${mark}`,
        tasks: [{ name: 'edit', instruction: 'append to a', command: 'echo more >> a.txt' }],
      });
      expect(posted.status).toBe(202);
      const id = posted.json.id as string;
      // kill the moment the verification's group is recorded (sandboxed, bwrap may not have armed
      // --die-with-parent yet); unsandboxed, once its sleep runs
      await eventually(
        () => countRows(data, 'job_processes') > 0 && (sandbox === 'auto' || survivors(mark).length > 0),
        UP_MS,
        'the verification to start',
      );
      expect(readStore(data, (db) => db.prepare('SELECT what FROM job_processes WHERE job_id = ?').all(id))).toEqual([
        { what: 'verification-0' },
      ]);
      first.child.kill('SIGKILL');
      await first.exited;
      if (sandbox === 'off') expect(survivors(mark).length).toBeGreaterThan(0); // orphaned: only recovery can stop it
      // where the machine had the attempt is on its row: its process ended, its work being verified
      expect(machineOf(data, id)).toMatchObject({
        task: 'edit',
        state: 'verifying',
        facts: { exit: { status: 'done' } },
        owed: ['run_verification'],
      });

      const second = await startServe(data, { env: env(sandbox) });
      const job = (await call(second.url, 'GET', `/api/jobs/${id}`)).json;
      expect(job.status).toBe('interrupted');
      // recovery read that state and moved it through the machine: interrupted, the worker's own end kept
      expect(machineOf(data, id)).toMatchObject({ state: 'interrupted', owed: [] });
      // the verification it owed was dropped; what the interrupt owed, recovery carried out (it stopped the processes, released the workspace)
      expect((machineOf(data, id).carried as { effect: string; dropped?: true }[]).slice(-3)).toEqual([
        { effect: 'run_verification', at: 5, dropped: true },
        { effect: 'stop_processes', at: 6 },
        { effect: 'release_placement', at: 6 },
      ]);
      expect(readStore(data, (db) => db.prepare('SELECT status FROM attempts WHERE job_id = ?').get(id))).toEqual({
        status: 'done',
      });
      await eventually(() => survivors(mark).length === 0, GONE_MS, `no process of "sleep ${mark}" to survive`);
      expect(countRows(data, 'job_processes')).toBe(0);
      expect(countRows(data, 'workspace_locks')).toBe(0);
    }, 180_000);
  }

  it('a job that finds the workspace held by a dead process recovers it first: its worker is gone before the new worker starts', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const mark = marker();
    marks.push(mark);
    // unsandboxed: the first worker outlives its killed CLI (inside bwrap, --die-with-parent would end it)
    const holder = await dispatchInProcess(
      data,
      ['--workspace', ws, '--verify', 'none', '--task', 'hold', '--command', `echo held; sleep ${mark}`],
      'off',
    );
    await eventually(() => survivors(mark).length > 0, UP_MS, 'the first worker');

    // the second job's worker counts, from inside, the first worker's processes still alive when it starts
    const probe = `n=0; for f in /proc/[0-9]*/cmdline; do if tr '\\000' ' ' < "$f" 2>/dev/null | grep -q "^sleep ${mark.replace('.', '\\.')} *$"; then n=$((n+1)); fi; done; echo "$n" > survivors.txt`;
    const next = await dispatchInProcess(
      data,
      ['--workspace', ws, '--verify', 'none', '--task', 'next', '--command', probe],
      'off',
    );
    await eventually(
      () => (jobRow(data, next.jobId).phase ?? '').includes(`waiting for job ${holder.jobId}`),
      UP_MS,
      'the second job to wait for the lock',
    );

    // its worker outlives it (unsandboxed): only the recovery the second job makes can stop it
    holder.child.kill('SIGKILL');
    await holder.exited;
    expect(await next.exited).toBe(0);

    expect(readFileSync(join(ws, 'survivors.txt'), 'utf8').trim()).toBe('0');
    expect(jobRow(data, holder.jobId).status).toBe('interrupted');
    expect(jobRow(data, next.jobId).status).toBe('done');
    const attempts = readStore(data, (db) =>
      db.prepare('SELECT status, finished FROM attempts WHERE job_id = ?').all(holder.jobId),
    );
    expect(attempts).toEqual([{ status: 'interrupted', finished: expect.any(Number) }]);
    expect(survivors(mark)).toEqual([]);
  }, 180_000);

  it('kill -9 of gaffer mid-attempt in a worktree: after a restart the attempt is interrupted, the worktree reported, a new attempt follows, and prune cleans it', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    for (const args of [
      ['init', '-q'],
      ['add', '.'],
      ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init'],
    ])
      execFileSync('git', args, { cwd: ws });
    const mark = marker();
    marks.push(mark);
    const once = join(tempDir(), 'slept');
    // the first attempt sleeps (and is killed); a later one finds the flag and does the work
    const command = `if [ ! -f ${once} ]; then touch ${once}; sleep ${mark}; fi; echo done > b.txt`;
    const first = await dispatchInProcess(
      data,
      [
        '--workspace',
        ws,
        '--isolation',
        'worktree',
        '--verify',
        'none',
        '--name',
        'write-b',
        '--task',
        'write b',
        '--command',
        command,
      ],
      'off',
    );
    // (its own command line names the sleep: the flag file says the worker runs)
    await eventually(() => existsSync(once), UP_MS, 'the worker in its worktree');
    first.child.kill('SIGKILL');
    await first.exited;

    // the restart recovers: the attempt closed `interrupted`, the job says where its worktree is
    // unsandboxed as the first: the flag file lies in the host's /tmp
    const engine = await Engine.open({
      dataDir: data,
      worktrees: { keepDays: 0 },
      runners: createRunners({ sandbox: createSandbox('off') }),
    });
    try {
      await eventually(() => survivors(mark).length === 0, GONE_MS, 'the killed attempt to be stopped');
      const job = engine.get(first.jobId, { full: true });
      expect(job.status).toBe('interrupted');
      expect(job.result?.workers.map((w) => [w.name, w.status])).toEqual([['write-b', 'interrupted']]);
      const row = job.result?.worktrees?.tasks[0];
      expect(row).toMatchObject({ task: 'write-b', state: 'kept', branch: `gaffer/${first.jobId}/write-b` });
      expect(existsSync(row?.path ?? '')).toBe(true);
      expect(job.verdict).toContain('worktree kept: write-b');
      expect((await engine.worktrees()).map((e) => [e.job, e.task, e.state])).toEqual([
        [first.jobId, 'write-b', 'kept'],
      ]);

      // a new attempt follows (the re-dispatch of what did not end done), in a worktree of its own
      const { job: again } = engine.redispatch(first.jobId);
      await engine.settled(again.id);
      const next = engine.get(again.id, { full: true });
      expect(next.status).toBe('done');
      expect(next.result?.worktrees?.tasks[0]).toMatchObject({ task: 'write-b', state: 'removed', files: ['b.txt'] });

      // prune (keep_days 0: everything is expired) removes the interrupted worktree; the unmerged branch stays unless asked
      const pruned = await engine.pruneWorktrees();
      expect(pruned.removed_worktrees).toEqual([row?.path]);
      expect(existsSync(row?.path ?? '')).toBe(false);
      expect(pruned.kept_unmerged).toEqual([`gaffer/${again.id}/write-b`]);
      expect(pruned.deleted_branches).toEqual([`gaffer/${first.jobId}/write-b`]);
      const unmerged = await engine.pruneWorktrees({ unmerged: true });
      expect(unmerged.deleted_branches).toEqual([`gaffer/${again.id}/write-b`]);
      expect(execFileSync('git', ['branch', '--list', 'gaffer/*'], { cwd: ws, encoding: 'utf8' })).toBe('');
    } finally {
      await engine.close();
    }
  }, 180_000);

  it('the verification and a command criterion are recorded while they run and forgotten once they end', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' });
      const { job } = engine.submit({
        workspace: ws,
        verify: 'sleep 0.5',
        criteria: ['command: sleep 0.5'],
        tasks: [{ name: 'edit', instruction: 'append to a', command: 'echo more >> a.txt' }],
      });
      const seen = new Set<string>();
      const settled = engine.settled(job.id);
      let isSettled = false;
      void settled.then(() => (isSettled = true));
      while (!isSettled) {
        for (const p of engine.store.listJobProcesses(job.id)) seen.add(p.what);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(engine.get(job.id).status).toBe('done');
      expect([...seen].sort()).toEqual(['criterion-1', 'verification-0']);
      expect(engine.store.listJobProcesses(job.id)).toEqual([]);
    } finally {
      await engine.close();
    }
  }, 120_000);

  it('a live server shows a job interrupted within seconds once the process running it died, with no wait to trigger it', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const mark = marker();
    marks.push(mark);
    // the CLI runs its job itself (it started before the server, so it does not hand the job over)
    const cli = await dispatchInProcess(
      data,
      ['--workspace', ws, '--verify', 'none', '--task', 'slow', '--command', `echo b > b.txt; sleep ${mark}`],
      'off',
    );
    await eventually(() => survivors(mark).length > 0, UP_MS, 'the worker');
    const server = await startServe(data, { env: env('off') });
    expect((await call(server.url, 'GET', `/api/jobs/${cli.jobId}`)).json.status).toBe('running');

    cli.child.kill('SIGKILL');
    await cli.exited;
    const killedAt = Date.now();
    // plain reads only: a GET never recovers anything, the server's own periodic look must
    await eventually(
      async () => (await call(server.url, 'GET', `/api/jobs/${cli.jobId}`)).json.status === 'interrupted',
      NOTICED_MS,
      'the server to notice the dead job',
    );
    expect(Date.now() - killedAt).toBeLessThan(NOTICED_MS);
    await eventually(() => survivors(mark).length === 0, GONE_MS, "the dead job's worker to be killed");
    // the server commits a turn's writes when the turn ends: another process sees the release a moment later
    await eventually(() => countRows(data, 'workspace_locks') === 0, GONE_MS, 'the workspace to be released');
    expect(existsSync(join(ws, 'b.txt'))).toBe(true);
  }, 180_000);
});
