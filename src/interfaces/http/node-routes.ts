import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { GafferError } from '../../domain/errors.js';
import type { NodeExchange } from '../../engine/engine.js';
import type { z } from 'zod';
import {
  claimSchema,
  HELLO_ROUTE,
  releaseSchema,
  TICKET_HEADER,
  UPLOAD_HEADER,
  wireProgressSchema,
  wireResultSchema,
} from '../../engine/execution/wire.js';

/** The largest claim body taken, bytes (one short field). */
const MAX_CLAIM_BYTES = 4_096;
/** The largest progress or report body taken, bytes. */
const MAX_REPORT_BYTES = 4 * 1024 ** 2;

/** Every route a worker node uses starts so (spec 09); no other route takes a node's credential. */
export const NODE_ROUTES = '/api/node/';

/**
 * The node a request to the node routes comes from, by its own credential (`Authorization: Bearer
 * <name>.<secret>`, issued by `gaffer nodes issue NAME` on the coordinator); refused when it is no
 * live credential of this coordinator's. A server that runs no cluster has no node routes.
 */
export function authenticateNode(c: Context, exchange: NodeExchange | null): string {
  if (exchange === null)
    throw new GafferError(
      'not_found',
      `no route ${c.req.method} ${c.req.path}: this server runs no cluster (gaffer serve --queue redis://…)`,
    );
  const token = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '')?.[1]?.trim();
  const node = token === undefined ? null : exchange.authenticate(token);
  if (node === null)
    throw new GafferError(
      'unauthorized',
      "a node route needs this node's own credential, as issued and not revoked: Authorization: Bearer <name>.<secret> (gaffer nodes issue NAME on the coordinator prints it; give it to the node in GAFFER_NODE_TOKEN or --token-file)",
    );
  return node;
}

/** A JSON body of at most `max` bytes read against `schema`, or a refusal naming the field and what is wanted. */
async function bodyOf<S extends z.ZodTypeAny>(c: Context, schema: S, max: number, what: string): Promise<z.infer<S>> {
  const text = await c.req.text();
  if (text.length > max)
    throw new GafferError('payload_too_large', `${what} is at most ${max} bytes, got ${text.length}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GafferError('invalid_request', `${what} is JSON`, '');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    const got = issue?.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | null)?.[k], json);
    throw new GafferError(
      'invalid_request',
      `${what}'s ${field || 'body'} is not valid (${issue?.message ?? 'unreadable'}), got ${String(JSON.stringify(got)).slice(0, 80)}`,
      field,
    );
  }
  return parsed.data as z.infer<S>;
}

/**
 * The node routes (spec 09): the attempt behind a queue entry, claimed by the node it was offered
 * to; the attempt's base bundle, its result bundle sent back, its output, its heartbeat, its release
 * (given back) and its report. All but
 * the claim need the attempt's ticket (`gaffer-ticket`), which only the claim hands out.
 */
export function mountNodeRoutes<E extends { Variables: Record<string, unknown> }>(
  app: Hono<E>,
  exchange: () => NodeExchange | null,
): void {
  const ticketOf = (c: Context) => {
    const ticket = c.req.header(TICKET_HEADER);
    if (!ticket)
      throw new GafferError(
        'unauthorized',
        `the attempt's ticket is missing: send it in ${TICKET_HEADER}`,
        TICKET_HEADER,
      );
    return ticket;
  };
  // a node's check of its credential and its path here, before it takes anything (authenticateNode ran)
  app.get(HELLO_ROUTE, (c) => c.json({ ok: true }, 200, { 'cache-control': 'no-store' }));
  app.post(`${NODE_ROUTES}attempts/:key/claim`, async (c) => {
    const ex = exchange() as NodeExchange;
    const node = authenticateNode(c, ex);
    const claim = await bodyOf(c, claimSchema, MAX_CLAIM_BYTES, 'a claim ({"once": the entry\'s one-time value})');
    const attempt = await ex.claim(c.req.param('key'), claim, node);
    return c.json({ attempt }, 200, { 'cache-control': 'no-store' });
  });
  app.post(`${NODE_ROUTES}attempts/:key/progress`, async (c) => {
    const ex = exchange() as NodeExchange;
    const node = authenticateNode(c, ex);
    const progress = await bodyOf(c, wireProgressSchema, MAX_REPORT_BYTES, 'a progress update');
    ex.progress(c.req.param('key'), ticketOf(c), node, progress);
    return c.json({ ok: true });
  });
  app.post(`${NODE_ROUTES}attempts/:key/report`, async (c) => {
    const ex = exchange() as NodeExchange;
    const node = authenticateNode(c, ex);
    const result = await bodyOf(c, wireResultSchema, MAX_REPORT_BYTES, "an attempt's report");
    ex.report(c.req.param('key'), ticketOf(c), node, result);
    return c.json({ ok: true });
  });
  app.post(`${NODE_ROUTES}attempts/:key/beat`, (c) => {
    const ex = exchange() as NodeExchange;
    ex.beat(c.req.param('key'), ticketOf(c), authenticateNode(c, ex));
    return c.json({ ok: true }, 200, { 'cache-control': 'no-store' });
  });
  app.post(`${NODE_ROUTES}attempts/:key/release`, async (c) => {
    const ex = exchange() as NodeExchange;
    const node = authenticateNode(c, ex);
    const { why } = await bodyOf(c, releaseSchema, MAX_CLAIM_BYTES, 'a release ({"why": why the node gives it back})');
    ex.release(c.req.param('key'), ticketOf(c), node, why);
    return c.json({ ok: true });
  });
  app.get(`${NODE_ROUTES}attempts/:key/base`, async (c) => {
    const ex = exchange() as NodeExchange;
    const { file, size } = await ex.base(c.req.param('key'), ticketOf(c), authenticateNode(c, ex));
    const body = Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>;
    return c.body(body, 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(size),
      'cache-control': 'no-store',
    });
  });
  app.put(`${NODE_ROUTES}attempts/:key/result`, async (c) => {
    const body = c.req.raw.body;
    if (body === null)
      throw new GafferError('invalid_request', "the body must be the git bundle of the attempt's commit", '');
    const ex = exchange() as NodeExchange;
    const { bytes } = await ex.putResult(
      c.req.param('key'),
      ticketOf(c),
      authenticateNode(c, ex),
      c.req.header(UPLOAD_HEADER) ?? '',
      body,
    );
    return c.json({ ok: true, bytes });
  });
}
