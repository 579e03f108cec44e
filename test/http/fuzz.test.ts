import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/domain/errors.js';
import { HTTP_STATUS } from '../../src/interfaces/http/errors.js';
import { makeWorkspace } from '../helpers/temp.js';
import { inProcess, jobRows, openEngine, serveEngine, shellTask } from './helpers.js';

/** Fixed so a failure reproduces; set GAFFER_FUZZ_SEED to explore. */
const SEED = Number(process.env.GAFFER_FUZZ_SEED ?? 4242);

type Answer = { status: number; json: any };
type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<Answer & { text: string }>;

/** Every refusal: a 4xx whose body is the one error shape, its status the code's. */
function expectRefusal(r: Answer, what: unknown): void {
  const ok =
    r.status >= 400 &&
    r.status < 500 &&
    typeof r.json?.error?.code === 'string' &&
    typeof r.json.error.message === 'string' &&
    r.json.error.message.length > 0 &&
    HTTP_STATUS[r.json.error.code as ErrorCode] === r.status;
  if (!ok)
    throw new Error(
      `not a refusal: ${r.status} ${JSON.stringify(r.json)?.slice(0, 300)} for ${JSON.stringify(what)?.slice(0, 300)}`,
    );
}

const TRAVERSAL = [
  '../x',
  '/etc/passwd',
  'a/../../b',
  '..',
  '../../etc/shadow',
  '~/x',
  'a\0b',
  '\\windows\\x',
  'C:\\x',
  'src/../../x',
];
const KNOWN_KEYS = new Set([
  'workspace',
  'tasks',
  'title',
  'context',
  'parallel',
  'reviewer',
  'runner',
  'model',
  'verify',
  'verify_scope',
  'verify_timeout_s',
  'fix_rounds',
  'expected_output_contains',
  'criteria',
  'timeout_s',
  'max_rounds',
  'isolation',
  'merge',
  'repo',
  'approval',
  'unattended',
  'client_request_id',
]);
const TASK_KEYS = new Set([
  'instruction',
  'name',
  'files',
  'type',
  'runner',
  'model',
  'criteria',
  'outputs',
  'command',
  'receipts',
  'done_means',
  'gates',
  'abort_criteria',
  'read_first',
  'context',
  'hold',
  'grounded',
]);

const huge = (min: number) => fc.integer({ min, max: min + 5_000 }).map((n) => 'x'.repeat(n));
const notString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
);
const notInt = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.boolean(),
  fc.constant(null),
  fc.double({ noInteger: true }),
  fc.array(fc.integer(), { maxLength: 2 }),
);
const intOutside = (min: number, max: number) =>
  fc.oneof(fc.integer({ min: -1e9, max: min - 1 }), fc.integer({ min: max + 1, max: 1e12 }), notInt);
const badPath = fc.oneof(fc.constantFrom(...TRAVERSAL), fc.constant(''), huge(1_001), notString);

/** A task that is surely invalid, with why. */
function badTask(): fc.Arbitrary<unknown> {
  const base = { instruction: 'do the thing in a.txt', command: 'true' };
  return fc.oneof(
    notString.filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
    fc.record({ instruction: fc.oneof(fc.constant(''), huge(20_001), notString) }).map((t) => ({ ...base, ...t })),
    fc
      .record({
        files: fc.oneof(
          fc.array(badPath, { minLength: 1, maxLength: 3 }),
          notString.filter((v) => !Array.isArray(v)),
        ),
      })
      .map((t) => ({ ...base, ...t })),
    fc.record({ outputs: fc.array(badPath, { minLength: 1, maxLength: 3 }) }).map((t) => ({ ...base, ...t })),
    fc
      .record({ name: fc.oneof(fc.constantFrom('job', 'Upper', '-x', '', 'a b', 'x'.repeat(65), '../x'), notString) })
      .map((t) => ({ ...base, ...t })),
    fc
      .record({
        type: fc.oneof(
          fc
            .string({ maxLength: 8 })
            .filter(
              (s) => !['implement', 'fix', 'test', 'refactor', 'docs', 'review', 'research', 'chore'].includes(s),
            ),
          notString,
        ),
      })
      .map((t) => ({ ...base, ...t })),
    fc
      .record({ runner: fc.oneof(fc.constantFrom('codex', 'claude', 'no-such-runner', 'SHELL', ''), huge(65)) })
      .map((t) => ({ ...base, ...t })),
    fc.record({ command: fc.oneof(fc.constant(''), huge(20_001), fc.integer()) }).map((t) => ({ ...base, ...t })),
    fc
      .record({
        criteria: fc.oneof(
          fc.array(fc.constantFrom('', '   '), { minLength: 1, maxLength: 2 }),
          fc.array(fc.constant('c'), { minLength: 21, maxLength: 25 }),
          fc.constant([huge(301)]),
        ),
      })
      .map((t) => ({ ...base, ...t })),
    fc.record({ grounded: fc.constant(true), gates: fc.constant(['x']) }).map((t) => ({ ...base, ...t })),
    fc
      .string({ minLength: 1, maxLength: 12 })
      .filter((k) => !TASK_KEYS.has(k) && k !== '__proto__')
      .map((k) => ({ ...base, [k]: 1 })),
  );
}

