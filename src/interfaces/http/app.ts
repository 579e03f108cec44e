import { parseApproveBody } from '../../domain/approval.js';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import {
  compactJobSchema,
  jobAnswerSchema,
  jobListSchema,
  progressSchema,
  steerAnswerSchema,
  waitAnswerSchema,
} from '../../domain/answer-schema.js';
import { GafferError } from '../../domain/errors.js';
import { whyNotRelative } from '../../domain/request.js';
import type { Engine } from '../../engine/engine.js';
import { LOG_TAIL_DEFAULT, LOG_TAIL_MAX } from '../../engine/queries/job-files.js';
import { checkAnswer } from '../answer-check.js';
import { COORDINATOR_GUIDE } from '../guide.js';
import { BOARD_CSP, BoardFiles } from './board-files.js';
import { authenticate, isOpenRoute, missingCredential, redeemLogin } from './auth.js';
import type { Credentials } from './credentials.js';
import { badQuery, errorResponse } from './errors.js';
import { StreamCounters, streamAllJobs, streamJob } from './sse.js';
import { authenticateNode, mountNodeRoutes, NODE_ROUTES } from './node-routes.js';

/** What the HTTP app needs besides the engine. */
export interface AppOptions {
  /** What the server accepts: the data dir's secret, the configured tokens, board sessions. */
  credentials: Credentials;
  /**
   * Host header values the listener accepts (DNS-rebinding guard); null: any (a non-loopback bind
   * with tokens). A function, because the port is known only once the listener is up.
   */
  allowedHosts: () => Set<string> | null;
  version: string;
  /** Mounted at /mcp when given. */
  mcp?: (request: Request, caller: { owner: string | null; cwd: string | null }) => Promise<Response>;
  counters?: StreamCounters;
  /** The built board's folder (default: dist/board of this package). */
  boardDir?: string;
  /** Largest request body accepted, bytes (default {@link MAX_BODY_BYTES_DEFAULT}); more is a 413. */
  maxBodyBytes?: number;
}

type Env = { Variables: { owner: string | null } };

/** Waits over HTTP are capped so a proxy never holds a request for ever (spec 02: `wait` max 600 s). */
export const WAIT_MAX_S = 600;

/** Request bodies are capped (config `server.max_body_bytes`): one 600 MB POST once took the server to 1.3 GB. */
export const MAX_BODY_BYTES_DEFAULT = 1024 * 1024;

