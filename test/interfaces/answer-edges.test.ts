import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compactJobSchema, fullJobSchema, waitAnswerSchema } from '../../src/domain/answer-schema.js';
import type { CompactJob } from '../../src/domain/answer.js';
import type { Engine } from '../../src/engine/engine.js';
import { checkAnswer } from '../../src/interfaces/answer-check.js';
import { HttpApi, LocalApi } from '../../src/interfaces/cli/api.js';
import { createMcpServer } from '../../src/interfaces/mcp/server.js';
import { CALC_FILES, FIX_ADD, makeWorkspace } from '../helpers/temp.js';
import { inProcess, openEngine } from '../http/helpers.js';
import { refusal } from '../helpers/refusal.js';

/*
 * Every door checks the answer it sends against the one schema (domain/answer-schema.ts): a
 * wrong field is an internal error that names it, on HTTP, MCP and the CLI alike.
 */

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** An engine with one settled shell job (a real answer: workers, changes, totals). */
async function settledJob(): Promise<{ engine: Engine; id: string }> {
  const engine = await openEngine();
  const { job } = engine.submit({
    workspace: makeWorkspace(CALC_FILES),
    verify: 'none',
    tasks: [{ name: 'fix', instruction: 'fix add', command: FIX_ADD }],
  });
  await engine.settled(job.id);
  return { engine, id: job.id };
}

/** The engine's own answers (a job's, a wait's), with one field set to `value` on the way out, as a drifted engine would. */
function tamper(engine: Engine, path: readonly (string | number)[], value: unknown): void {
  const set = (job: CompactJob): CompactJob => {
    let at: unknown = job;
    for (const key of path.slice(0, -1)) at = typeof at === 'object' && at !== null ? Reflect.get(at, key) : undefined;
    if (typeof at !== 'object' || at === null) throw new Error(`the answer has no ${path.join('.')}`);
    Reflect.set(at, path.at(-1) as string | number, value);
    return job;
  };
  const get = engine.get.bind(engine);
  const waitFor = engine.waitFor.bind(engine);
  vi.spyOn(engine, 'get').mockImplementation((id, opts) => set(get(id, opts)));
  vi.spyOn(engine, 'waitFor').mockImplementation(async (...args) => {
    const answer = await waitFor(...args);
    return { ...answer, state: set(answer.state) };
  });
}

describe('the answer schema', () => {
  it('takes what the engine answers: compact, full, a listing and a wait', async () => {
    const { engine, id } = await settledJob();
    expect(compactJobSchema.safeParse(engine.get(id)).error).toBeUndefined();
    expect(fullJobSchema.safeParse(engine.get(id, { full: true })).error).toBeUndefined();
    // the full answer is the compact one with nothing left out: it passes both; the compact one is not full
    expect(compactJobSchema.safeParse(engine.get(id, { full: true })).error).toBeUndefined();
    expect(fullJobSchema.safeParse(engine.get(id)).error?.issues.map((i) => i.path.join('.'))).toContain(
      'result.workers.0.tool_calls',
    );
    expect(compactJobSchema.safeParse(engine.list()[0]).error).toBeUndefined();
    expect(waitAnswerSchema.safeParse(await engine.waitFor(id, 'done', 1)).error).toBeUndefined();
  });

  it('refuses a wrong field, a missing one and one it does not know, each named by its path', async () => {
    const { engine, id } = await settledJob();
    const answer = (): CompactJob => structuredClone(engine.get(id));

    const wrongStatus = Object.assign(answer(), { status: 'finished' });
    const e1 = refusal(() => checkAnswer(compactJobSchema, wrongStatus, 'GET /api/jobs/:id'));
    expect(e1.code).toBe('internal');
    expect(e1.field).toBe('status');
    expect(e1.message).toMatch(/^the answer of GET \/api\/jobs\/:id does not match its schema: status: /);

    const nested = answer();
    Reflect.set(nested.result?.workers[0] ?? {}, 'outcome', 'fine');
    expect(refusal(() => checkAnswer(compactJobSchema, nested, 'x')).field).toBe('result.workers[0].outcome');

    const missing = answer();
    Reflect.deleteProperty(missing, 'workspace');
    expect(refusal(() => checkAnswer(compactJobSchema, missing, 'x')).message).toContain('workspace: ');

    const unknown = Object.assign(answer(), { verdit: 'typo' });
    const e4 = refusal(() => checkAnswer(compactJobSchema, unknown, 'x'));
    expect(e4.field).toBe('verdit');
    expect(e4.message).toContain('verdit: not a field of the answer');
  });
});

