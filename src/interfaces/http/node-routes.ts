import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { GafferError } from '../../domain/errors.js';
import type { NodeExchange } from '../../engine/engine.js';
import { claimSchema, HELLO_ROUTE, TICKET_HEADER, UPLOAD_HEADER } from '../../engine/execution/wire.js';

/** The largest claim body taken, bytes (three short fields). */
const MAX_CLAIM_BYTES = 4_096;

/** Every route a worker node uses starts so (spec 09); no other route takes the node token. */
export const NODE_ROUTES = '/api/node/';

/**
 * Refuses a request to the node routes that is not from a node of this coordinator's cluster:
 * `Authorization: Bearer <node token>`. A server that runs no cluster has no node routes.
 */
export function authenticateNode(c: Context, exchange: NodeExchange | null): void {
  if (exchange === null)
    throw new GafferError(
      'not_found',
      `no route ${c.req.method} ${c.req.path}: this server runs no cluster (gaffer serve --queue redis://…)`,
    );
  const token = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '')?.[1]?.trim();
  if (token === undefined || !exchange.isNode(token))
    throw new GafferError(
      'unauthorized',
      "a node route needs the coordinator's node token: Authorization: Bearer <GAFFER_NODE_TOKEN>",
    );
}

/**
 * The node routes (spec 09): the attempt behind a queue entry, claimed by the node that took the
 * entry; the attempt's base bundle, and its result bundle sent back. The last two need the
 * attempt's ticket (`gaffer-ticket`), which only the claim hands out.
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
  // a node's check of its token and its path here, before it takes anything (authenticateNode ran)
  app.get(HELLO_ROUTE, (c) => c.json({ ok: true }, 200, { 'cache-control': 'no-store' }));
  app.post(`${NODE_ROUTES}attempts/:key/claim`, async (c) => {
    const text = await c.req.text();
    if (text.length > MAX_CLAIM_BYTES)
      throw new GafferError('payload_too_large', `a claim is at most ${MAX_CLAIM_BYTES} bytes, got ${text.length}`);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new GafferError('invalid_request', 'a claim is JSON: {"once": …, "lock": …, "node": …}', '');
    }
    const parsed = claimSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join('.') ?? '';
      const got = issue?.path.reduce<unknown>((v, k) => (v as Record<PropertyKey, unknown> | null)?.[k], json);
      throw new GafferError(
        'invalid_request',
        `the claim's ${field || 'body'} is not valid (${issue?.message ?? 'unreadable'}), got ${String(JSON.stringify(got)).slice(0, 80)}: send {"once": the entry's one-time value, "lock": your BullMQ lock token, "node": your name}`,
        field,
      );
    }
    const attempt = await (exchange() as NodeExchange).claim(c.req.param('key'), parsed.data);
    return c.json({ attempt }, 200, { 'cache-control': 'no-store' });
  });
  app.get(`${NODE_ROUTES}attempts/:key/base`, async (c) => {
    const { file, size } = await (exchange() as NodeExchange).base(c.req.param('key'), ticketOf(c));
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
    const { bytes } = await (exchange() as NodeExchange).putResult(
      c.req.param('key'),
      ticketOf(c),
      c.req.header(UPLOAD_HEADER) ?? '',
      body,
    );
    return c.json({ ok: true, bytes });
  });
}
