import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { INTERRUPTED_VERDICT } from '../../src/engine/maintenance/recovery.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, processesWith, startServe } from './helpers.js';

/** A unique `sleep` duration: the marker that finds the process from the host, sandboxed or not. */
const marker = () => `60.${String(Math.floor(Math.random() * 1e9)).padStart(9, '0')}`;

// Waits on real conditions, each with a bound generous for a loaded 2-core machine: a wait that
// holds returns the moment it does, so the bound only decides how long a real failure takes to say so.
const PROCESS_UP_MS = 60_000;
const ORPHANS_GONE_MS = 30_000;

const readProc = (pid: number, file: string) => {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
};

/**
 * True once `sleep <mark>` itself runs — not merely a process whose command line carries the
 * marker (bwrap's own argv does, from its first instant) — and, when it is sandboxed, once the
 * sandbox's init waits for it: bwrap arms --die-with-parent in that init only then, so a kill
 * before it is a different test (a crash while a sandbox starts).
 */
function isRunning(mark: string): boolean {
  const argv = `sleep\0${mark}\0`;
  return readdirSync('/proc').some((entry) => {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || readProc(pid, 'cmdline') !== argv) return false;
    for (let p = pid, depth = 0; p > 1 && depth < 8; depth++) {
      const status = readProc(p, 'status');
      const nsPids = /^NSpid:\s*(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/) ?? [];
      if (nsPids.length > 1 && nsPids.at(-1) === '1') return readProc(p, 'wchan') === 'do_wait';
      p = Number(/^PPid:\s*(\d+)/m.exec(status)?.[1] ?? 0);
    }
    return true;
  });
}

/** Live processes of the `sleep <mark>` command: the sleep itself and the shells and sandboxes that carry it in their argv. */
function survivors(mark: string): number[] {
  const argv = `sleep\0${mark}\0`;
  const sleeps = readdirSync('/proc').filter(
    (e) =>
      /^\d+$/.test(e) && readProc(Number(e), 'cmdline') === argv && !/^State:\s*Z/m.test(readProc(Number(e), 'status')),
  );
  return [...new Set([...processesWith(`sleep ${mark}`), ...sleeps.map(Number)])];
}

/** The surviving processes with their parents, for a failure message. */
function describeSurvivors(marks: string[]): string {
  return marks
    .flatMap(survivors)
    .map((pid) => {
      const status = readProc(pid, 'status');
      const field = (k: string) => new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim();
      return `${pid} (${field('State')}, parent ${field('PPid')}, ns pids ${field('NSpid')}): ${readProc(pid, 'cmdline').replace(/\0/g, ' ').trim()}`;
    })
    .join('\n');
}

