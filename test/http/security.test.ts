import { describe, expect, it } from 'vitest';
import { startServer } from '../../src/interfaces/http/serve.js';
import { makeWorkspace } from '../helpers/temp.js';
import {
  IN_PROCESS_SECRET,
  inProcess,
  openEngine,
  openStream,
  rawRequest,
  serveEngine,
  shellTask,
  socketCaller,
} from './helpers.js';

const TOKENS = { 'tok-alice': 'alice', 'tok-bob': 'bob' };
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const anonymous = { authorization: '' };

describe('tokens and owners', () => {
  it('401 without or with a wrong token; an owner sees and acts on only their jobs (404 for the others)', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine, TOKENS);
    const call = server.call;
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const wsBob = makeWorkspace({ 'b.txt': 'b\n' });

    const none = await call('GET', '/api/jobs', undefined, anonymous);
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ error: { code: 'unauthorized', message: expect.stringContaining('Bearer') } });
    const wrong = await call('GET', '/api/jobs', undefined, as('tok-mallory'));
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe('unauthorized');
    expect((await call('GET', '/api/health', undefined, { authorization: 'Basic dG9rLWFsaWNl' })).status).toBe(401);
    expect(
      (await call('POST', '/api/jobs', { workspace: ws, verify: 'none', tasks: [shellTask('true')] }, anonymous))
        .status,
    ).toBe(401);
    expect(engine.list()).toHaveLength(0);
    // a refusal names which credential and how to get it, never where the server keeps its secret
    for (const refused of [none, wrong]) {
      expect(refused.text).not.toContain(engine.dataDir);
      expect(refused.json.error.message).toContain("the server's secret");
      expect(refused.json.error.message).toContain('the file `secret` in the data dir');
    }

    const alice = await call(
      'POST',
      '/api/jobs',
      { workspace: ws, verify: 'none', tasks: [shellTask('echo b > b.txt')] },
      { ...as('tok-alice'), 'idempotency-key': 'same' },
    );
    expect(alice.status).toBe(202);
    expect(alice.json.owner).toBe('alice');
    // the same key from another owner is another job
    const bob = await call(
      'POST',
      '/api/jobs',
      { workspace: wsBob, verify: 'none', tasks: [shellTask('sleep 30')] },
      { ...as('tok-bob'), 'idempotency-key': 'same' },
    );
    expect(bob.status).toBe(202);
    expect(bob.json.id).not.toBe(alice.json.id);
    await engine.settled(alice.json.id);

    expect(
      (await call('GET', '/api/jobs', undefined, as('tok-alice'))).json.jobs.map((j: { id: string }) => j.id),
    ).toEqual([alice.json.id]);
    expect(
      (await call('GET', '/api/jobs', undefined, as('tok-bob'))).json.jobs.map((j: { id: string }) => j.id),
    ).toEqual([bob.json.id]);
    expect((await call('GET', '/api/stats', undefined, as('tok-alice'))).json).toMatchObject({
      acceptance: { 'implement/(shell default)': { accepted: 1, total: 1 } },
      outcomes_total: 1,
      recent: { jobs: 1, done: 1, live: 0 },
    });

    const id = bob.json.id as string;
    for (const [method, path] of [
      ['GET', `/api/jobs/${id}`],
      ['GET', `/api/jobs/${id}?full=1`],
      ['GET', `/api/jobs/${id}/events`],
      ['GET', `/api/jobs/${id}/events?stream=1`],
      ['GET', `/api/jobs/${id}/wait?timeout_s=5`],
      ['GET', `/api/jobs/${id}/diff?path=b.txt`],
      ['GET', `/api/jobs/${id}/workers/worker-1/log`],
      ['POST', `/api/jobs/${id}/cancel`],
      ['POST', `/api/jobs/${id}/redispatch`],
      ['POST', `/api/jobs/${id}/merge`],
      ['POST', `/api/jobs/${id}/approve`],
    ] as const) {
      const r = await call(method, path, method === 'POST' ? {} : undefined, as('tok-alice'));
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.json.error.code).toBe('not_found');
    }
    expect((await call('GET', `/api/jobs/${id}`, undefined, as('tok-bob'))).json.status).toMatch(/queued|running/);

    // the all-jobs stream shows alice only her own jobs
    const stream = openStream(`${server.url}/api/events?stream=1`, as('tok-alice'));
    await new Promise((r) => setTimeout(r, 200));
    const mine = await call(
      'POST',
      '/api/jobs',
      { workspace: ws, verify: 'none', tasks: [shellTask('echo c > c.txt')] },
      as('tok-alice'),
    );
    await engine.settled(mine.json.id);
    await stream.until((f) => f.some((x) => x.event === 'status' && JSON.parse(x.data).status === 'done'));
    expect(new Set(stream.frames.map((f) => JSON.parse(f.data).id))).toEqual(new Set([mine.json.id]));
    stream.abort();
    await stream.done;

    expect((await call('POST', `/api/jobs/${id}/cancel`, undefined, as('tok-bob'))).status).toBe(200);
    await engine.settled(id);
  });
});

