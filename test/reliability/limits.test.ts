import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, processesWith, startServe, watchHealth, type Served } from './helpers.js';

// issue 11 finding 3: a fork bomb reached 11.8k processes and /api/health stopped answering; a
// verification grew to 24 GB and the kernel's OOM killer, not gaffer, ended it. Every loop here is
// bounded: the bomb by the cap under test and an outer `timeout 20`, the allocation by 1 GiB.
const LIMITS = { processes: 64, memory_mb: 256 };

/** How much longer than a bare server on the same machine /api/health may take to answer. */
const HEALTH_BOUND_MS = 1_000;
const SETTLED_MS = 90_000;

const mark = (what: string) => `gaffer-limits-${what}-${process.pid}-${Math.floor(Math.random() * 1e9)}`;
const forkBomb = (marker: string) => `timeout 20 sh -c 'bomb() { bomb | bomb & }; bomb; sleep 20' ${marker}`;
const allocate = (marker: string) =>
  `node -e 'const a = []; setInterval(() => { if (a.length < 256) a.push(Buffer.alloc(4 << 20, 1)); }, 5)' ${marker}`;

const servers: Served[] = [];
const markers: string[] = [];

/** Run cgroups a server left on disk, read straight from the cgroup filesystems. */
function cgroupsOf(pid: number): string[] {
  const parents = ['/sys/fs/cgroup/pids', '/sys/fs/cgroup/cpu', '/sys/fs/cgroup/unified'];
  // the server inherits this process's memory cgroup, so its runs' cgroups sit under ours
  const memory = /^\d+:memory:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
  if (memory !== undefined) parents.push(join('/sys/fs/cgroup/memory', memory));
  return parents
    .filter((p) => existsSync(p))
    .flatMap((p) =>
      readdirSync(p)
        .filter((e) => e.startsWith(`gaffer-${pid}-`))
        .map((e) => join(p, e)),
    );
}

afterAll(async () => {
  for (const m of markers) await eventually(() => processesWith(m).length === 0, 10_000, `no process of ${m} left`);
  for (const s of servers) expect(cgroupsOf(s.pid)).toEqual([]);
});

/** The most live processes carrying `marker`, and their most anonymous RSS summed, sampled every 50 ms until stopped. */
function watchPeak(marker: string): { stop: () => { processes: number; rssBytes: number } } {
  let processes = 0;
  let rssBytes = 0;
  const timer = setInterval(() => {
    const pids = processesWith(marker);
    processes = Math.max(processes, pids.length);
    let rss = 0;
    for (const pid of pids) {
      try {
        // anonymous memory: what the run allocated (shared file pages are counted once per process in RSS)
        rss += Number(/^RssAnon:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
      } catch {
        // gone meanwhile
      }
    }
    rssBytes = Math.max(rssBytes, rss);
  }, 50);
  return {
    stop: () => {
      clearInterval(timer);
      return { processes, rssBytes };
    },
  };
}

async function serveWithLimits(): Promise<Served> {
  const data = join(tempDir(), 'data');
  mkdirSync(data, { recursive: true });
  writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ limits: LIMITS }));
  const served = await startServe(data, { env: { ...process.env, GAFFER_URL: '' } });
  servers.push(served);
  return served;
}

async function runToEnd(url: string, body: unknown): Promise<any> {
  const posted = await call(url, 'POST', '/api/jobs', body);
  expect(posted.status, posted.text).toBe(202);
  const id = posted.json.id as string;
  let job: any;
  await eventually(
    async () => {
      job = (await call(url, 'GET', `/api/jobs/${id}`)).json;
      return ['done', 'partial', 'error', 'cancelled', 'interrupted'].includes(job?.status);
    },
    SETTLED_MS,
    `job ${id} to settle`,
  );
  return job;
}

describe('limits: a worker or a verification cannot take the machine down', () => {
  it('a fork bomb worker is ended by the process-count limit well before its timeout; the row and the verdict name it; /api/health answers within 1 s throughout', async () => {
    const served = await serveWithLimits();
    const marker = mark('bomb');
    markers.push(marker);
    const health = await watchHealth(served.url);
    const peak = watchPeak(marker);
    const job = await runToEnd(served.url, {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      timeout_s: 30,
      verify: 'none',
      tasks: [{ name: 'bomb', instruction: 'fork without bound', command: forkBomb(marker) }],
    });
    const seen = peak.stop();
    const { maxMs, maxExcessMs, polls } = await health.stop();
    console.info(
      `fork bomb: peak ${seen.processes} processes, ended after ${job.result.workers[0].duration_s} s; /api/health max ${Math.round(maxMs)} ms (worst excess over a bare server ${Math.round(maxExcessMs)} ms) over ${polls} polls`,
    );

    expect(job.status).toBe('partial');
    expect(job.result.workers[0]).toMatchObject({
      status: 'error',
      stop_reason: 'process_limit',
      error: 'ended by the process-count limit (64)',
    });
    expect(job.result.workers[0].duration_s).toBeLessThan(15);
    expect(job.verdict).toContain('ended by the process-count limit (64)');
    expect(seen.processes).toBeLessThanOrEqual(LIMITS.processes);
    expect(polls).toBeGreaterThan(0);
    expect(maxExcessMs).toBeLessThan(HEALTH_BOUND_MS);
    await eventually(() => processesWith(marker).length === 0, 10_000, 'the bomb to be gone');
    expect(cgroupsOf(served.pid)).toEqual([]);
  }, 180_000);

  it('a verification that allocates without bound is ended by the memory limit, inconclusive and named in the verdict; /api/health answers within 1 s throughout', async () => {
    const served = await serveWithLimits();
    const marker = mark('alloc');
    markers.push(marker);
    const health = await watchHealth(served.url);
    const peak = watchPeak(marker);
    const job = await runToEnd(served.url, {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: allocate(marker),
      verify_timeout_s: 30,
      tasks: [{ name: 'edit', instruction: 'append to a', command: 'echo more >> a.txt' }],
    });
    const seen = peak.stop();
    const { maxMs, maxExcessMs, polls } = await health.stop();
    const v = job.result.verification;
    console.info(
      `allocation: peak anonymous RSS ${Math.round(seen.rssBytes / 2 ** 20)} MiB, ended after ${v.duration_s} s; /api/health max ${Math.round(maxMs)} ms (worst excess over a bare server ${Math.round(maxExcessMs)} ms) over ${polls} polls`,
    );

    expect(v).toMatchObject({
      ran: true,
      ok: null,
      inconclusive: true,
      limit: 'memory',
      timed_out: false,
      summary: 'ended by the memory limit (256 MiB)',
    });
    expect(v.duration_s).toBeLessThan(15);
    expect(job.verdict).toContain('verification inconclusive (ended by the memory limit (256 MiB))');
    expect(job.result.proof.uncertainty).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'verification_inconclusive', detail: 'ended by the memory limit (256 MiB)' }),
      ]),
    );
    expect(seen.rssBytes).toBeLessThanOrEqual(LIMITS.memory_mb * 2 ** 20);
    expect(polls).toBeGreaterThan(0);
    expect(maxExcessMs).toBeLessThan(HEALTH_BOUND_MS);
    await eventually(() => processesWith(marker).length === 0, 10_000, 'the allocation to be gone');
    expect(cgroupsOf(served.pid)).toEqual([]);
  }, 180_000);
});
