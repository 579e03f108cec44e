import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { CALC_FILES, makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, startServe, type Served } from '../reliability/helpers.js';

// issue 32 point 2: a FIFO at package.json, .gaffer/workspace.json or .git/config blocked gaffer's
// main thread in a synchronous read (/api/health stopped answering; a job with a 10 s verification
// timeout ran 679 s), and package.json -> /dev/zero grew gaffer from 125 MB to 1.5 GB. Point 6: job
// 1's worker wrote `.gaffer/workspace.json` with `verify.command: "echo all tests passed"`, and job 2
// (verify auto) was proved by it while the real tests failed. Every hostile thing here is planted by
// a sandboxed shell worker; the next job reads the workspace it left.
const probe = probeSandbox();
const HEALTH_EVERY_MS = 100;
const HEALTH_BOUND_MS = 1_000;
const VERIFY_TIMEOUT_S = 10;
const WORKER_TIMEOUT_S = 30;
/** A job's worst case: its worker's and its verification's timeouts (a baseline run may follow the verification), plus room for gaffer's own steps. */
const JOB_BOUND_MS = (WORKER_TIMEOUT_S + 3 * VERIFY_TIMEOUT_S + 30) * 1000;
/** gaffer serve's peak resident memory (VmHWM) after every attack: /dev/zero read whole would be gigabytes. */
const RSS_BOUND_MB = 400;

let served: Served;
const outside = tempDir('gaffer-hostile-outside-');
/** The worst /api/health answer and gaffer serve's peak RSS over every test, for the log. */
const worst = { healthMs: 0, rssMb: 0 };

afterAll(() => {
  if (probe.available) console.info(`hostile reads: /api/health max ${Math.round(worst.healthMs)} ms; gaffer serve peak RSS ${worst.rssMb} MB`);
});

/**
 * Runs `attack` against a `gaffer serve` of its own (the helpers end it after each test) while
 * /api/health is polled: the slowest answer stays under 1 s, and the server's peak RSS under the bound.
 */
async function underWatch(attack: () => Promise<void>): Promise<void> {
  const data = join(tempDir(), 'data');
  mkdirSync(data, { recursive: true });
  served = await startServe(data, { env: { ...process.env, GAFFER_URL: '' } });
  const health = await watchHealth(served.url);
  try {
    await attack();
  } finally {
    const { maxMs } = await health.stop();
    const rssMb = peakRssMb(served.pid);
    worst.healthMs = Math.max(worst.healthMs, maxMs);
    worst.rssMb = Math.max(worst.rssMb, rssMb);
    console.info(`  /api/health max ${Math.round(maxMs)} ms; gaffer serve peak RSS ${rssMb} MB`);
    expect(maxMs).toBeLessThan(HEALTH_BOUND_MS);
    expect(rssMb).toBeLessThan(RSS_BOUND_MB);
  }
}

/**
 * Polls `/api/health` every HEALTH_EVERY_MS from a process of its own (so this process's own work is
 * never counted as the server's latency) and keeps the slowest answer; a failure counts 5 s.
 */
