// The scripted model server: one node:http server on 127.0.0.1 that answers four model APIs from a script.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiAdapter, RenderContext } from './adapter.js';
import { autoText } from './auto.js';
import { DEFAULT_MODEL, buildAnswer, contentTypeOf, errorPayload, renderChunks, type Framing } from './answer.js';
import { answerFixed } from './fixed.js';
import { drop, headersOf, listen, readBody, sendJson, sleep } from './http.js';
import { createIdFactory } from './ids.js';
import { routeOf, type ModelRoute } from './routes.js';
import { Script } from './script.js';
import { isRecord } from './text.js';
import type { ErrorSpec, ModelRequest, ReplyTurn, ScriptOptions, ScriptStep, StallTurn, Turn } from './types.js';

/** How to start a model server. */
export interface ModelServerOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Also listen on this unix socket (reachable from inside a loopback-only network namespace through a bridge). */
  socketPath?: string;
  /** The first script. */
  script?: ScriptStep[];
  /** Side-request policy of the first script. */
  auto?: ScriptOptions['auto'];
  /** Models listed by `GET /v1/models` and `GET /v1beta/models` (models asked for are added). */
  models?: string[];
}

/** Any HTTP request the server saw, model call or not (HEAD / warm-ups, model lists, token counts). */
export interface HttpHit {
  method: string;
  path: string;
  status: number;
}

interface Waiter {
  count: number;
  resolve: (requests: ModelRequest[]) => void;
}

/** A running scripted model server. */
export class ModelServer {
  readonly #servers: Server[];
  readonly #script = new Script();
  readonly #requests: ModelRequest[] = [];
  readonly #hits: HttpHit[] = [];
  readonly #waiters = new Set<Waiter>();
  readonly #inflight = new Set<AbortController>();
  readonly #models: Set<string>;
  readonly #newId = createIdFactory();
  /** `http://127.0.0.1:PORT`, without a trailing slash or API prefix. */
  readonly url: string;
  readonly port: number;
  /** The unix socket it also listens on, when asked. */
  readonly socketPath: string | undefined;