/** The HTTP API of spec 02: thin adapters over the engine, one error vocabulary. */
export function createApp(engine: Engine, opts: AppOptions): { app: Hono<Env>; counters: StreamCounters } {
  const app = new Hono<Env>();
  const counters = opts.counters ?? new StreamCounters();
  const { credentials } = opts;

  app.onError((err, c) => errorResponse(c, err));
  app.notFound((c) =>
    errorResponse(c, new GafferError('not_found', `no route ${c.req.method} ${c.req.path} — see GET /api/guide`)),
  );

  app.use('*', async (c, next) => {
    // DNS rebinding: a page elsewhere must not drive the loopback API through the browser
    const allowed = opts.allowedHosts();
    if (allowed) {
      const host = (c.req.header('host') ?? '').toLowerCase();
      if (!allowed.has(host))
        throw new GafferError('forbidden', `Host ${JSON.stringify(host)} is not accepted by this listener`);
      const origin = c.req.header('origin');
      if (origin !== undefined && !allowed.has(hostOfOrigin(origin))) {
        throw new GafferError('forbidden', `Origin ${JSON.stringify(origin)} is not accepted by this listener`);
      }
    }
    // spec 09: a worker node's routes take a node's own credential, and no other route does
    if (c.req.path.startsWith(NODE_ROUTES)) {
      authenticateNode(c, engine.cluster?.exchange ?? null);
      c.set('owner', null);
      await next();
      return undefined;
    }
    // issue 11: a credential even on loopback, so nothing else on the machine drives the API
    const login = c.req.method === 'GET' && c.req.path === '/' ? c.req.query('login') : undefined;
    if (login !== undefined) return redeemLogin(c, credentials, login);
    const principal = authenticate(c, credentials);
    if (principal === null && !isOpenRoute(c, credentials)) throw missingCredential(c, credentials);
    c.set('owner', principal?.owner ?? null);
    await next();
    return undefined;
  });
  // refused before it is buffered: a Content-Length over the cap at once, a chunked body once it passes it
  const maxBodyBytes = opts.maxBodyBytes ?? MAX_BODY_BYTES_DEFAULT;
  const limitBody = bodyLimit({
    maxSize: maxBodyBytes,
    onError: () => {
      throw new GafferError(
        'payload_too_large',
        `the request body is larger than ${maxBodyBytes} bytes: send less, or raise server.max_body_bytes in the config`,
      );
    },
  });
  // a node's result bundle is streamed to disk under a cap of its own (engine/execution/exchange.ts)
  app.use('*', (c, next) => (c.req.path.startsWith(NODE_ROUTES) ? next() : limitBody(c, next)));
  mountNodeRoutes(app, () => engine.cluster?.exchange ?? null);

  const owner = (c: Context<Env>) => c.get('owner');
  const body = async (c: Context<Env>): Promise<unknown> => {
    try {
      return await c.req.json();
    } catch {
      throw new GafferError('invalid_request', 'the body must be JSON (Content-Type: application/json)', '');
    }
  };

  app.post('/api/jobs', async (c) => {
    const { job, created } = engine.submit(await body(c), {
      owner: owner(c),
      idempotencyKey: c.req.header('idempotency-key') ?? null,
      cwd: clientCwd(c),
    });
    return c.json(checkAnswer(compactJobSchema, job, 'POST /api/jobs'), created ? 202 : 200);
  });
  app.get('/api/jobs', (c) => {
    const limit = intQuery(c, 'limit', 50, 1, 1_000);
    const status = c.req.query('status') || undefined;
    return c.json(
      checkAnswer(
        jobListSchema,
        { jobs: engine.list({ owner: owner(c), limit, ...(status ? { status } : {}) }) },
        'GET /api/jobs',
      ),
    );
  });
  app.get('/api/jobs/:id', (c) => {
    const full = flag(c, 'full');
    return c.json(
      checkAnswer(
        jobAnswerSchema(full),
        engine.get(c.req.param('id'), { owner: owner(c), full }),
        full ? 'GET /api/jobs/:id?full=1' : 'GET /api/jobs/:id',
      ),
    );
  });
  app.post('/api/jobs/:id/approve', async (c) => {
    // a job the caller cannot see is not found, whatever the body says
    engine.get(c.req.param('id'), { owner: owner(c) });
    const { approve, note } = parseApproveBody(await body(c));
    return c.json(
      checkAnswer(
        compactJobSchema,
        engine.approve(c.req.param('id'), approve, { owner: owner(c), note }),
        'POST /api/jobs/:id/approve',
      ),
    );
  });
  app.get('/api/asks', (c) => c.json({ asks: engine.openAsks({ owner: owner(c) }) }));
  app.post('/api/jobs/:id/cancel', (c) =>
    c.json(
      checkAnswer(compactJobSchema, engine.cancel(c.req.param('id'), { owner: owner(c) }), 'POST /api/jobs/:id/cancel'),
    ),
  );
  app.get('/api/jobs/:id/wait', async (c) => {
    const timeoutS = numberQuery(c, 'timeout_s', 120, 0, WAIT_MAX_S);
    // a client that goes away ends the wait (spec 02: nothing left behind)
    const answer = await engine.waitFor(c.req.param('id'), c.req.query('for') ?? 'done', timeoutS, {
      owner: owner(c),
      signal: c.req.raw.signal,
    });
    return c.json(checkAnswer(waitAnswerSchema, answer, 'GET /api/jobs/:id/wait'));
  });
  app.get('/api/jobs/:id/events', (c) => {
    const id = c.req.param('id');
    if (flag(c, 'stream')) {
      engine.get(id, { owner: owner(c) }); // 404 before the stream opens
      const last = Number(c.req.header('last-event-id') ?? c.req.query('after') ?? 0);
      return streamJob(c, engine, id, owner(c), Number.isFinite(last) && last > 0 ? Math.floor(last) : 0, counters);
    }
    const answer = engine.events(id, { owner: owner(c), after: intQuery(c, 'after', 0, 0, Number.MAX_SAFE_INTEGER) });
    if (!flag(c, 'states')) return c.json(answer);
    const states = checkAnswer(
      progressSchema,
      engine.get(id, { owner: owner(c) }).progress ?? {},
      'GET /api/jobs/:id/events?states=1',
    );
    return c.json({ ...answer, worker_states: states });
  });
  app.get('/api/jobs/:id/diff', async (c) => {
    const path = c.req.query('path');
    if (!path) throw badQuery('path', 'required: the changed file to diff', path ?? null);
    const why = whyNotRelative(path);
    if (why) throw badQuery('path', why, path);
    // a worktree job's diff is per task branch; a shared job's refuses one
    const task = c.req.query('task');
    if (task === '') throw badQuery('task', "must be a task's name, or left out", task);
    return c.text(await engine.diff(c.req.param('id'), path, { owner: owner(c), task }));
  });
  app.get('/api/jobs/:id/workers/:name/log', (c) => {
    const tail = intQuery(c, 'tail', LOG_TAIL_DEFAULT, 0, LOG_TAIL_MAX);
    return c.text(engine.workerLog(c.req.param('id'), c.req.param('name'), tail, { owner: owner(c) }));
  });
  app.post('/api/jobs/:id/redispatch', (c) => {
    const { job, created } = engine.redispatch(c.req.param('id'), { owner: owner(c) });
    return c.json(checkAnswer(compactJobSchema, job, 'POST /api/jobs/:id/redispatch'), created ? 202 : 200);
  });
  // a merge later (`gaffer merge`) is a job: answered at once, followed like any
  app.post('/api/jobs/:id/merge', async (c) => {
    const { job, created } = await engine.merge(c.req.param('id'), mergeTaskOf(await body(c)), { owner: owner(c) });
    return c.json(checkAnswer(compactJobSchema, job, 'POST /api/jobs/:id/merge'), created ? 202 : 200);
  });
  app.post('/api/jobs/:id/tasks/:task/follow-up', async (c) => {
    const { job, created } = await engine.followUp(c.req.param('id'), c.req.param('task'), await body(c), {
      owner: owner(c),
    });
    return c.json(checkAnswer(compactJobSchema, job, 'POST /api/jobs/:id/tasks/:task/follow-up'), created ? 202 : 200);
  });
  app.post('/api/jobs/:id/tasks/:task/steer', async (c) => {
    const answer = await engine.steer(c.req.param('id'), c.req.param('task'), await body(c), { owner: owner(c) });
    return c.json(checkAnswer(steerAnswerSchema, answer, 'POST /api/jobs/:id/tasks/:task/steer'), 202);
  });
  app.get('/api/events', (c) => {
    if (!flag(c, 'stream'))
      throw badQuery('stream', 'this route is a stream: add ?stream=1', c.req.query('stream') ?? null);
    return streamAllJobs(c, engine, owner(c), counters);
  });
  app.post('/api/lint', async (c) => c.json(engine.lint(await body(c))));
  app.get('/api/runners', (c) => c.json({ runners: engine.runners() }));
  app.get('/api/roster', (c) => c.json(engine.roster()));
  app.get('/api/stats', (c) => c.json(engine.stats({ owner: owner(c) })));
  app.get('/api/nodes', async (c) => c.json(await engine.nodes()));
  app.get('/api/health', async (c) => {
    const h = engine.health();
    // a cluster whose Redis does not answer, or whose queued work no live node takes, is degraded: said with why
    const problems = engine.cluster ? (await engine.cluster.view()).problems : [];
    return c.json({
      ok: problems.length === 0,
      ...(engine.cluster ? { status: problems.length === 0 ? 'ok' : 'degraded', problems } : {}),
      version: opts.version,
      uptime_s: engine.uptimeS,
      live_jobs: h.live_jobs,
      sse_clients: counters.sseClients,
      waiters: h.waiters,
      listeners: h.listeners,
      timers: counters.timers,
    });
  });
  app.get('/api/guide', (c) => c.text(COORDINATOR_GUIDE, 200, { 'content-type': 'text/markdown; charset=utf-8' }));
  if (opts.mcp) {
    const mcp = opts.mcp;
    app.all('/mcp', (c) => mcp(c.req.raw, { owner: owner(c), cwd: clientCwd(c) }));
  }
  // a new one-time board login for this caller (`gaffer login`), its session seeing what the caller sees
  app.post('/api/login', (c) =>
    c.json({ url: `${new URL(c.req.url).origin}/?login=${credentials.mintLogin(owner(c))}` }),
  );
  const board = new BoardFiles(opts.boardDir);
  const serveBoard = async (c: Context<Env>, path: string) => {
    const file = await board.get(path);
    if (file === null) {
      if (path !== 'index.html') throw new GafferError('not_found', `no board file ${JSON.stringify(path)}`);
      throw new GafferError(
        'not_found',
        // the server's own paths are not the client's to learn
        'the board is not built: run `npm run build` in the folder gaffer runs from',
      );
    }
    return c.body(file.body as Uint8Array<ArrayBuffer>, 200, {
      'content-type': file.type,
      'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      'content-security-policy': BOARD_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
  };
  app.get('/', (c) => serveBoard(c, 'index.html'));
  app.get('/assets/:name', (c) => serveBoard(c, `assets/${c.req.param('name')}`));
  return { app, counters };
}

/** The header a client names its working directory in (percent-encoded): a job's workspace may not be a parent of a live job's workspace it runs in. */
export const CWD_HEADER = 'gaffer-cwd';

function clientCwd(c: Context): string | null {
  const raw = c.req.header(CWD_HEADER);
  if (raw === undefined || raw === '') return null;
  let cwd: string;
  try {
    cwd = decodeURIComponent(raw);
  } catch {
    cwd = '';
  }
  if (!cwd.startsWith('/'))
    throw new GafferError(
      'invalid_request',
      `${CWD_HEADER}: must be an absolute path, percent-encoded, got ${JSON.stringify(raw)}`,
      CWD_HEADER,
    );
  return cwd;
}

function flag(c: Context, name: string): boolean {
  const v = c.req.query(name);
  return v === '1' || v === 'true';
}

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function numberQuery(c: Context, name: string, fallback: number, min: number, max: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') return fallback;
  // a plain decimal: Number() would take " " as 0 and "0x10" as 16
  const n = DECIMAL.test(raw) ? Number(raw) : NaN;
  if (!Number.isFinite(n) || n < min || n > max) throw badQuery(name, `must be ${min}..${max}`, raw);
  return n;
}

function intQuery(c: Context, name: string, fallback: number, min: number, max: number): number {
  const n = numberQuery(c, name, fallback, min, max);
  if (!Number.isInteger(n)) throw badQuery(name, 'must be a whole number', c.req.query(name));
  return n;
}

function hostOfOrigin(origin: string): string {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return '';
  }
}

/** `POST /api/jobs/:id/merge`'s body: `{}` merges every passing branch not merged yet, `{"task": NAME}` that task's. */
function mergeTaskOf(body: unknown): string | null {
  const task =
    typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { task?: unknown }).task : body;
  if (task === undefined || task === null) return null;
  if (typeof task !== 'string' || task === '')
    throw new GafferError(
      'invalid_request',
      `task: must be a task's name, got ${JSON.stringify(task)?.slice(0, 80)} — send {"task": "NAME"}, or {} to merge every passing branch`,
      'task',
    );
  return task;
}
