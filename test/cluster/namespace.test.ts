import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, gaffer, type Served } from '../reliability/helpers.js';
import { credentialOf, eventsOf, HAS_REDIS, startCoordinator, startNode, startRedis, waitFor } from './harness.js';

/** A job on `server` that runs for a while on a node and then writes out.txt; its id. */
async function slowJob(server: { url: string }, text: string): Promise<{ id: string; ws: string }> {
  const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
  const res = await call(server.url, 'POST', '/api/jobs', {
    workspace: ws,
    runner: 'shell',
    verify: `grep -qx '${text}' out.txt`,
    tasks: [{ name: 'slow', instruction: 'slow', command: `echo begun; sleep 4; echo '${text}' > out.txt` }],
  });
  expect(res.status).toBe(202);
  return { id: res.json.id as string, ws };
}

const takers = async (server: Served, id: string) =>
  (await eventsOf(server, id)).filter((e) => e.event === 'node' && e.node_event === 'taken').map((e) => e.node);

/** One coordinator per queue namespace: a second one on the same Redis and prefix refuses to start; another prefix is a cluster of its own. */
describe.skipIf(!HAS_REDIS)('queue namespaces (needs redis-server)', () => {
  it("a second coordinator on the same Redis and prefix refuses to start, naming the prefix and the fix; with its own --queue-prefix neither touches the other's work", async () => {
    const redis = await startRedis();
    const first = await startCoordinator(redis.url);
    await startNode(redis.url, 'a1');
    const a = await slowJob(first, 'first');
    await waitFor(first, a.id, 'event:begun', 30);

    // the same namespace: refused at start, saying whose it is and how to choose another
    const refused = await startCoordinator(redis.url).then(
      () => null,
      (err: unknown) => String(err),
    );
    expect(refused).not.toBeNull();
    expect(refused).toContain('the queue namespace "gaffer"');
    expect(refused).toContain('held by another coordinator');
    expect(refused).toContain(`pid ${first.pid}`);
    expect(refused).toContain('--queue-prefix');

    // a namespace of its own, with a node of its own
    const second = await startCoordinator(redis.url, ['--queue-prefix', 'team-b']);
    await startNode(redis.url, 'b1', { args: ['--queue-prefix', 'team-b'] });
    const b = await slowJob(second, 'second');

    const [endA, endB] = await Promise.all([waitFor(first, a.id, 'done', 60), waitFor(second, b.id, 'done', 60)]);
    expect(endA.state.status, endA.state.verdict).toBe('done');
    expect(endB.state.status, endB.state.verdict).toBe('done');
    expect(readFileSync(join(a.ws, 'out.txt'), 'utf8')).toBe('first\n');
    expect(readFileSync(join(b.ws, 'out.txt'), 'utf8')).toBe('second\n');
    // each namespace's work ran once, on its own node
    expect(await takers(first, a.id)).toEqual(['a1']);
    expect(await takers(second, b.id)).toEqual(['b1']);
    expect(endA.state.result.workers).toHaveLength(1);
  }, 90_000);

  it('a coordinator killed without stopping is replaced at once by a new one on the same host', async () => {
    const redis = await startRedis();
    const first = await startCoordinator(redis.url);
    await startNode(redis.url, 'k1');
    first.child.kill('SIGKILL');
    await first.exited;
    const next = await startCoordinator(redis.url);
    const job = await slowJob(next, 'after');
    const end = (await waitFor(next, job.id, 'done', 60)).state;
    expect(end.status, end.verdict).toBe('done');
  }, 90_000);

  it('a coordinator whose namespace another took meanwhile says so and puts no more attempts on the queue', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const node = await startNode(redis.url, 'l1');
    // what a coordinator elsewhere writes once this one's claim has expired (it was cut off past 30 s)
    const other = { id: 'other', host: 'elsewhere', pid: 1, dataDir: '/srv/other', since: Date.now() };
    const writer = new Redis(redis.url);
    try {
      await writer.set('gaffer:coordinator', JSON.stringify(other), 'PX', 120_000);
    } finally {
      writer.disconnect();
    }
    await eventually(
      () => server.stderr().includes('another coordinator took the queue namespace "gaffer"'),
      20_000,
      'the coordinator to notice',
    );
    expect(server.stderr()).toContain('data dir /srv/other');
    const job = await slowJob(server, 'never');
    const end = (await waitFor(server, job.id, 'done', 30)).state;
    expect(end.status).not.toBe('done');
    const full = (await call(server.url, 'GET', `/api/jobs/${job.id}?full=1`)).json;
    expect(full.result.workers[0].error).toContain('another coordinator took the queue namespace');
    expect(node.stderr()).not.toContain('worker starting');
  }, 60_000);

  it('a --queue-prefix that cannot name a namespace is refused with the field, the value and what it may hold', async () => {
    const env = { ...process.env, GAFFER_URL: '', GAFFER_NODE_TOKEN: '' };
    const dataDir = join(tempDir(), 'data');
    const serve = await gaffer(
      dataDir,
      ['serve', '--port', '0', '--queue', 'redis://127.0.0.1:1', '--queue-prefix', 'a:b'],
      env,
    );
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('--queue-prefix must be 1..64 of A-Z a-z 0-9 . _ -');
    expect(serve.stderr).toContain('"a:b"');
    // with a node's credential: the namespace is what is refused
    const node = await gaffer(dataDir, ['node', '--queue', 'redis://127.0.0.1:1', '--queue-prefix', ''], {
      ...env,
      GAFFER_NODE_TOKEN: credentialOf('n1'),
    });
    expect(node.code).toBe(2);
    expect(node.stderr).toContain('--queue-prefix must be');
    const ttl = await gaffer(
      dataDir,
      ['serve', '--port', '0', '--queue', 'redis://127.0.0.1:1', '--entry-ttl-s', '0'],
      env,
    );
    expect(ttl.code).toBe(2);
    expect(ttl.stderr).toContain('--entry-ttl-s must be 1..604800');
    expect(ttl.stderr).toContain('"0"');
  }, 60_000);
});
