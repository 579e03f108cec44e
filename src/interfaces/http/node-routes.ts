import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { GafferError } from '../../domain/errors.js';
import type { NodeExchange } from '../../engine/engine.js';
import { TICKET_HEADER, UPLOAD_HEADER } from '../../engine/execution/wire.js';

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
 * The node routes (spec 09): an attempt's base bundle, and its result bundle sent back. Each needs
 * the attempt's ticket (`gaffer-ticket`), which only that attempt's queue entry carries.
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