describe('kill -9 of gaffer serve mid-job, then a restart on the same data dir', () => {
  it('jobs read interrupted, the store is intact, locks are released, no worker survives, the evidence so far reads, and the workspace runs a new job', async () => {
    const data = join(tempDir(), 'data');
    const wsWorker = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const wsVerify = makeWorkspace({ 'a.txt': 'a\n' });
    const workerMark = marker();
    const verifyMark = marker();

    const first = await startServe(data);
    // one job killed while its worker runs, one while its verification runs (it has its changes by then)
    const inWorker = await call(first.url, 'POST', '/api/jobs', {
      workspace: wsWorker,
      verify: 'none',
      tasks: [
        {
          name: 'slow',
          instruction: 'write b then hang',
          command: `echo crash-started; echo b > b.txt; sleep ${workerMark}`,
        },
      ],
    });
    expect(inWorker.status).toBe(202);
    const inVerify = await call(first.url, 'POST', '/api/jobs', {
      workspace: wsVerify,
      verify: `sleep ${verifyMark}`,
      tasks: [{ name: 'edit', instruction: 'append to a', command: 'echo more >> a.txt; echo c > c.txt' }],
    });
    expect(inVerify.status).toBe(202);
    const [jobW, jobV] = [inWorker.json.id as string, inVerify.json.id as string];

    const running = await call(
      first.url,
      'GET',
      `/api/jobs/${jobW}/wait?for=${encodeURIComponent('event:crash-started')}&timeout_s=60`,
    );
    expect(running.json).toMatchObject({ met: true });
    await eventually(() => isRunning(workerMark), PROCESS_UP_MS, 'the worker process');
    await eventually(
      async () =>
        (await call(first.url, 'GET', `/api/jobs/${jobV}`)).json.status === 'verifying' && isRunning(verifyMark),
      PROCESS_UP_MS,
      'the verification process',
    );
    const beforeW = (await call(first.url, 'GET', `/api/jobs/${jobW}`)).json;
    expect(beforeW.status).toBe('running');

    first.child.kill('SIGKILL');
    await first.exited;
    // the server died without cleaning up: its lock rows and its children are still there
    const raw = new Database(join(data, 'gaffer.db'), { readonly: true });
    try {
      expect((raw.prepare('SELECT count(*) AS n FROM workspace_locks').get() as { n: number }).n).toBe(2);
    } finally {
      raw.close();
    }

    const second = await startServe(data);
    const w = (await call(second.url, 'GET', `/api/jobs/${jobW}?full=1`)).json;
    const v = (await call(second.url, 'GET', `/api/jobs/${jobV}?full=1`)).json;
    for (const job of [w, v]) {
      expect(job.status).toBe('interrupted');
      expect(job.verdict).toContain(INTERRUPTED_VERDICT);
      expect(job.wait_again).toBeFalsy();
    }
    expect(w.result.workers[0]).toMatchObject({ name: 'slow', status: 'interrupted' });

    // no worker, no verification process survives the restart
    await eventually(
      () => survivors(workerMark).length === 0 && survivors(verifyMark).length === 0,
      ORPHANS_GONE_MS,
      'the orphans to be killed',
    ).catch((err: Error) => {
      throw new Error(`${err.message}; still alive:\n${describeSurvivors([workerMark, verifyMark])}`);
    });

    // the store is intact; the locks are gone; the attempts are closed
    const db = new Database(join(data, 'gaffer.db'), { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.prepare('SELECT count(*) AS n FROM workspace_locks').get()).toEqual({ n: 0 });
      const attempts = db
        .prepare('SELECT job_id, worker, status, finished, log_file FROM attempts ORDER BY job_id, worker')
        .all() as {
        job_id: string;
        worker: string;
        status: string;
        finished: number | null;
        log_file: string | null;
      }[];
      const slow = attempts.find((a) => a.job_id === jobW && a.worker === 'slow');
      expect(slow).toMatchObject({ status: 'interrupted', finished: expect.any(Number) });
      expect(attempts.every((a) => a.finished !== null)).toBe(true);
      expect(slow?.log_file && existsSync(slow.log_file) && readFileSync(slow.log_file, 'utf8')).toContain(
        'crash-started',
      );
    } finally {
      db.close();
    }

    // the evidence so far: the worker's log, its events, the diff against the checkpoint, and the changes the verifying job had found
    expect((await call(second.url, 'GET', `/api/jobs/${jobW}/workers/slow/log`)).text).toContain('crash-started');
    const events = (await call(second.url, 'GET', `/api/jobs/${jobW}/events`)).json.events as {
      name: string;
      event: string;
      message: string;
    }[];
    expect(events.some((e) => e.message.includes('crash-started'))).toBe(true);
    expect(events.at(-1)).toMatchObject({ name: 'job', event: 'status', message: 'interrupted' });
    const diff = await call(second.url, 'GET', `/api/jobs/${jobW}/diff?path=b.txt`);
    expect(diff.status).toBe(200);
    expect(diff.text).toContain('+b');
    expect(v.result.changes).toMatchObject({ modified: ['a.txt'], added: ['c.txt'] });
    expect(v.verdict).toContain('2 files changed');

    // a new job on each workspace runs to done
    for (const ws of [wsWorker, wsVerify]) {
      const next = await call(second.url, 'POST', '/api/jobs', {
        workspace: ws,
        verify: 'none',
        tasks: [{ instruction: 'append', command: 'echo after >> a.txt' }],
      });
      expect(next.status).toBe(202);
      const done = await call(second.url, 'GET', `/api/jobs/${next.json.id}/wait?timeout_s=60`);
      expect(done.json).toMatchObject({
        met: true,
        state: { status: 'done', result: { changes: { modified: expect.arrayContaining(['a.txt']) } } },
      });
    }
  }, 240_000);
});
