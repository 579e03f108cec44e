import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { BIN, call, eventually } from '../reliability/helpers.js';
import { credentialOf, eventsOf, HAS_REDIS, startCoordinator, startNode, startRedis, waitFor } from './harness.js';

/** Submits a shell job writing one file, verified on the coordinator. */
async function submit(url: string, i: number): Promise<string> {
  const ws = makeWorkspace({ 'README.md': `job ${i}\n` }, { git: true });
  const res = await call(url, 'POST', '/api/jobs', {
    workspace: ws,
    runner: 'shell',
    verify: `grep -qx 'job ${i}' out.txt`,
    tasks: [{ name: 'write', instruction: 'write', command: `echo 'job ${i}' > out.txt` }],
  });
  expect(res.status).toBe(202);
  return res.json.id as string;
}

/** The nodes that took a job's attempts, in order. */
async function takers(server: Parameters<typeof eventsOf>[0], id: string): Promise<string[]> {
  return (await eventsOf(server, id))
    .filter((e) => e.event === 'node' && e.node_event === 'taken')
    .map((e) => e.node as string);
}

/** Passes a request on to `target` (the coordinator) and its answer back. */
function forward(req: http.IncomingMessage, res: http.ServerResponse, target: string): void {
  const out = http.request(
    `${target}${req.url ?? ''}`,
    { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', () => res.writeHead(502).end());
  req.pipe(out);
}

/**
 * A proxy in front of the coordinator that passes the node's check and claim through, but answers
 * 502 to the base and the result: a node behind it fails to fetch every attempt it claims.
 */
async function brokenProxy(target: string): Promise<{ url: string; failed: () => number; close: () => void }> {
  let failed = 0;
  const server = http.createServer((req, res) => {
    if (/\/(base|result)$/.test(req.url ?? '')) {
      failed++;
      req.resume();
      res.writeHead(502).end('bad gateway (test)');
      return;
    }
    forward(req, res, target);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failed: () => failed,
    close: () => server.close(),
  };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** issue "a cluster an operator can trust", point 4: a node that cannot serve takes no work, and says why. */
describe.skipIf(!HAS_REDIS)('a node that cannot serve its coordinator (needs redis-server)', () => {
  it('a node with a stale credential and one that cannot reach the coordinator take nothing and say why; every job is proved on the node that can', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    // node stale's credential was issued again on the coordinator: the one it was given is no longer live
    credentialOf('stale');
    const stale = `stale.${randomBytes(32).toString('base64url')}`;
    const port = await closedPort();
    const [staleNode, lostNode] = await Promise.all([
      startNode(redis.url, 'stale', { env: { GAFFER_NODE_TOKEN: stale } }),
      startNode(redis.url, 'lost', { args: ['--coordinator', `http://127.0.0.1:${port}`] }),
    ]);
    // both say why they take nothing, with the URL they tried and what to fix; never the token
    await eventually(() => staleNode.stderr().includes("refused this node's credential"), 15_000);
    await eventually(() => lostNode.stderr().includes('cannot reach the coordinator'), 15_000);
    expect(staleNode.stderr()).toContain(
      `the coordinator at ${server.url} refused this node's credential (HTTP 401): it is unknown there or revoked`,
    );
    expect(staleNode.stderr()).toContain('gaffer nodes issue NAME');
    expect(staleNode.stderr()).not.toContain(stale.slice('stale.'.length));
    expect(lostNode.stderr()).toContain(`cannot reach the coordinator at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect(lostNode.stderr()).not.toContain(credentialOf('lost').split('.')[1] as string);
    // the operator sees both, and why they take nothing: the cluster is degraded
    let view: { nodes: { name: string; cannot: string | null }[]; problems: string[] } | undefined;
    await eventually(async () => {
      view = (await call(server.url, 'GET', '/api/nodes')).json as typeof view;
      return (view?.nodes ?? []).filter((n) => n.cannot !== null && n.cannot !== 'not checked yet').length === 2;
    }, 15_000);
    expect(view?.nodes.find((n) => n.name === 'stale')?.cannot).toContain("refused this node's credential");
    expect(view?.problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^node stale takes nothing: .*refused this node's credential/)]),
    );
    // the coordinator said at start that only nodes on its machine reach it at a loopback address
    expect(server.stderr()).toContain(
      `nodes reach this coordinator at ${server.url}, a loopback address: only nodes on this machine can`,
    );
    // the good node comes last: before the fix the two black holes took attempts and failed each at once
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(server.url, i)));
    await new Promise((r) => setTimeout(r, 1_500));
    await startNode(redis.url, 'good');
    for (const id of ids) {
      const answer = (await waitFor(server, id, 'done', 60)).state;
      expect(answer.status, JSON.stringify(answer.workers)).toBe('done');
      expect(answer.result.proof.verdict).toBe('proved');
      expect(await takers(server, id)).toEqual(['good']);
    }
    expect(staleNode.stderr()).not.toContain('worker starting');
    expect(lostNode.stderr()).not.toContain('worker starting');
  }, 90_000);

  it('an attempt a node fails to fetch goes back to the queue and is done by another node; the failing node stops taking attempts and says so', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const proxy = await brokenProxy(server.url);
    try {
      const flaky = await startNode(redis.url, 'flaky', { args: ['--coordinator', proxy.url] });
      await eventually(() => flaky.stderr().includes('taking attempts'), 15_000);
      const id = await submit(server.url, 1);
      await eventually(() => proxy.failed() >= 1, 30_000);
      await startNode(redis.url, 'good');
      const answer = (await waitFor(server, id, 'done', 60)).state;
      expect(answer.status, JSON.stringify(answer.workers)).toBe('done');
      expect(answer.result.proof.verdict).toBe('proved');
      // one reported attempt: the failed fetch was a try of the same attempt, not an end of it
      expect(answer.result.workers.map((w: { name: string; status: string }) => `${w.name}:${w.status}`)).toEqual([
        'write:done',
      ]);
      const taken = await takers(server, id);
      expect(taken[0]).toBe('flaky');
      expect(taken.at(-1)).toBe('good');
      expect(flaky.stderr()).toContain('stopped taking attempts: fetch the base of');
    } finally {
      proxy.close();
    }
  }, 90_000);

  it('an attempt no node can fetch ends error after a bounded number of tries, saying why', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const proxy = await brokenProxy(server.url);
    try {
      await startNode(redis.url, 'flaky', { args: ['--coordinator', proxy.url] });
      const id = await submit(server.url, 2);
      const answer = (await waitFor(server, id, 'done', 80)).state;
      expect(answer.status).not.toBe('done');
      const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
      const worker = full.result.workers[0];
      expect(worker).toMatchObject({ status: 'error', stop_reason: 'node_failed' });
      expect(worker.error).toContain('could not fetch the base');
      expect(worker.error).toContain('HTTP 502');
      // each attempt of the task was handed out NODE_TRIES (3) times, no more
      expect(proxy.failed()).toBe(3 * full.result.workers.length);
    } finally {
      proxy.close();
    }
  }, 90_000);

  it('the nodes reach the coordinator at its --advertise-url, and it says so at start', async () => {
    const redis = await startRedis();
    // another address of the coordinator: a forwarder to it (where it listens is known once it does)
    let target = '';
    const seen: string[] = [];
    const front = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      forward(req, res, target);
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
    const advertised = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    try {
      const server = await startCoordinator(redis.url, ['--advertise-url', `${advertised}/`]);
      target = server.url;
      await eventually(
        () => server.stderr().includes(`nodes reach this coordinator at ${advertised}, a loopback address`),
        10_000,
      );
      await startNode(redis.url, 'via');
      const id = await submit(server.url, 3);
      const answer = (await waitFor(server, id, 'done', 60)).state;
      expect(answer.result.proof.verdict).toBe('proved');
      expect(seen).toContain('/api/node/hello');
      expect(seen.some((u) => u.endsWith('/claim'))).toBe(true);
    } finally {
      front.close();
    }
  }, 60_000);

  it('a node refuses a loopback address advertised by a coordinator on another host, and says what to pass', async () => {
    const redis = await startRedis();
    const client = new Redis(redis.url);
    await client.set('gaffer:advertised', JSON.stringify({ url: 'http://127.0.0.1:7070', host: 'far-away-host' }));
    client.disconnect();
    const node = await startNode(redis.url, 'remote');
    await eventually(() => node.stderr().includes('cannot take attempts'), 15_000);
    expect(node.stderr()).toContain(
      'the coordinator (on host far-away-host) advertises http://127.0.0.1:7070, a loopback address',
    );
    expect(node.stderr()).toContain('--advertise-url');
  }, 30_000);

  it('gaffer serve names a bad --advertise-url, and refuses --host 0.0.0.0 without one', () => {
    const dir = tempDir();
    const serve = (...args: string[]) =>
      spawnSync(
        BIN,
        ['--data-dir', join(dir, 'd'), 'serve', '--port', '0', '--queue', 'redis://127.0.0.1:1', ...args],
        {
          encoding: 'utf8',
          env: { ...process.env, GAFFER_URL: '', GAFFER_NODE_TOKEN: '' },
          timeout: 20_000,
        },
      );
    const bad = serve('--advertise-url', 'ftp://x');
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('--advertise-url must be an http(s) URL');
    expect(bad.stderr).toContain('"ftp://x"');
    const secret = serve('--advertise-url', 'http://me:pw@10.0.0.5:7070');
    expect(secret.stderr).toContain('must not hold credentials');
    expect(secret.stderr).not.toContain('pw');
    const any = serve('--host', '0.0.0.0');
    expect(any.stderr).toContain('--host 0.0.0.0 listens on every address but names none a node can reach');
  }, 60_000);
});
