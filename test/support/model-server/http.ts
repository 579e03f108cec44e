// Plain node:http plumbing for the model server: listening, bodies, JSON answers, abortable waits.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import * as zlib from 'node:zlib';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { ModelRequest } from './types.js';

/** Hangs up without an answer (status 0 on the record, set before the client can see the reset). */
export function drop(request: ModelRequest, res: ServerResponse): void {
  request.status = 0;
  res.destroy();
}

/** Starts a server listening and waits until it does. */
export function listen(server: Server, start: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      resolve();
    });
    start();
  });
}

/** The request body as text, decompressed. */
export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return decodeBody(Buffer.concat(chunks), req.headers['content-encoding']);
}

/** Undoes a compressed request body (codex may compress). */
function decodeBody(raw: Buffer, encoding: string | undefined): string {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
      return gunzipSync(raw).toString('utf8');
    case 'deflate':
      return inflateSync(raw).toString('utf8');
    case 'br':
      return brotliDecompressSync(raw).toString('utf8');
    case 'zstd': {
      // node:zlib has zstd from Node 22.15 only
      const zstd = (zlib as { zstdDecompressSync?: (input: Buffer) => Buffer }).zstdDecompressSync;
      if (zstd === undefined) throw new Error(`zstd request bodies need Node >= 22.15 (this is ${process.version})`);
      return zstd(raw).toString('utf8');
    }
    default:
      return raw.toString('utf8');
  }
}

/** Request headers as one string each. */
export function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers))
    if (value !== undefined) out[key] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

/** Answers with a JSON body. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Waits `ms`; false when the request was aborted (client gone, server closing) first. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
