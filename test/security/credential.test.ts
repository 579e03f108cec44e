import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { secretPath } from '../../src/config/local-secret.js';
import { bearerFor } from '../helpers/credential.js';
import { readBody } from '../helpers/json.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { BIN, call, eventually, gaffer, startServe, type Served } from '../reliability/helpers.js';

/** The CLI's env: the shell's, no server or token from it. */
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const { GAFFER_TOKEN: _t, GAFFER_TOKENS: _ts, ...rest } = process.env;
  return { ...rest, GAFFER_URL: '', ...extra };
};
const anonymous = { authorization: '' };

/** The one-time login URL `gaffer serve` printed. */
async function loginUrlOf(server: Served): Promise<string> {
  let url: string | undefined;
  await eventually(
    () => (url = /(http:\/\/\S+\/\?login=[A-Za-z0-9_-]+)/.exec(server.stderr())?.[1]) !== undefined,
    10_000,
    'the login URL on stderr',
  );
  return url as string;
}

/** GET without following redirects; the session cookie as `name=value` when one is set. */
async function visit(
  url: string,
  cookie?: string,
): Promise<{ status: number; location: string | null; setCookie: string[]; json: any; text: string }> {
  const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  const { text, json } = await readBody(res);
  return {
    status: res.status,
    location: res.headers.get('location'),
    setCookie: res.headers.getSetCookie(),
    json,
    text,
  };
}

const ROUTES: [string, string][] = [
  ['GET', '/api/jobs'],
  ['POST', '/api/jobs'],
  ['GET', '/api/jobs/ffffffffffff'],
  ['POST', '/api/jobs/ffffffffffff/cancel'],
  ['GET', '/api/jobs/ffffffffffff/wait?timeout_s=1'],
  ['GET', '/api/jobs/ffffffffffff/events?stream=1'],
  ['GET', '/api/events?stream=1'],
  ['POST', '/api/lint'],
  ['GET', '/api/runners'],
  ['GET', '/api/roster'],
  ['GET', '/api/stats'],
  ['GET', '/api/guide'],
  ['POST', '/api/login'],
  ['POST', '/mcp'],
  ['GET', '/'],
];

