import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { call, eventually, startServe, watchHealth, type Served } from '../reliability/helpers.js';

// A real `gaffer serve` under attack (issue 32): each attack runs against a server of its own while
// /api/health is polled from another process; the slowest answer (beyond what a bare server on the
// same machine took at the same instant) and the server's peak RSS are bounded.

/** How much longer than a bare server /api/health may take to answer, at worst. */
export const HEALTH_BOUND_MS = 1_000;
/** gaffer serve's peak resident memory (VmHWM) after an attack: /dev/zero read whole would be gigabytes. */
export const RSS_BOUND_MB = 400;
export const VERIFY_TIMEOUT_S = 10;
export const WORKER_TIMEOUT_S = 30;
/** A job's worst case: its worker's and its verification's timeouts (a baseline run may follow the verification), plus room for gaffer's own steps. */
export const JOB_BOUND_MS = (WORKER_TIMEOUT_S + 3 * VERIFY_TIMEOUT_S + 30) * 1000;

/** The worst /api/health excess over a bare server and gaffer serve's peak RSS over a file's attacks, for its log. */
export const worst = { healthMs: 0, rssMb: 0 };

/** Runs `attack` against a `gaffer serve` of its own (ended after the test) while /api/health is polled every 100 ms. */
export async function underWatch(
  attack: (served: Served) => Promise<void>,
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  const data = join(tempDir(), 'data');
  mkdirSync(data, { recursive: true });
  const served = await startServe(data, { env: { ...process.env, GAFFER_URL: '', ...env } });
  const health = await watchHealth(served.url, 100);
  try {
    await attack(served);
  } finally {
    const { maxMs, controlMaxMs, maxExcessMs } = await health.stop();
    const rssMb = peakRssMb(served.pid);
    worst.healthMs = Math.max(worst.healthMs, maxExcessMs);
    worst.rssMb = Math.max(worst.rssMb, rssMb);
    console.info(
      `  /api/health max ${Math.round(maxMs)} ms (a bare server's max ${Math.round(controlMaxMs)} ms; worst excess ${Math.round(maxExcessMs)} ms); gaffer serve peak RSS ${rssMb} MB`,
    );
    expect(maxExcessMs).toBeLessThan(HEALTH_BOUND_MS);
    expect(rssMb).toBeLessThan(RSS_BOUND_MB);
  }
}

/** A process's peak resident set (VmHWM), MB. */
function peakRssMb(pid: number): number {
  return Math.round(Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
}

/** Posts a job (a shell task running `command`, or `body` as it is) and waits for its end: the full answer and how long it took. */
export async function runJob(
  served: Served,
  workspace: string,
  command: string,
  body: Record<string, unknown> = {},
): Promise<{ job: any; ms: number }> {
  const began = Date.now();
  const posted = await call(served.url, 'POST', '/api/jobs', {
    workspace,
    verify: 'auto',
    verify_timeout_s: VERIFY_TIMEOUT_S,
    timeout_s: WORKER_TIMEOUT_S,
    tasks: [{ instruction: 'change the workspace', command }],
    ...body,
  });
  expect(posted.status, posted.text).toBe(202);
  return { job: await settled(served, posted.json.id as string), ms: Date.now() - began };
}

/** The full answer of a job once it has ended. */
export async function settled(served: Served, id: string): Promise<any> {
  let job: any;
  await eventually(
    async () => {
      job = (await call(served.url, 'GET', `/api/jobs/${id}?full=1`)).json;
      return ['done', 'partial', 'error', 'cancelled', 'interrupted'].includes(job?.status);
    },
    JOB_BOUND_MS,
    `job ${id} to settle`,
  );
  return job;
}