/**
 * A body that is surely refused: one or more fields made invalid. `vetted`: the door checks the
 * workspace on disk (dispatch does; lint reads only the request, so a well-formed path passes it).
 */
function badBody(ws: string, vetted = true): fc.Arbitrary<unknown> {
  const valid = { workspace: ws, verify: 'none', tasks: [{ instruction: 'append a line to a.txt', command: 'true' }] };
  const field = (key: string, value: fc.Arbitrary<unknown>) => value.map((v) => ({ ...valid, [key]: v }));
  // each sets one field to a bad value (or adds an unknown key), so two of them merged stay bad
  const setField = fc.oneof(
    field(
      'workspace',
      vetted
        ? fc.oneof(
            notString,
            fc.constantFrom('', 'relative/ws', '/', '/etc/passwd', `${ws}/does-not-exist`, `${ws}/a.txt`),
            huge(4_097),
          )
        : fc.oneof(notString, fc.constant(''), huge(4_097)),
    ),
    field(
      'tasks',
      fc.oneof(
        notString.filter((v) => !Array.isArray(v) || v.length === 0),
        fc.constant([]),
        fc.array(fc.constant('x'), { minLength: 9, maxLength: 12 }),
        fc.array(badTask(), { minLength: 1, maxLength: 3 }),
      ),
    ),
    field('timeout_s', intOutside(10, 86_400)),
    field('verify_timeout_s', intOutside(10, 3_600)),
    field('fix_rounds', intOutside(0, 4)),
    field('max_rounds', intOutside(1, 200)),
    field('verify', fc.oneof(fc.constantFrom('', '   '), huge(501), fc.integer(), fc.constant({}), fc.constant(null))),
    field(
      'verify_scope',
      fc.oneof(
        fc.string({ maxLength: 6 }).filter((s) => s !== 'related' && s !== 'all'),
        fc.integer(),
      ),
    ),
    field('expected_output_contains', fc.oneof(fc.constantFrom('', '  ', '\n\t'), huge(201), fc.integer())),
    field(
      'criteria',
      fc.oneof(
        fc.array(fc.constant('c'), { minLength: 21, maxLength: 22 }),
        fc.constant(['']),
        fc.constant('not a list'),
      ),
    ),
    field('title', fc.oneof(huge(201), fc.integer(), fc.constant([]))),
    field('context', fc.oneof(huge(8_001), fc.integer())),
    field('parallel', fc.oneof(fc.string({ maxLength: 5 }), fc.integer())),
    field(
      'isolation',
      fc.string({ maxLength: 6 }).filter((s) => s !== 'shared' && s !== 'worktree'),
    ),
    // merge without worktree isolation is refused, as is any other value
    field(
      'merge',
      fc.oneof(
        fc.constant('auto'),
        fc.string({ maxLength: 6 }).filter((s) => s !== 'none' && s !== 'auto'),
      ),
    ),
    field('reviewer', fc.oneof(fc.string({ maxLength: 5 }), fc.integer())),
    field('approval', fc.constantFrom('sometimes', 'yes', '')),
    field('unattended', fc.oneof(fc.string({ maxLength: 5 }), fc.integer())),
    field('repo', fc.constant({ url: 'https://example.com/x.git', ref: 'main' })),
    field('runner', fc.constantFrom('codex', 'nope', '')),
    field('client_request_id', fc.oneof(fc.constant(''), huge(201), fc.integer(), fc.constant({}))),
    fc
      .string({ minLength: 1, maxLength: 16 })
      .filter((k) => !KNOWN_KEYS.has(k) && k !== '__proto__')
      .map((k) => ({ ...valid, [k]: 'x' })),
  );
  const mutation = fc.oneof(
    { weight: 8, arbitrary: setField },
    fc.constantFrom<unknown>(null, [], [valid], 42, 'a string', true, {}),
    fc.constant(Object.fromEntries(Object.entries(valid).filter(([k]) => k !== 'workspace'))),
    fc.constant(Object.fromEntries(Object.entries(valid).filter(([k]) => k !== 'tasks'))),
  );
  // sometimes two invalid changes at once
  return fc.oneof(
    { weight: 4, arbitrary: mutation },
    { weight: 1, arbitrary: fc.tuple(setField, setField).map(([a, b]) => ({ ...(a as object), ...(b as object) })) },
  );
}

