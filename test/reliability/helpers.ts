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
export async function startServe(dataDir: string, opts: { env?: NodeJS.ProcessEnv; args?: string[]; serveArgs?: string[] } = {}): Promise<Served> {
  const child = spawn(BIN, ['--data-dir', dataDir, ...(opts.args ?? []), 'serve', '--port', '0', ...(opts.serveArgs ?? [])], { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? { ...process.env, GAFFER_URL: '' } });
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
export function gaffer(dataDir: string, args: string[], env: NodeJS.ProcessEnv = { ...process.env, GAFFER_URL: '' }): Promise<{ code: number | null; stdout: string; stderr: string }> {
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
export async function eventually(pred: () => boolean | Promise<boolean>, ms = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** JSON over fetch, with the secret of a server `startServe` started unless it names its own `authorization` ('' = none). */
export async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...withCredential(base, headers) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, ...(await readBody(res)) };
}

/**
 * Polls `/api/health` every `everyMs` from a process of its own and keeps the slowest answer
 * (a failure counts 5 s). Its own process: the peak sampler's synchronous /proc scans in this one
 * must not be counted as the server's latency.
 */
export async function watchHealth(url: string, everyMs = 200): Promise<{ stop: () => Promise<{ maxMs: number; polls: number }> }> {
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
        await new Promise((r) => setTimeout(r, Math.max(0, ${everyMs} - took)));
      }
      process.stdout.write(JSON.stringify({ maxMs, polls }));
    })();`;
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
      return JSON.parse(out.slice(out.indexOf('\n') + 1)) as { maxMs: number; polls: number };
    },
  };
}