describe('board sessions', () => {
  it("a login minted with a token is that owner's session; the one gaffer serve prints is the local user's; the secret sees every owner's jobs", async () => {
    const engine = await openEngine();
    const http = inProcess(engine, { tokens: TOKENS });
    const wsA = makeWorkspace({ 'a.txt': 'a\n' });
    const wsB = makeWorkspace({ 'b.txt': 'b\n' });
    const alice = await http.call(
      'POST',
      '/api/jobs',
      { workspace: wsA, verify: 'none', tasks: [shellTask('echo x > x.txt')] },
      as('tok-alice'),
    );
    const bob = await http.call(
      'POST',
      '/api/jobs',
      { workspace: wsB, verify: 'none', tasks: [shellTask('echo y > y.txt')] },
      as('tok-bob'),
    );
    await Promise.all([engine.settled(alice.json.id), engine.settled(bob.json.id)]);

    const sessionOf = async (loginUrl: string) => {
      const res = await http.app.request(new URL(loginUrl).pathname + new URL(loginUrl).search, {
        headers: { authorization: '' },
      });
      expect(res.status).toBe(303);
      return (res.headers.getSetCookie()[0] ?? '').split(';')[0] as string;
    };
    const minted = await http.call('POST', '/api/login', undefined, as('tok-alice'));
    expect(minted.json.url).toMatch(/\/\?login=[A-Za-z0-9_-]{43}$/);
    const aliceCookie = await sessionOf(minted.json.url);
    const ids = async (headers: Record<string, string>) =>
      (await http.call('GET', '/api/jobs', undefined, { authorization: '', ...headers })).json.jobs.map(
        (j: { id: string }) => j.id,
      );
    expect(await ids({ cookie: aliceCookie })).toEqual([alice.json.id]);
    const localCookie = await sessionOf(`http://localhost/?login=${http.credentials.mintLogin(null)}`);
    expect(new Set(await ids({ cookie: localCookie }))).toEqual(new Set([alice.json.id, bob.json.id]));
    expect(new Set(await ids({ authorization: `Bearer ${IN_PROCESS_SECRET}` }))).toEqual(
      new Set([alice.json.id, bob.json.id]),
    );
    // without a credential even the health answer is refused once tokens are configured
    expect((await http.call('GET', '/api/health', undefined, anonymous)).status).toBe(401);
  });
});

describe('the loopback listener', () => {
  it('answers 403 forbidden for a foreign Host or Origin, and serves its own names', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const port = new URL(server.url).port;

    const evil = await rawRequest(server.url, '/api/health', { host: 'evil.example' });
    expect(evil.status).toBe(403);
    expect(evil.json).toEqual({ error: { code: 'forbidden', message: expect.stringContaining('evil.example') } });
    expect((await rawRequest(server.url, '/api/health', { host: `evil.example:${port}` })).status).toBe(403);
    expect((await rawRequest(server.url, '/mcp', { host: 'evil.example' })).status).toBe(403);
    for (const origin of [
      'http://evil.example',
      `http://evil.example:${port}`,
      'null',
      `https://127.0.0.1.evil.example:${port}`,
    ]) {
      const r = await rawRequest(server.url, '/api/health', { host: `127.0.0.1:${port}`, origin });
      expect([origin, r.status, r.json.error.code]).toEqual([origin, 403, 'forbidden']);
    }

    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      expect((await rawRequest(server.url, '/api/health', { host })).status).toBe(200);
    }
    expect(
      (await rawRequest(server.url, '/api/health', { host: `localhost:${port}`, origin: `http://localhost:${port}` }))
        .status,
    ).toBe(200);
    expect((await server.call('GET', '/api/health', undefined, { origin: server.url })).status).toBe(200);
  });

  it('the same checks in process', async () => {
    const engine = await openEngine();
    const http = inProcess(engine, { allowedHosts: () => new Set(['127.0.0.1:7070']) });
    expect((await http.call('GET', '/api/health', undefined, { host: '127.0.0.1:7070' })).status).toBe(200);
    const evil = await http.call('GET', '/api/health', undefined, { host: 'evil.example' });
    expect(evil.status).toBe(403);
    expect(evil.json.error.code).toBe('forbidden');
    expect(
      (await http.call('GET', '/api/health', undefined, { host: '127.0.0.1:7070', origin: 'http://evil.example' }))
        .status,
    ).toBe(403);
  });

  it('a non-loopback bind needs tokens; with tokens it serves any Host and asks for a token', async () => {
    const engine = await openEngine();
    await expect(startServer({ engine, host: '0.0.0.0', port: 0, tokens: {}, version: 'test' })).rejects.toMatchObject({
      code: 'invalid_request',
      field: 'host',
    });
    const server = await startServer({ engine, host: '0.0.0.0', port: 0, tokens: TOKENS, version: 'test' });
    try {
      const port = new URL(server.url).port;
      const call = socketCaller(`http://127.0.0.1:${port}`);
      expect((await call('GET', '/api/health')).status).toBe(401);
      expect((await call('GET', '/api/health', undefined, as('tok-bob'))).status).toBe(200);
      const r = await rawRequest(`http://127.0.0.1:${port}`, '/api/health', {
        host: 'gaffer.example.com',
        ...as('tok-bob'),
      });
      expect(r.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
