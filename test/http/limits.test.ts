import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { MAX_BODY_BYTES_DEFAULT } from '../../src/interfaces/http/app.js';
import { clientErrorOf, startServer, type RunningServer } from '../../src/interfaces/http/serve.js';
import { bearerFor, rememberServer } from '../helpers/credential.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { startServe } from '../reliability/helpers.js';
import { openEngine, serveEngine, shellTask } from './helpers.js';

/** What a raw socket got back: the status line's code, the headers, the body, and when the first byte came. */
interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  json: any;
  firstByteMs: number;
}

/** Connects to the server's port and resolves with the socket. */
function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads one reply off the socket (until the server closes it or the body has its length). */
function readReply(socket: Socket, began: number, ms = 20_000): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    let raw = Buffer.alloc(0);
    let firstByteMs = -1;
    const timer = setTimeout(
      () =>
        finish(
          new Error(`no whole reply within ${ms} ms; got ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`),
        ),
      ms,
    );
    const finish = (err?: Error) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.destroy();
      if (err) return reject(err);
      const text = raw.toString('utf8');
      const cut = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...headerLines] = text.slice(0, cut).split('\r\n');
      const headers = Object.fromEntries(
        headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const body = text.slice(cut + 4);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, json, firstByteMs });
    };
    const whole = (): boolean => {
      const text = raw.toString('utf8');
      const cut = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, cut))?.[1];
      return cut >= 0 && length !== undefined && Buffer.byteLength(text.slice(cut + 4)) >= Number(length);
    };
    const onData = (chunk: Buffer) => {
      if (firstByteMs < 0) firstByteMs = performance.now() - began;
      raw = Buffer.concat([raw, chunk]);
      if (whole()) finish();
    };
    socket.on('data', onData);
    socket.once('close', () => (raw.length > 0 ? finish() : finish(new Error('closed without a reply'))));
    socket.on('error', () => undefined); // a reset after the reply is expected: the server refused the rest
  });
}

function hostHeader(server: RunningServer): string {
  return new URL(server.url).host;
}

describe('bounded request bodies', () => {
  it('a 600 MB Content-Length is refused with 413 in the error shape at once, and the server does not grow', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const socket = await open(server.url);
    const rssBefore = process.memoryUsage().rss;
    const began = performance.now();
    socket.write(
      `POST /api/jobs HTTP/1.1\r\nHost: ${hostHeader(server)}\r\nAuthorization: Bearer ${server.secret}\r\nContent-Type: application/json\r\nContent-Length: ${600 * 1024 * 1024}\r\n\r\n`,
    );
    const reply = readReply(socket, began);
    // keep sending while the answer comes: a server that buffered would grow by what arrives
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    let sent = 0;
    for (let i = 0; i < 32 && !socket.destroyed; i++) {
      if (!socket.write(chunk)) await new Promise((r) => setTimeout(r, 10));
      sent += chunk.length;
    }
    const got = await reply;
    expect(got.status).toBe(413);
    expect(got.json).toEqual({
      error: { code: 'payload_too_large', message: expect.stringContaining('server.max_body_bytes') },
    });
    expect(got.firstByteMs).toBeLessThan(5_000);
    expect(sent).toBeGreaterThan(0);
    // bounded growth: far below the 600 MB claimed (the old server grew by what it read)
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(64 * 1024 * 1024);
    // still serving, and nothing was created
    expect((await server.call('GET', '/api/health')).status).toBe(200);
    expect(engine.list()).toHaveLength(0);
  });

  it('a chunked body is cut with 413 once it passes the cap', async () => {
    const engine = await openEngine();
    const server = await startServer({
      engine,
      host: '127.0.0.1',
      port: 0,
      tokens: {},
      version: 'test',
      maxBodyBytes: 64 * 1024,
    });
    try {
      const secret = rememberServer(server.url, engine.dataDir);
      const socket = await open(server.url);
      const began = performance.now();
      socket.write(
        `POST /api/lint HTTP/1.1\r\nHost: ${hostHeader(server)}\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      );
      const reply = readReply(socket, began);
      const piece = 'x'.repeat(16 * 1024);
      // 2 MiB offered in 16 KiB chunks; the server answers once 64 KiB have passed
      for (let i = 0; i < 128 && !socket.destroyed; i++) {
        socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
        await new Promise((r) => setImmediate(r));
      }
      const got = await reply;
      expect(got.status).toBe(413);
      expect(got.json.error.code).toBe('payload_too_large');
      expect(got.json.error.message).toContain('65536 bytes');
    } finally {
      await server.close();
    }
  });

  it('a body under the cap works, chunked or not, and the cap comes from the option', async () => {
    const engine = await openEngine();
    const server = await startServer({
      engine,
      host: '127.0.0.1',
      port: 0,
      tokens: {},
      version: 'test',
      maxBodyBytes: 64 * 1024,
    });
    try {
      rememberServer(server.url, engine.dataDir);
      const ws = makeWorkspace({ 'a.txt': 'a\n' });
      const request = {
        workspace: ws,
        verify: 'none',
        tasks: [shellTask('true', { instruction: `run true ${'.'.repeat(10_000)}` })],
      };
      const plain = await fetch(`${server.url}/api/lint`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearerFor(server.url) },
        body: JSON.stringify(request),
      });
      expect(plain.status).toBe(200);
      // fetch sends a stream body chunked (no Content-Length)
      const bytes = new TextEncoder().encode(JSON.stringify(request));
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 1000) controller.enqueue(bytes.subarray(i, i + 1000));
          controller.close();
        },
      });
      const chunked = await fetch(`${server.url}/api/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearerFor(server.url) },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).toBe(202);
      const job = (await chunked.json()) as { id: string };
      await engine.settled(job.id);
      // just over the cap with a Content-Length: refused
      const over = await fetch(`${server.url}/api/lint`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearerFor(server.url) },
        body: JSON.stringify({ ...request, context: 'y'.repeat(64 * 1024) }),
      });
      expect(over.status).toBe(413);
      expect(((await over.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    } finally {
      await server.close();
    }
  });

  it('the default cap is 1 MiB', async () => {
    expect(MAX_BODY_BYTES_DEFAULT).toBe(1024 * 1024);
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const at = await fetch(`${server.url}/api/lint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearerFor(server.url) },
      body: ' '.repeat(MAX_BODY_BYTES_DEFAULT + 1),
    });
    expect(at.status).toBe(413);
    const under = await fetch(`${server.url}/api/lint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearerFor(server.url) },
      body: `{}${' '.repeat(MAX_BODY_BYTES_DEFAULT - 2)}`,
    });
    expect(under.status).not.toBe(413);
  });
});

