import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createApp, type AppOptions } from '../../src/interfaces/http/app.js';
import { startServer, type RunningServer } from '../../src/interfaces/http/serve.js';
import { parseFrame } from '../../src/interfaces/cli/api.js';
import { tempDir } from '../helpers/temp.js';

const engines: Engine[] = [];
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

/** An engine on a fresh data dir, closed after the test. */
export async function openEngine(opts: Partial<EngineOptions> = {}): Promise<Engine> {
  const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), ...opts });
  engines.push(engine);
  return engine;
}

/** The HTTP app in process (no Host check unless asked). */
export function inProcess(engine: Engine, opts: Partial<AppOptions> = {}) {
  const { app, counters } = createApp(engine, { tokens: {}, allowedHosts: () => null, version: 'test', ...opts });
  return {
    app,
    counters,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const res = await app.request(path, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, text, json: parse(text), headers: res.headers };
    },
  };
}

/** A real listener on 127.0.0.1, closed after the test. */
export async function serveEngine(engine: Engine, tokens: Record<string, string> = {}): Promise<RunningServer & { call: Caller }> {
  const server = await startServer({ engine, host: '127.0.0.1', port: 0, tokens, version: 'test' });
  servers.push(server);
  return Object.assign(server, { call: socketCaller(server.url) });
}

type Caller = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; text: string; json: any; headers: Headers }>;

/** fetch over the socket. */
export function socketCaller(base: string): Caller {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, text, json: parse(text), headers: res.headers };
  };
}

/** A raw node:http request, so Host can be set to anything. */
export function rawRequest(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface SseFrame {
  event: string;
  data: string;
  id: string | null;
}

/** A real streaming SSE client over fetch: frames as they arrive, `abort()` to disconnect. */
export function openStream(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  const waker: { wake: (() => void) | null } = { wake: null };
  let closed = false;
  let status = 0;
  const done = (async () => {
    try {
      const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
      status = res.status;
      if (!res.body) return;
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const raw = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (raw.split('\n').every((l) => l.startsWith(':'))) comments.push(raw);
          else frames.push(parseFrame(raw));
          waker.wake?.();
        }
      }
    } catch (err) {
      if ((err as Error).name !== 'AbortError') throw err;
    } finally {
      closed = true;
      waker.wake?.();
    }
  })();
  return {
    frames,
    comments,
    done,
    get closed() {
      return closed;
    },
    get status() {
      return status;
    },
    abort: () => controller.abort(),
    /** Resolves once `pred` holds of the frames so far (or throws after `ms`). */
    async until(pred: (frames: SseFrame[]) => boolean, ms = 20_000): Promise<void> {
      const deadline = Date.now() + ms;
      while (!pred(frames)) {
        if (closed) throw new Error(`stream closed first; frames: ${frames.map((f) => f.event).join(',')}`);
        if (Date.now() > deadline) throw new Error(`timed out; frames: ${frames.map((f) => `${f.event}:${f.data.slice(0, 80)}`).join(' | ')}`);
        await new Promise<void>((r) => {
          waker.wake = r;
          setTimeout(r, 100);
        });
      }
    },
  };
}

/** Polls `pred` until it holds (or throws after `ms`). */
export async function eventually(pred: () => boolean | Promise<boolean>, ms = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Counts job rows straight from the store. */
export function jobRows(engine: Engine): number {
  return (engine.store.db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n;
}

export const shellTask = (command: string, extra: Record<string, unknown> = {}) => ({ instruction: `run ${command}`, command, ...extra });