describe('every door refuses to send a wrong answer', () => {
  it('HTTP: a 500 internal naming the field, on the job, its wait and its listing', async () => {
    const { engine, id } = await settledJob();
    const { call } = inProcess(engine);
    expect((await call('GET', `/api/jobs/${id}`)).status).toBe(200);
    const { result: _result, ...brief } = engine.get(id);
    tamper(engine, ['result', 'workers', 0, 'attempt'], '1');
    const res = await call('GET', `/api/jobs/${id}`);
    expect(res.status).toBe(500);
    expect(res.json.error).toMatchObject({ code: 'internal', field: 'result.workers[0].attempt' });
    expect(res.json.error.message).toContain('the answer of GET /api/jobs/:id does not match');
    const wait = await call('GET', `/api/jobs/${id}/wait?timeout_s=0`);
    expect(wait.status).toBe(500);
    expect(wait.json.error).toMatchObject({ code: 'internal', field: 'state.result.workers[0].attempt' });

    // a full answer that leaves a field out is refused where the compact one may leave it out
    vi.restoreAllMocks();
    const get = engine.get.bind(engine);
    vi.spyOn(engine, 'get').mockImplementation((jobId, opts) => {
      const job = get(jobId, opts);
      Reflect.deleteProperty(job.result?.workers[0] ?? {}, 'failed_calls');
      return job;
    });
    expect((await call('GET', `/api/jobs/${id}`)).status).toBe(200);
    const full = await call('GET', `/api/jobs/${id}?full=1`);
    expect(full.status).toBe(500);
    expect(full.json.error).toMatchObject({ code: 'internal', field: 'result.workers[0].failed_calls' });
    expect(full.json.error.message).toContain('the answer of GET /api/jobs/:id?full=1 does not match');

    vi.spyOn(engine, 'list').mockImplementation(() => [Object.assign(brief, { extra: 1 })]);
    const list = await call('GET', '/api/jobs');
    expect(list.status).toBe(500);
    expect(list.json.error).toMatchObject({ code: 'internal', field: 'jobs[0].extra' });
  });

  it('MCP: a tool error with the internal error body naming the field', async () => {
    const { engine, id } = await settledJob();
    const server = createMcpServer(engine, { owner: null, cwd: null }, 'test');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'answer-edges', version: '1.0.0' });
    await client.connect(clientSide);
    closers.push(
      () => client.close(),
      () => server.close(),
    );

    expect((await client.callTool({ name: 'workers_status', arguments: { job_id: id } })).isError).toBeUndefined();
    tamper(engine, ['tasks', 0, 'files'], 'src/math.js');
    const result = await client.callTool({ name: 'workers_status', arguments: { job_id: id } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: 'internal', field: 'tasks[0].files' } });
  });

  it('CLI in process: the command fails with the internal error naming the field', async () => {
    const { engine, id } = await settledJob();
    const api = new LocalApi(engine);
    await expect(api.get(id, false)).resolves.toMatchObject({ id });
    tamper(engine, ['duration_s'], Number.NaN);
    await expect(api.get(id, false)).rejects.toMatchObject({ code: 'internal', field: 'duration_s' });
  });

  it('CLI over HTTP: what a server sends is checked too', async () => {
    const { engine, id } = await settledJob();
    const body = JSON.stringify(Object.assign(structuredClone(engine.get(id)), { verdict: 42 }));
    const server: Server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(body),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const address = server.address();
    if (address === null || typeof address === 'string') return expect.unreachable('no port');
    const api = new HttpApi(`http://127.0.0.1:${address.port}`, null);
    await expect(api.get(id, false)).rejects.toMatchObject({ code: 'internal', field: 'verdict' });
  });
});