describe('the cap is configured', () => {
  it('server.max_body_bytes comes from the config file (default 1 MiB); out-of-range values are refused, named', () => {
    const data = tempDir('gaffer-limits-');
    expect(loadConfig({ dataDir: data, env: {} }).config.server.max_body_bytes).toBe(1024 * 1024);
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ server: { max_body_bytes: 4096 } }));
    const loaded = loadConfig({ dataDir: data, env: {} });
    expect(loaded.config.server.max_body_bytes).toBe(4096);
    expect(loaded.sources['server.max_body_bytes']).toBe('file');
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ server: { max_body_bytes: 10 } }));
    expect(() => loadConfig({ dataDir: data, env: {} })).toThrow(/server\.max_body_bytes/);
  });

  it('gaffer serve applies the configured cap', async () => {
    const data = join(tempDir('gaffer-limits-'), 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ server: { max_body_bytes: 4096 } }));
    const served = await startServe(data);
    const post = (bytes: number) =>
      fetch(`${served.url}/api/lint`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearerFor(served.url) },
        body: `{}${' '.repeat(bytes - 2)}`,
      });
    const over = await post(4097);
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    expect((await post(4096)).status).not.toBe(413);
  });
});

describe('errors Node answers itself are in the error shape', () => {
  it('a huge header gets 431 with the JSON error body', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const socket = await open(server.url);
    const began = performance.now();
    socket.write(`GET /api/health HTTP/1.1\r\nHost: ${hostHeader(server)}\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    const got = await readReply(socket, began);
    expect(got.status).toBe(431);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.json).toEqual({ error: { code: 'headers_too_large', message: expect.stringContaining('16384 bytes') } });
    expect((await server.call('GET', '/api/health')).status).toBe(200);
  });

  it('a request that is not HTTP gets 400 with the JSON error body', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const socket = await open(server.url);
    socket.write('NOT HTTP AT ALL\r\n\r\n');
    const got = await readReply(socket, performance.now());
    expect(got.status).toBe(400);
    expect(got.json.error.code).toBe('invalid_request');
  });

  it('each refusal of the parser has its code and status: 431, 408, 413, else 400', () => {
    const codeOf = (code: string) => clientErrorOf(Object.assign(new Error(code), { code })).code;
    expect(codeOf('HPE_HEADER_OVERFLOW')).toBe('headers_too_large');
    expect(codeOf('ERR_HTTP_REQUEST_TIMEOUT')).toBe('request_timeout');
    expect(codeOf('HPE_CHUNK_EXTENSIONS_OVERFLOW')).toBe('payload_too_large');
    expect(codeOf('HPE_INVALID_METHOD')).toBe('invalid_request');
  });
});
