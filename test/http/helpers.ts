import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createApp, type AppOptions } from '../../src/interfaces/http/app.js';
import { startServer, type RunningServer } from '../../src/interfaces/http/serve.js';
import { parseFrame } from '../../src/interfaces/cli/api.js';
import { Credentials } from '../../src/interfaces/http/credentials.js';
import { rememberServer, withCredential } from '../helpers/credential.js';
import { jsonOrUndefined } from '../helpers/json.js';
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

/** The secret of in-process apps (a server started by a test makes its own in its data dir). */
export const IN_PROCESS_SECRET = 'in-process-test-secret-0123456789abcdefghijklmnop';

/** The HTTP app in process (no Host check unless asked); `call` sends the secret unless it names its own `authorization` ('' = none). */
export function inProcess(engine: Engine, opts: Partial<AppOptions> & { tokens?: Record<string, string> } = {}) {
  const { tokens = {}, ...rest } = opts;
  const credentials = new Credentials({
    secret: IN_PROCESS_SECRET,
    secretFile: join(engine.dataDir, 'secret'),
    tokens,
  });
  const { app, counters } = createApp(engine, { credentials, allowedHosts: () => null, version: 'test', ...rest });
  return {
    app,
    counters,
    credentials,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const auth: Record<string, string> = Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')
        ? {}
        : { authorization: `Bearer ${IN_PROCESS_SECRET}` };
      const res = await app.request(path, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...auth, ...headers },
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, text, json: jsonOrUndefined(text), headers: res.headers };
    },
  };
}

/** A real listener on 127.0.0.1, closed after the test; `call` and `openStream` send its secret (see withCredential). */
export async function serveEngine(
  engine: Engine,
  tokens: Record<string, string> = {},
): Promise<RunningServer & { call: Caller; secret: string }> {
  const server = await startServer({ engine, host: '127.0.0.1', port: 0, tokens, version: 'test' });
  servers.push(server);
  const secret = rememberServer(server.url, engine.dataDir);
  return Object.assign(server, { call: socketCaller(server.url), secret });
}

type Caller = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; text: string; json: any; headers: Headers }>;

/** fetch over the socket, with the server's secret unless the call names its own `authorization` ('' = none). */
export function socketCaller(base: string): Caller {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...withCredential(base, headers),
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, text, json: jsonOrUndefined(text), headers: res.headers };
  };
}

/** A raw node:http request, so Host can be set to anything. */
export function rawRequest(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; json: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: jsonOrUndefined(text) }));
    });
    req.on('error', reject);
    req.end();
  });
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
      const res = await fetch(url, {
        headers: { accept: 'text/event-stream', ...withCredential(url, headers) },
        signal: controller.signal,
      });
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
        if (Date.now() > deadline)
          throw new Error(`timed out; frames: ${frames.map((f) => `${f.event}:${f.data.slice(0, 80)}`).join(' | ')}`);
        await new Promise<void>((r) => {
          waker.wake = r;
          setTimeout(r, 100);
        });
      }
    },
  };
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

/** Counts job rows straight from the store. */
export function jobRows(engine: Engine): number {
  return (engine.store.db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n;
}

export const shellTask = (command: string, extra: Record<string, unknown> = {}) => ({
  instruction: `run ${command}`,
  command,
  ...extra,
});