const notJson = fc.oneof(
  fc.constantFrom('', '{', '{"workspace": ', 'undefined', "{'a': 1}", '[1,2', '\u0000'),
  fc.string({ maxLength: 40 }).filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
);

/** A wait condition that is surely not one of the forms. */
const badCondition = fc
  .oneof(
    fc.string({ maxLength: 30 }).filter((s) => {
      const t = s.trim();
      return t !== '' && t !== 'done' && t !== 'changed' && !/^(phase|event):./s.test(t) && !t.startsWith('worker:');
    }),
    fc.constantFrom(
      'phase:',
      'event:',
      'worker:*:bogus',
      'worker::running',
      'worker:x',
      'worker:*',
      'worker:',
      'DONE',
      'done ',
      'done:now',
    ),
    fc.constantFrom(...['running', 'rate_limited', 'bogus']).map((st) => `worker:*:${st}x`),
  )
  .filter((c) => c.trim() !== 'done');

/** A bad query on one of the reading routes of a real job. */
function badQuery(id: string): fc.Arbitrary<string> {
  const num = (min: number, max: number, int: boolean) =>
    fc.oneof(
      fc.constantFrom('abc', 'NaN', 'Infinity', '-Infinity', '1x', '0x', ' '),
      fc.integer({ min: -1e6, max: min - 1 }).map(String),
      fc.integer({ min: max + 1, max: max + 1e6 }).map(String),
      ...(int
        ? [fc.double({ min: min + 0.01, max: Math.min(max, 1e6) - 0.01, noInteger: true, noNaN: true }).map(String)]
        : []),
    );
  const q = (path: string, name: string, value: fc.Arbitrary<string>) =>
    value.map((v) => `${path}${path.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(v)}`);
  return fc.oneof(
    q('/api/jobs', 'limit', num(1, 1_000, true)),
    q(
      '/api/jobs',
      'status',
      fc
        .string({ minLength: 1, maxLength: 12 })
        .filter(
          (s) =>
            !/^(queued|awaiting_approval|running|verifying|cancelling|done|partial|error|cancelled|interrupted)$/.test(
              s,
            ),
        ),
    ),
    q(`/api/jobs/${id}/wait`, 'timeout_s', num(0, 600, false)),
    q(`/api/jobs/${id}/wait?timeout_s=0`, 'for', badCondition),
    q(`/api/jobs/${id}/workers/worker-1/log`, 'tail', num(0, 10 * 1024 * 1024, true)),
    q(`/api/jobs/${id}/events`, 'after', num(0, Number.MAX_SAFE_INTEGER, true)),
    q(`/api/jobs/${id}/diff`, 'path', fc.constantFrom(...TRAVERSAL, '')),
    fc
      .string({ minLength: 1, maxLength: 12 })
      .filter((s) => !/^[0-9a-f]{12}$/.test(s))
      .map((s) => `/api/jobs/${encodeURIComponent(s)}`),
    fc.string({ minLength: 1, maxLength: 12 }).map((s) => `/api/jobs/${encodeURIComponent(s)}x/wait?timeout_s=0`),
    fc.string({ minLength: 1, maxLength: 12 }).map((s) => `/api/nope/${encodeURIComponent(s)}`),
  );
}

