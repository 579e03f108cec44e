import { serve, type ServerType } from '@hono/node-server';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { GafferError } from '../../domain/errors.js';
import type { Engine } from '../../engine/engine.js';
import { ensureSecret, secretPath } from '../../config/local-secret.js';
import { createApp } from './app.js';
import { Credentials } from './credentials.js';
import { rawErrorResponse } from './errors.js';
import type { StreamCounters } from './sse.js';

/** How `gaffer serve` listens. */
export interface ServeOptions {
  engine: Engine;
  host: string;
  port: number;
  tokens: Record<string, string>;
  version: string;
  /** Largest request body, bytes (config `server.max_body_bytes`; default 1 MiB). */
  maxBodyBytes?: number;
}

/** Request headers past this many bytes are refused with 431 by Node's parser, before any handler. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** A running server. */
export interface RunningServer {
  url: string;
  /** The board's address with a one-time login token (the local user's session): printed by `gaffer serve`. */
  loginUrl: string;
  counters: StreamCounters;
  /** Stops accepting, interrupts live jobs (evidence collected), ends streams, closes. */
  close(reason?: string): Promise<void>;
}

/** `server.json` in the data dir while a server runs: how CLIs on the same data dir find it (spec 02). */
export interface ServerRecord {
  pid: number;
  url: string;
  started: number;
  version: string;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** True for a loopback bind address. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host.toLowerCase()) || /^127\./.test(host);
}

/** Starts the HTTP API (with /mcp) and records it in `server.json`. */
export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  const loopback = isLoopback(opts.host);
  if (!loopback && Object.keys(opts.tokens).length === 0) {
    throw new GafferError(
      'invalid_request',
      `binding ${opts.host} (not loopback) needs tokens: configure "tokens" in gaffer.config.json or GAFFER_TOKENS, or bind 127.0.0.1`,
      'host',
    );
  }
  let allowedHosts: Set<string> | null = null;
  const mcp = async (request: Request, caller: { owner: string | null; cwd: string | null }): Promise<Response> => {
    // the MCP SDK is loaded by the first MCP request: a server nobody speaks MCP to never pays its ~25 MB
    const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([
      import('../mcp/server.js'),
      import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    ]);
    const server = createMcpServer(opts.engine, caller, opts.version);
    // stateless: one MCP server and transport per request; SSE responses carry progress notifications
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    // a client that goes away leaves nothing behind: closing the server aborts its tool calls (waits)
    request.signal.addEventListener('abort', () => void server.close().catch(() => undefined), { once: true });
    return transport.handleRequest(request);
  };
  const credentials = new Credentials({
    secret: ensureSecret(opts.engine.dataDir),
    secretFile: secretPath(opts.engine.dataDir),
    tokens: opts.tokens,
  });
  const { app, counters } = createApp(opts.engine, {
    credentials,
    allowedHosts: () => allowedHosts,
    version: opts.version,
    mcp,
    ...(opts.maxBodyBytes !== undefined ? { maxBodyBytes: opts.maxBodyBytes } : {}),
  });

  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve(
      { fetch: app.fetch, hostname: opts.host, port: opts.port, serverOptions: { maxHeaderSize: MAX_HEADER_BYTES } },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  // Node answers what its parser refuses (431, 408, 400) itself, in plain text: answer in the error shape
  server.on('clientError', answerClientError);
  const { port } = server.address() as AddressInfo;
  const hostForUrl = opts.host.includes(':') && !opts.host.startsWith('[') ? `[${opts.host}]` : opts.host;
  const url = `http://${hostForUrl}:${port}`;
  if (loopback)
    allowedHosts = new Set([
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      `${hostForUrl.toLowerCase()}:${port}`,
    ]);

  const recordFile = join(opts.engine.dataDir, 'server.json');
  const record: ServerRecord = { pid: process.pid, url, started: Date.now() / 1000, version: opts.version };
  // written whole or not at all: a CLI reading it mid-write would think there is no server; 0600 like the rest of the data dir
  writeFileSync(`${recordFile}.${process.pid}.tmp`, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${recordFile}.${process.pid}.tmp`, recordFile);

  let closing: Promise<void> | null = null;
  return {
    url,
    loginUrl: `${url}/?login=${credentials.mintLogin(null)}`,
    counters,
    close(reason = 'interrupted by a shutdown of gaffer') {
      closing ??= (async () => {
        server.close(); // stop accepting; open streams end below
        await opts.engine.shutdown(reason, { keepStoreOpen: true });
        // give streams a moment to write their `end` events (they read the store), then drop what is left
        await waitFor(() => counters.sseClients === 0, 2_000);
        const http = server as unknown as { closeAllConnections?: () => void };
        http.closeAllConnections?.();
        await waitFor(() => counters.sseClients === 0, 500);
        await opts.engine.close();
        removeRecordIfOurs(recordFile);
      })();
      return closing;
    },
  };
}

/** The server recorded in the data dir, when its process is alive. */
export function readServerRecord(dataDir: string): ServerRecord | null {
  try {
    const record = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as ServerRecord;
    process.kill(record.pid, 0);
    return record;
  } catch {
    return null;
  }
}

/** What Node's HTTP parser refused, as the spec 02 error a client can read. */
export function clientErrorOf(err: NodeJS.ErrnoException): GafferError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new GafferError(
        'headers_too_large',
        `the request headers are larger than ${MAX_HEADER_BYTES} bytes: send fewer or shorter headers`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new GafferError('payload_too_large', 'the chunk extensions of the request body are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GafferError('request_timeout', 'the request did not arrive in time');
    default:
      return new GafferError('invalid_request', `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'})`);
  }
}

/** How long a refused connection is read (and dropped) after the answer, so closing it does not reset it before the client reads the answer. */
const CLIENT_ERROR_LINGER_MS = 500;
const answeredSockets = new WeakSet<Duplex>();

function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // the parser fails again on every chunk that still arrives: answer once
  if (answeredSockets.has(socket)) return;
  answeredSockets.add(socket);
  // as Node's own handler: never write into a response already under way, nor to a reset peer
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(clientErrorOf(err)));
  socket.resume();
  setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
}

function removeRecordIfOurs(file: string): void {
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as ServerRecord;
    if (record.pid === process.pid) rmSync(file, { force: true });
  } catch {
    // already gone
  }
}

async function waitFor(condition: () => boolean, ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (!condition() && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
}