describe('the server needs a credential even on loopback (issue 11)', () => {
  it('without one every route but /api/health is 401 in the error shape naming the credential it wants (not its path); a wrong one too; nothing is created', async () => {
    const data = join(tempDir(), 'data');
    const server = await startServe(data, { env: env() });
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const body = { workspace: ws, verify: 'none', tasks: [{ instruction: 'append', command: 'echo b >> a.txt' }] };
    for (const [method, path] of ROUTES) {
      const none = await call(server.url, method, path, method === 'POST' ? body : undefined, anonymous);
      expect([method, path, none.status]).toEqual([method, path, 401]);
      // it says which credential it wants, never where the server keeps it
      expect(none.json).toEqual({
        error: { code: 'unauthorized', message: expect.stringContaining("the server's secret") },
      });
      expect(none.json.error.message).not.toContain(data);
      for (const authorization of [
        'Bearer not-the-secret',
        `Bearer ${readFileSync(secretPath(data), 'utf8').trim()}x`,
        'Basic Zm9vOmJhcg==',
      ]) {
        const wrong = await call(server.url, method, path, method === 'POST' ? body : undefined, { authorization });
        expect([method, path, authorization, wrong.status, wrong.json?.error?.code]).toEqual([
          method,
          path,
          authorization,
          401,
          'unauthorized',
        ]);
      }
    }
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('a\n');
    // a liveness probe needs none: counts and the version, nothing of a job
    const health = await call(server.url, 'GET', '/api/health', undefined, anonymous);
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ ok: true, live_jobs: 0 });
    // with the secret, the same server answers, and there is no job
    expect((await call(server.url, 'GET', '/api/jobs')).json).toEqual({ jobs: [] });
  });

  it("the secret is 0600 in the 0700 data dir, 43+ base64url characters, kept across restarts, and never in the server's environment or command line", async () => {
    const data = join(tempDir(), 'data');
    const first = await startServe(data, { env: env() });
    const file = secretPath(data);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(data).mode & 0o777).toBe(0o700);
    const secret = readFileSync(file, 'utf8').trim();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    for (const part of ['environ', 'cmdline'])
      expect(readFileSync(`/proc/${first.pid}/${part}`, 'utf8')).not.toContain(secret);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const second = await startServe(data, { env: env() });
    expect(readFileSync(file, 'utf8').trim()).toBe(secret);
    expect((await call(second.url, 'GET', '/api/jobs', undefined, { authorization: `Bearer ${secret}` })).status).toBe(
      200,
    );
  });

  it('the CLI on the same data dir needs nothing passed: dispatch --wait, status, list, events, cancel, stats', async () => {
    const data = join(tempDir(), 'data');
    const server = await startServe(data, { env: env() });
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const dispatched = await gaffer(
      data,
      [
        '--json',
        'dispatch',
        '--wait',
        '--workspace',
        ws,
        '--verify',
        'none',
        '--task',
        'append',
        '--command',
        'echo b >> a.txt',
      ],
      env(),
    );
    expect([dispatched.code, dispatched.stderr]).toEqual([0, expect.not.stringContaining('unauthorized')]);
    const job = JSON.parse(dispatched.stdout) as { id: string; status: string; owner: string | null };
    expect(job).toMatchObject({ status: 'done', owner: null });
    // the server ran it (not an engine of the CLI's own)
    expect((await call(server.url, 'GET', `/api/jobs/${job.id}`)).json.status).toBe('done');
    for (const args of [['status', job.id], ['list'], ['events', job.id], ['stats'], ['wait', job.id]]) {
      const r = await gaffer(data, ['--json', ...args], env());
      expect([args, r.code, r.stderr]).toEqual([args, 0, '']);
    }
    expect((await gaffer(data, ['cancel', job.id], env())).code).toBe(1); // already final: answered, not refused
    // GAFFER_TOKEN still overrides: a wrong one is refused
    const wrong = await gaffer(data, ['--json', 'list'], env({ GAFFER_TOKEN: 'not-the-secret' }));
    expect(wrong.code).toBe(2);
    expect(JSON.parse(wrong.stderr)).toMatchObject({ error: { code: 'unauthorized' } });
  });

  it('the login URL works once: it sets an HttpOnly SameSite=Strict session cookie and redirects to / without the token; the cookie opens the board and the API; a restart prints a new one', async () => {
    const data = join(tempDir(), 'data');
    const server = await startServe(data, { env: env() });
    const login = await loginUrlOf(server);
    expect(login.startsWith(`${server.url}/?login=`)).toBe(true);

    expect((await visit(`${server.url}/`)).status).toBe(401);
    const wrong = await visit(`${server.url}/?login=not-the-token`);
    expect([wrong.status, wrong.json?.error?.code, wrong.json?.error?.field]).toEqual([401, 'unauthorized', 'login']);
    expect(wrong.setCookie).toEqual([]);

    const first = await visit(login);
    expect(first.status).toBe(303);
    expect(first.location).toBe('/');
    expect(first.setCookie).toHaveLength(1);
    const setCookie = first.setCookie[0] as string;
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    expect(setCookie).toMatch(/Path=\//);
    const cookie = setCookie.split(';')[0] as string;
    expect(cookie).not.toContain(new URL(login).searchParams.get('login'));

    const board = await visit(`${server.url}/`, cookie);
    expect(board.status).toBe(200);
    expect(board.text).toContain('<title>gaffer</title>');
    expect((await call(server.url, 'GET', '/api/jobs', undefined, { authorization: '', cookie })).status).toBe(200);
    expect(
      (await call(server.url, 'GET', '/api/jobs', undefined, { authorization: '', cookie: `${cookie}x` })).status,
    ).toBe(401);

    // spent
    const again = await visit(login);
    expect(again.status).toBe(401);
    expect(again.json.error.message).toContain('gaffer login');

    // gaffer login: a new one-time URL, no restart needed
    const minted = await gaffer(data, ['login'], env());
    expect(minted.code).toBe(0);
    const next = minted.stdout.trim();
    expect(next).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?login=[A-Za-z0-9_-]{43}$/);
    expect((await visit(next)).status).toBe(303);
    expect((await visit(next)).status).toBe(401);
    // without a server there is no board to log in to
    const elsewhere = await gaffer(join(tempDir(), 'data'), ['login'], env());
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain('gaffer serve');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const restarted = await startServe(data, { env: env() });
    const fresh = await loginUrlOf(restarted);
    expect(fresh).not.toBe(login);
    expect((await visit(login.replace(server.url, restarted.url))).status).toBe(401);
    expect((await visit(`${restarted.url}/`, cookie)).status).toBe(401);
    expect((await visit(fresh)).status).toBe(303);
  });

  it('a worker that calls the API without the secret gets 401 and creates nothing (even with a route to it)', async () => {
    const data = join(tempDir(), 'data');
    // no sandbox, so the worker does have a route to the host's loopback
    const server = await startServe(data, { env: env({ GAFFER_SANDBOX: 'off' }) });
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const target = makeWorkspace({ 'b.txt': 'b\n' });
    const attack =
      `node -e 'const u=process.argv[1]; const b=JSON.stringify({workspace:process.argv[2],verify:"none",tasks:[{instruction:"x",command:"echo pwned > b.txt"}]});` +
      ` fetch(u+"/api/jobs",{method:"POST",headers:{"content-type":"application/json"},body:b}).then(async r=>console.log("status", r.status, await r.text()))' ${server.url} ${target}; echo called > called.txt`;
    const submitted = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'call the API', command: attack }],
    });
    expect(submitted.status).toBe(202);
    const done = await call(server.url, 'GET', `/api/jobs/${submitted.json.id}/wait?timeout_s=60`);
    expect(done.json.state.status, JSON.stringify(done.json.state)).toBe('done');
    const log = await call(
      server.url,
      'GET',
      `/api/jobs/${submitted.json.id}/workers/${done.json.state.result.workers[0].name}/log`,
    );
    expect(log.text).toContain('status 401');
    expect(log.text).toContain('unauthorized');
    expect((await call(server.url, 'GET', '/api/jobs')).json.jobs).toHaveLength(1);
    expect(readFileSync(join(target, 'b.txt'), 'utf8')).toBe('b\n');
  });

  it('MCP on stdio works beside a running server with nothing passed (it runs its own engine on the data dir)', async () => {
    const data = join(tempDir(), 'data');
    const server = await startServe(data, { env: env() });
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const client = new Client({ name: 'credential-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: BIN,
        args: ['--data-dir', data, 'mcp'],
        env: env() as Record<string, string>,
        stderr: 'ignore',
      }),
    );
    try {
      const dispatched = (await client.callTool({
        name: 'workers_dispatch',
        arguments: { workspace: ws, verify: 'none', tasks: [{ instruction: 'append', command: 'echo b >> a.txt' }] },
      })) as { isError?: boolean; structuredContent?: { id: string } };
      expect(dispatched.isError).toBeFalsy();
      const id = dispatched.structuredContent?.id as string;
      const waited = (await client.callTool({ name: 'workers_wait', arguments: { job_id: id, timeout_s: 60 } })) as {
        structuredContent?: { met: boolean; state: { status: string } };
      };
      expect(waited.structuredContent).toMatchObject({ met: true, state: { status: 'done' } });
      // one data dir, one truth: the server sees the job MCP ran
      expect((await call(server.url, 'GET', `/api/jobs/${id}`, undefined, bearerFor(server.url))).json.status).toBe(
        'done',
      );
    } finally {
      await client.close();
    }
  });
});
