import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { rememberServer, withCredential } from '../helpers/credential.js';
import { readBody } from '../helpers/json.js';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
    }
  }
});

export interface Served {
  child: ChildProcess;
  url: string;
  pid: number;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `gaffer serve --port 0 [serveArgs]` as a child (killed after the test); resolves once server.json names it. */
export async function startServe(
  dataDir: string,
  opts: { env?: NodeJS.ProcessEnv; args?: string[]; serveArgs?: string[] } = {},
): Promise<Served> {
  const child = spawn(
    BIN,
    ['--data-dir', dataDir, ...(opts.args ?? []), 'serve', '--port', '0', ...(opts.serveArgs ?? [])],
    { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? { ...process.env, GAFFER_URL: '' } },
  );
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout?.resume();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const file = join(dataDir, 'server.json');
  for (let i = 0; i < 400; i++) {
    if (existsSync(file)) {
      try {
        const record = JSON.parse(readFileSync(file, 'utf8')) as { pid: number; url: string };
        if (record.pid === child.pid) {
          rememberServer(record.url, dataDir); // `call` sends it, as the gaffer CLI does
          return { child, url: record.url, pid: record.pid, stderr: () => stderr, exited };
        }
      } catch {
        // written meanwhile
      }
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gaffer serve did not start: ${stderr}`);
}

/** Runs the CLI to its end. */
export function gaffer(
  dataDir: string,
  args: string[],
  env: NodeJS.ProcessEnv = { ...process.env, GAFFER_URL: '' },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Live (non-zombie) processes whose command line carries `marker`, found from the host whether
 * sandboxed or not (inside bwrap a worker's `$$` is another pid namespace's). A zombie counts as
 * gone: this container's init does not reap.
 */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Polls `pred` until it holds (or throws after `ms`). */
export async function eventually(
  pred: () => boolean | Promise<boolean>,
  ms = 5_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** JSON over fetch, with the secret of a server `startServe` started unless it names its own `authorization` ('' = none). */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...withCredential(base, headers),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, ...(await readBody(res)) };
}

/**
 * Polls `/api/health` every `everyMs` from a process of its own and keeps the slowest answer
 * (a failure counts 5 s). Its own process: the peak sampler's synchronous /proc scans in this one
 * must not be counted as the server's latency.
 *
 * Each poll is paired with one, sent at the same instant, to a bare HTTP server in a third process:
 * `maxExcessMs` is the worst of (server's answer − the bare server's answer). On a loaded machine
 * both wait for the scheduler alike, so the excess is what the server itself held up (a read that
 * blocks its loop shows as 5 s); `maxMs` alone would also count the machine's load.
 */
export async function watchHealth(url: string, everyMs = 200): Promise<{ stop: () => Promise<HealthWatch> }> {
  const script = `
    const { spawn } = require('node:child_process');
    const bare = spawn(process.execPath, ['-e', "const s = require('node:http').createServer((q, r) => r.end('{}')).listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port)))"], { stdio: ['ignore', 'pipe', 'inherit'] });
    let running = true, maxMs = 0, controlMaxMs = 0, maxExcessMs = 0, polls = 0;
    process.on('SIGTERM', () => (running = false));
    const timed = async (target) => {
      const began = performance.now();
      try {
        const res = await fetch(target, { signal: AbortSignal.timeout(5000) });
        await res.text();
        return res.ok ? performance.now() - began : 5000;
      } catch {
        return 5000;
      }
    };
    bare.stdout.once('data', async (port) => {
      const control = 'http://127.0.0.1:' + port + '/';
      while (running) {
        const began = performance.now();
        const [took, controlTook] = await Promise.all([timed(process.argv[1] + '/api/health'), timed(control)]);
        maxMs = Math.max(maxMs, took);
        controlMaxMs = Math.max(controlMaxMs, controlTook);
        maxExcessMs = Math.max(maxExcessMs, took - controlTook);
        if (polls++ === 0) process.stdout.write('polling\\n');
        await new Promise((r) => setTimeout(r, Math.max(0, ${everyMs} - (performance.now() - began))));
      }
      bare.kill();
      process.stdout.write(JSON.stringify({ maxMs, controlMaxMs, maxExcessMs, polls }));
    });`;
  const poller = spawn(process.execPath, ['-e', script, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  poller.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const ended = new Promise<void>((resolve) => poller.once('close', () => resolve()));
  // the run under test starts only once the poller has answered once: its whole span is watched
  await eventually(() => out.includes('polling\n'), 30_000, 'the health poller to start');
  return {
    stop: async () => {
      poller.kill('SIGTERM');
      await ended;
      return JSON.parse(out.slice(out.indexOf('\n') + 1)) as HealthWatch;
    },
  };
}

/** What `watchHealth` saw: the slowest answer, the bare server's slowest, the worst excess of one over the other. */
export interface HealthWatch {
  maxMs: number;
  controlMaxMs: number;
  maxExcessMs: number;
  polls: number;
}