async function watchHealth(url: string): Promise<{ stop: () => Promise<{ maxMs: number; polls: number }> }> {
  const script = `
    let running = true, maxMs = 0, polls = 0;
    process.on('SIGTERM', () => (running = false));
    (async () => {
      while (running) {
        const began = performance.now();
        try {
          const res = await fetch(process.argv[1] + '/api/health', { signal: AbortSignal.timeout(5000) });
          await res.text();
          if (!res.ok) maxMs = Math.max(maxMs, 5000);
        } catch {
          maxMs = Math.max(maxMs, 5000);
        }
        const took = performance.now() - began;
        maxMs = Math.max(maxMs, took);
        if (polls++ === 0) process.stdout.write('polling\\n');
        await new Promise((r) => setTimeout(r, Math.max(0, ${HEALTH_EVERY_MS} - took)));
      }
      process.stdout.write(JSON.stringify({ maxMs, polls }));
    })();`;
  const poller = spawn(process.execPath, ['-e', script, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  poller.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const ended = new Promise<void>((resolve) => poller.once('close', () => resolve()));
  await eventually(() => out.includes('polling\n'), 30_000, 'the health poller to start');
  return {
    stop: async () => {
      poller.kill('SIGTERM');
      await ended;
      return JSON.parse(out.slice(out.indexOf('\n') + 1)) as { maxMs: number; polls: number };
    },
  };
}

/** A process's peak resident set (VmHWM), MB. */
function peakRssMb(pid: number): number {
  return Math.round(Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
}

/** Runs a job through the server to its end: the full answer and how long it took. */
async function runJob(workspace: string, command: string): Promise<{ job: any; ms: number }> {
  const began = Date.now();
  const posted = await call(served.url, 'POST', '/api/jobs', {
    workspace,
    verify: 'auto',
    verify_timeout_s: VERIFY_TIMEOUT_S,
    timeout_s: WORKER_TIMEOUT_S,
    tasks: [{ instruction: 'change the workspace', command }],
  });
  expect(posted.status, posted.text).toBe(202);
  const id = posted.json.id as string;
  let job: any;
  await eventually(
    async () => {
      job = (await call(served.url, 'GET', `/api/jobs/${id}?full=1`)).json;
      return ['done', 'partial', 'error', 'cancelled', 'interrupted'].includes(job?.status);
    },
    JOB_BOUND_MS,
    `job ${id} to settle`,
  );
  return { job, ms: Date.now() - began };
}

/** The calc project (its tests fail: add() subtracts), committed; `hints`: with a hints file that names the real test command. */
function calcRepo(hints: boolean): string {
  return makeWorkspace({ ...CALC_FILES, ...(hints ? { '.gaffer/workspace.json': JSON.stringify({ verify: { command: 'npm test' } }) } : {}) }, { git: true });
}

const outsideTarget = join(outside, 'passwd.json');
writeFileSync(outsideTarget, JSON.stringify({ name: 'secret', scripts: { test: 'echo all tests passed' } }));

describe.skipIf(!probe.available)('a hostile workspace: every read is bounded, nothing blocks, hints steer nothing (issue 32)', () => {
  // [what, the planting command, the file the next job's verdict names, the words it says]
  const attacks: [string, string, string, RegExp][] = [
    ['a FIFO at package.json', 'rm package.json && mkfifo package.json', 'package.json', /a FIFO, not a regular file/],
    ['a FIFO at .gaffer/workspace.json', 'rm .gaffer/workspace.json && mkfifo .gaffer/workspace.json', '.gaffer/workspace.json', /a FIFO, not a regular file/],
    ['package.json -> /dev/zero', 'rm package.json && ln -s /dev/zero package.json', 'package.json', /a link out of .*\/dev\/zero/],
    ['package.json -> a file outside the workspace', `rm package.json && ln -s ${outsideTarget} package.json`, 'package.json', /a link out of .*passwd\.json/],
  ];

  it.each(attacks)('%s: the planting job and the next one end within their timeouts, the next names the file', (_what, plant, file, words) =>
    underWatch(async () => {
      const ws = calcRepo(file === '.gaffer/workspace.json');
      const first = await runJob(ws, plant);
      expect(first.job.result.workers[0].sandboxed).toBe(true);
      expect(first.ms).toBeLessThan(JOB_BOUND_MS);
      const next = await runJob(ws, 'true');
      expect(next.ms).toBeLessThan(JOB_BOUND_MS);
      const named = (next.job.result.verification.ignored_files ?? []) as string[];
      expect(named.join('\n')).toMatch(new RegExp(`^${file.replace(/\./g, '\\.')}:? .*${words.source}`, 'm'));
      expect(next.job.verdict).toContain(`not gone by: ${file}`);
      // nothing unread proved anything
      expect(next.job.result.proof?.verdict).not.toBe('proved');
      console.info(`${_what}: planting job ${first.ms} ms, next job ${next.ms} ms; verdict: ${next.job.verdict}`);
    }),
    2 * JOB_BOUND_MS,
  );

  // git itself blocks opening a FIFO config: gaffer's own reads of it are bounded here, and the lead's
  // runGit change refuses a .git/config that is not a regular file before any git call; until that is
  // merged, gaffer's `git diff --shortstat HEAD` in the workspace waits out its 120 s timeout
  // (measured: the planting job sat 145 s in "checking what changed on disk", /api/health 255 ms)
  it('a FIFO at .git/config: both jobs are bounded and the server stays healthy (refused by name, or a clean result)', () =>
    underWatch(async () => {
      const ws = calcRepo(false);
      const first = await runJob(ws, 'rm .git/config && mkfifo .git/config');
      expect(first.job.result.workers[0].sandboxed).toBe(true);
      const next = await runJob(ws, 'true');
      console.info(`FIFO at .git/config: planting job ${first.ms} ms (${first.job.status}), next job ${next.ms} ms (${next.job.status}): ${next.job.verdict}`);
      for (const run of [first, next]) expect(run.ms).toBeLessThan(JOB_BOUND_MS);
      expect(next.job.result?.proof?.verdict ?? 'unproved').not.toBe('proved');
    }),
    2 * JOB_BOUND_MS,
  );

  it("hints an earlier worker wrote steer nothing: job 2 runs the real tests, fails, and names the uncommitted hints file", () =>
    underWatch(async () => {
      const ws = makeWorkspace(CALC_FILES, { git: true });
      const first = await runJob(ws, `mkdir -p .gaffer && echo '{"verify":{"command":"echo all tests passed"}}' > .gaffer/workspace.json`);
      expect(first.job.result.workers[0].sandboxed).toBe(true);
      const next = await runJob(ws, 'true');
      const v = next.job.result.verification;
      expect(v).toMatchObject({ command: 'npm test', mode: 'auto', ok: false });
      expect(v.ignored_files).toEqual(['.gaffer/workspace.json not committed: ignored (hints are read as committed at HEAD)']);
      expect(next.job.verdict).toContain('not gone by: .gaffer/workspace.json not committed');
      expect(next.job.result.proof.verdict).not.toBe('proved');
      expect(next.job.status).not.toBe('done');
    }),
    2 * JOB_BOUND_MS,
  );

  it("a committed hints file a worker changed: HEAD's command runs, the change is named", () =>
    underWatch(async () => {
      const ws = makeWorkspace({ ...CALC_FILES, '.gaffer/workspace.json': JSON.stringify({ verify: { command: 'node --test test/' } }) }, { git: true });
      await runJob(ws, `echo '{"verify":{"command":"echo all tests passed"}}' > .gaffer/workspace.json`);
      const next = await runJob(ws, 'true');
      expect(next.job.result.verification).toMatchObject({ command: 'node --test test/', mode: 'configured', ok: false });
      expect(next.job.verdict).toContain("not gone by: .gaffer/workspace.json changed since HEAD: ignored (HEAD's hints used)");
      expect(next.job.result.proof.verdict).not.toBe('proved');
    }),
    2 * JOB_BOUND_MS,
  );
});