/** One malformed request of any kind. */
function malformed(ws: string, id: string) {
  return fc.oneof(
    {
      weight: 5,
      arbitrary: badBody(ws).map((body) => ({
        method: 'POST',
        path: '/api/jobs',
        body: JSON.stringify(body) as string | undefined,
        headers: {} as Record<string, string>,
      })),
    },
    {
      weight: 1,
      arbitrary: badBody(ws, false).map((body) => ({
        method: 'POST',
        path: '/api/lint',
        body: JSON.stringify(body) as string | undefined,
        headers: {} as Record<string, string>,
      })),
    },
    {
      weight: 1,
      arbitrary: notJson.map((body) => ({
        method: 'POST',
        path: fc.sample(fc.constantFrom('/api/jobs', '/api/lint'), 1)[0] as string,
        body: body as string | undefined,
        headers: {} as Record<string, string>,
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ minLength: 1, maxLength: 20 }))
        .filter(([a, b]) => a !== b && /^[\x21-\x7e]+$/.test(a))
        .map(([header, body]) => ({
          method: 'POST',
          path: '/api/jobs',
          body: JSON.stringify({
            workspace: ws,
            verify: 'none',
            tasks: [shellTask('true')],
            client_request_id: body,
          }) as string | undefined,
          headers: { 'idempotency-key': header } as Record<string, string>,
        })),
    },
    {
      weight: 1,
      arbitrary: fc.oneof(fc.constantFrom('', ' ', '\t'), huge(201)).map((key) => ({
        method: 'POST',
        path: '/api/jobs',
        body: JSON.stringify({ workspace: ws, verify: 'none', tasks: [shellTask('true')] }) as string | undefined,
        headers: { 'idempotency-key': key } as Record<string, string>,
      })),
    },
    {
      weight: 3,
      arbitrary: badQuery(id).map((path) => ({
        method: 'GET',
        path,
        body: undefined as string | undefined,
        headers: {} as Record<string, string>,
      })),
    },
  );
}

describe('malformed requests (property-based)', () => {
  it('≥ 1,000 in process and a few hundred over a socket: every answer a 4xx with the error shape, the server alive, no job row created', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { job } = engine.submit({ workspace: ws, verify: 'none', tasks: [shellTask('echo hi')] });
    await engine.settled(job.id);
    const before = jobRows(engine);

    const run = async (call: Call, numRuns: number, seed: number) => {
      let count = 0;
      await fc.assert(
        fc.asyncProperty(malformed(ws, job.id), async (req) => {
          count++;
          const r = await call(req.method, req.path, req.body, {
            ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...req.headers,
          });
          expectRefusal(r, req);
        }),
        { numRuns, seed, endOnFailure: true },
      );
      return count;
    };

    const local = inProcess(engine);
    expect(await run(local.call, 1_200, SEED)).toBe(1_200);
    expect(jobRows(engine)).toBe(before);

    const server = await serveEngine(engine);
    expect(await run(server.call, 300, SEED + 1)).toBe(300);
    const health = await server.call('GET', '/api/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ ok: true, live_jobs: 0, waiters: 0, sse_clients: 0, timers: 0 });
    expect(jobRows(engine)).toBe(before);
    expect(engine.list().map((j) => j.id)).toEqual([job.id]);
    // and it still takes a good request
    const good = await server.call('POST', '/api/jobs', { workspace: ws, verify: 'none', tasks: [shellTask('true')] });
    expect(good.status).toBe(202);
    await engine.settled(good.json.id);
  });

  it('bad wait conditions are refused listing every form', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { job } = engine.submit({ workspace: ws, verify: 'none', tasks: [shellTask('true')] });
    await engine.settled(job.id);
    const local = inProcess(engine);
    await fc.assert(
      fc.asyncProperty(badCondition, async (condition) => {
        const r = await local.call('GET', `/api/jobs/${job.id}/wait?timeout_s=0&for=${encodeURIComponent(condition)}`);
        expectRefusal(r, condition);
        expect(r.json.error).toMatchObject({ code: 'invalid_request', field: 'condition' });
        if (!condition.trim().startsWith('worker:') || condition.trim().split(':').length < 3) {
          for (const form of ['done', 'changed', 'phase:<text>', 'event:<text>', 'worker:<name|*>:<state>'])
            expect(r.json.error.message).toContain(form);
        }
      }),
      { numRuns: 300, seed: SEED + 2 },
    );
  });
});