  private constructor(servers: Server[], port: number, host: string, options: ModelServerOptions) {
    this.#servers = servers;
    this.port = port;
    this.url = `http://${host}:${port}`;
    this.socketPath = options.socketPath;
    this.#models = new Set(options.models ?? [DEFAULT_MODEL]);
    this.#script.load(options.script ?? [], { auto: options.auto });
    for (const server of servers)
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        // a client that hangs up mid-body: nothing to answer
        this.#handle(req, res).catch(() => res.destroy());
      });
  }

  /** Starts a server and waits until it listens. */
  static async start(options: ModelServerOptions = {}): Promise<ModelServer> {
    const host = options.host ?? '127.0.0.1';
    const tcp = createServer();
    await listen(tcp, () => tcp.listen(options.port ?? 0, host));
    const servers = [tcp];
    if (options.socketPath !== undefined) {
      const unix = createServer();
      await listen(unix, () => unix.listen(options.socketPath));
      servers.push(unix);
    }
    return new ModelServer(servers, (tcp.address() as AddressInfo).port, host, options);
  }

  /** Replaces the pending turns; each model request takes the first pending turn that accepts it. */
  script(steps: ScriptStep[], options: ScriptOptions = {}): this {
    this.#script.load(steps, options);
    return this;
  }

  /** Every model request so far, in arrival order (a copy). */
  get requests(): ModelRequest[] {
    return [...this.#requests];
  }

  /** Every HTTP request so far, model calls included. */
  get hits(): HttpHit[] {
    return [...this.#hits];
  }

  /** Scripted turns not used yet. */
  get pending(): number {
    return this.#script.pending;
  }

  /** Resolves once `count` model requests have arrived; rejects after `timeoutMs` naming what did arrive. */
  waitForRequests(count: number, timeoutMs = 10_000): Promise<ModelRequest[]> {
    if (this.#requests.length >= count) return Promise.resolve(this.requests);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        count,
        resolve: (requests) => {
          clearTimeout(timer);
          resolve(requests);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        const seen = this.#requests.map((r) => `#${r.index} ${r.api} ${r.model}`).join(', ') || 'none';
        reject(
          new Error(
            `model-server: waited ${timeoutMs} ms for ${count} model request(s), got ${this.#requests.length} (${seen})`,
          ),
        );
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Stops listening, ends stalls and drops open connections. */
  async close(): Promise<void> {
    for (const controller of this.#inflight) controller.abort();
    await Promise.all(
      this.#servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://model-server');
    const method = req.method ?? 'GET';
    const hit: HttpHit = { method, path: url.pathname, status: 0 };
    this.#hits.push(hit);
    res.on('close', () => {
      hit.status = res.headersSent ? res.statusCode : 0;
    });
    let raw: string;
    try {
      raw = await readBody(req);
    } catch (error) {
      sendJson(res, 400, {
        error: { message: `model-server: cannot read the request body: ${(error as Error).message}` },
      });
      return;
    }
    const route = routeOf(method, url.pathname);
    if (route === undefined) {
      sendJson(res, 404, { error: { message: `model-server: no route for ${method} ${url.pathname}` } });
      return;
    }
    if (route.kind !== 'model') {
      answerFixed(route, { raw, method, models: [...this.#models] }, res);
      return;
    }
    await this.#answerModel(route, req, url, raw, res);
  }

  async #answerModel(
    route: ModelRoute,
    req: IncomingMessage,
    url: URL,
    raw: string,
    res: ServerResponse,
  ): Promise<void> {
    let body: Record<string, any> = {};
    let invalid: string | undefined;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isRecord(parsed)) body = parsed;
      else invalid = 'the request body is not a JSON object';
    } catch (error) {
      invalid = `the request body is not JSON: ${(error as Error).message}`;
    }
    const view = route.adapter.inspect(body, route.pathModel);
    const request: ModelRequest = {
      ...view,
      index: this.#requests.length,
      api: route.api,
      method: req.method ?? 'POST',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: headersOf(req),
      body,
      stream: route.stream ?? view.stream,
      hasTools: view.toolNames.length > 0,
      isToolResult: view.lastRole === 'tool',
    };
    if (request.model !== '') this.#models.add(request.model);
    this.#record(request);
    res.on('close', () => {
      request.status ??= 0;
    });
    const ctx: RenderContext = { request, newId: this.#newId };
    if (invalid !== undefined) {
      request.answeredBy = 'invalid';
      this.#sendError(route.adapter, ctx, res, { status: 400, message: `model-server: ${invalid}` });
      return;
    }
    const controller = new AbortController();
    this.#inflight.add(controller);
    res.on('close', () => {
      controller.abort();
      this.#inflight.delete(controller);
    });
    try {
      const pick = this.#script.take(request);
      if (pick.kind === 'none') {
        request.answeredBy = 'exhausted';
        const why =
          pick.pending === 0 ? 'no turns left' : `${pick.pending} pending turn(s), none whose \`when\` accepts it`;
        const message = `model-server: script exhausted: nothing answers request #${request.index} (${request.api} ${request.path}, model ${request.model || '?'}): ${why}`;
        this.#sendError(route.adapter, ctx, res, { status: 500, message });
        return;
      }
      request.answeredBy = pick.kind;
      if (pick.kind === 'turn') request.turn = pick.index;
      const turn: Turn = pick.kind === 'auto' ? { auto: true } : pick.turn;
      await this.#serve(turn, route, ctx, raw.length, res, controller.signal);
    } catch (error) {
      // a throwing predicate or reply function is a test bug: say so on the wire and keep serving
      if (!res.headersSent)
        this.#sendError(route.adapter, ctx, res, {
          status: 500,
          message: `model-server: the script threw: ${(error as Error).message}`,
        });
      else res.destroy();
    }
  }

  async #serve(
    turn: Turn,
    route: ModelRoute,
    ctx: RenderContext,
    bodyChars: number,
    res: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    if ('reply' in turn) return this.#serve(turn.reply(ctx.request), route, ctx, bodyChars, res, signal);
    if ('error' in turn) return this.#sendError(route.adapter, ctx, res, turn.error);
    if ('stall' in turn) return this.#stall(turn, route, ctx, bodyChars, res, signal);
    const reply: ReplyTurn = 'auto' in turn ? { ...turn, text: autoText(ctx.request, this.#script.autoText) } : turn;
    await this.#writeAnswer(reply, route, ctx, bodyChars, res, signal);
  }

  async #stall(
    turn: StallTurn,
    route: ModelRoute,
    ctx: RenderContext,
    bodyChars: number,
    res: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    const then = turn.then;
    const replyAfter = then === undefined || !('error' in then || 'stall' in then || 'reply' in then);
    if (turn.midStream === true && ctx.request.stream && replyAfter) {
      const reply: ReplyTurn =
        then === undefined
          ? { ...turn, text: '' }
          : 'auto' in then
            ? { ...then, text: autoText(ctx.request, this.#script.autoText) }
            : then;
      await this.#writeAnswer(reply, route, ctx, bodyChars, res, signal, {
        ms: turn.stall,
        resume: then !== undefined,
      });
      return;
    }
    if (!(await sleep(turn.stall, signal))) return;
    if (then === undefined) {
      drop(ctx.request, res);
      return;
    }
    await this.#serve(then, route, ctx, bodyChars, res, signal);
  }

  async #writeAnswer(
    turn: ReplyTurn,
    route: ModelRoute,
    ctx: RenderContext,
    bodyChars: number,
    res: ServerResponse,
    signal: AbortSignal,
    stall?: { ms: number; resume: boolean },
  ): Promise<void> {
    const answer = buildAnswer(turn, ctx.request, bodyChars);
    const framing: Framing = !ctx.request.stream
      ? 'json'
      : route.api === 'gemini' && ctx.request.query.alt !== 'sse'
        ? 'json-array'
        : 'sse';
    const chunks = renderChunks(route.adapter, answer, ctx, framing);
    ctx.request.status = 200;
    res.writeHead(200, {
      'content-type': contentTypeOf(framing),
      'cache-control': 'no-cache',
      ...route.adapter.headers(ctx),
    });
    const stallAt = stall === undefined ? -1 : framing === 'sse' ? route.adapter.preamble : 0;
    for (const [i, chunk] of chunks.entries()) {
      if (i === stallAt && stall !== undefined) {
        res.flushHeaders();
        if (!(await sleep(stall.ms, signal))) return;
        if (!stall.resume) {
          res.destroy(); // the record keeps 200: the headers went out
          return;
        }
      }
      if (signal.aborted) return;
      res.write(chunk);
      if (turn.pace !== undefined && turn.pace > 0 && !(await sleep(turn.pace, signal))) return;
    }
    res.end();
  }

  #sendError(adapter: ApiAdapter, ctx: RenderContext, res: ServerResponse, spec: ErrorSpec): void {
    const headers = { 'content-type': 'application/json', ...adapter.headers(ctx), ...(spec.headers ?? {}) };
    ctx.request.status = spec.status;
    res.writeHead(spec.status, headers).end(errorPayload(adapter, spec));
  }

  #record(request: ModelRequest): void {
    this.#requests.push(request);
    for (const waiter of this.#waiters) {
      if (this.#requests.length < waiter.count) continue;
      this.#waiters.delete(waiter);
      waiter.resolve(this.requests);
    }
  }
}

/** Starts a scripted model server on 127.0.0.1 (ephemeral port unless told). */
export function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  return ModelServer.start(options);
}
