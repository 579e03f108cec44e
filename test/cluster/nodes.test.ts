import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { call, eventually, gaffer } from '../reliability/helpers.js';
import { eventsOf, HAS_REDIS, startCoordinator, startNode, startRedis, stopRedis, waitFor } from './harness.js';

const POLL_MS = 20_000;

/** A job of one shell task that runs `command` on a node. */
async function submit(server: { url: string }, command: string, more: Record<string, unknown> = {}): Promise<string> {
  const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
  const res = await call(server.url, 'POST', '/api/jobs', {
    workspace: ws,
    runner: 'shell',
    verify: 'none',
    tasks: [{ name: 'work', instruction: 'work', command }],
    ...more,
  });
  expect(res.status).toBe(202);
  return res.json.id as string;
}

/**
 * What the operator sees of a cluster: the live nodes and runner queues (`GET /api/nodes`,
 * `gaffer nodes`), `/api/health` degraded with why, and a lost node noticed within 2 × `--stall-s`.
 */
describe.skipIf(!HAS_REDIS)('the operator’s view of a cluster (needs Debian redis-server; skipped without it)', () => {
  it('GET /api/nodes and gaffer nodes list each live node with its runners, slots, running attempts and heartbeat, and each queue', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const node = await startNode(redis.url, 'n1', { slots: 2, stallS: 6 });
    const id = await submit(server, 'sleep 30');
    let view: any;
    await eventually(
      async () => {
        view = (await call(server.url, 'GET', '/api/nodes')).json;
        return view.nodes?.[0]?.running?.length === 1;
      },
      POLL_MS,
      'n1 running one attempt in /api/nodes',
    );
    expect(view.redis).toEqual({ ok: true, error: null });
    expect(view.prefix).toBe('gaffer');
    const [n1] = view.nodes;
    expect(n1).toMatchObject({ name: 'n1', runners: ['shell'], slots: 2, stall_s: 6 });
    expect(n1.running[0].key.startsWith(`${id}.`)).toBe(true);
    expect(n1.last_heartbeat_s).toBeLessThanOrEqual(3);
    expect(view.queues).toContainEqual(
      expect.objectContaining({ runner: 'shell', waiting: 0, running: 1, oldest_waiting_s: null, nodes: ['n1'] }),
    );
    expect(view.problems).toEqual([]);
    const health = (await call(server.url, 'GET', '/api/health')).json;
    expect(health).toMatchObject({ ok: true, status: 'ok', problems: [] });

    const cli = await gaffer(server.dataDir, ['nodes']);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/n1 {2}runners shell {2}slots 2 {2}running 1 {2}last heartbeat \d+ s ago/);
    expect(cli.stdout).toMatch(/shell {2}waiting 0 {2}oldest — {2}running 1 {2}nodes n1/);
    // the job says which node ran its attempt
    const job = (await call(server.url, 'GET', `/api/jobs/${id}`)).json;
    expect(job.result.workers[0].node).toBe('n1');
    expect((await gaffer(server.dataDir, ['status', id])).stdout).toContain('on node n1');
    await call(server.url, 'POST', `/api/jobs/${id}/cancel`);
    // the node's log: each line starts with the ISO time
    await eventually(() => node.stderr().includes('worker starting'), POLL_MS, 'the node logging the attempt');
    const lines = node.stderr().split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z gaffer node/);
  }, 60_000);

  it('work waiting for a runner no live node serves, and a Redis that does not answer, make /api/health degraded with why', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    await submit(server, 'echo hi');
    let health: any;
    await eventually(
      async () => {
        health = (await call(server.url, 'GET', '/api/health')).json;
        return health.ok === false;
      },
      POLL_MS,
      'health degraded',
    );
    expect(health.status).toBe('degraded');
    expect(health.problems[0]).toMatch(
      /^1 attempt of runner shell waits \(the oldest \d+ s\) and no live node takes shell: start one with gaffer node --runners shell$/,
    );
    const view = (await call(server.url, 'GET', '/api/nodes')).json;
    expect(view.nodes).toEqual([]);
    expect(view.queues).toContainEqual(expect.objectContaining({ runner: 'shell', waiting: 1, nodes: [] }));
    const cli = await gaffer(server.dataDir, ['nodes']);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain('degraded:');
    expect(cli.stdout).toContain('no live node takes shell');

    await stopRedis(redis);
    const started = Date.now();
    health = (await call(server.url, 'GET', '/api/health')).json;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(health.ok).toBe(false);
    expect(health.problems.join('\n')).toMatch(/the queue at redis:\/\/127\.0\.0\.1:\d+ does not answer/);
  }, 60_000);

  it('a job whose runner no live node takes says it waits for a node, and ends within its ceiling saying why', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const id = await submit(server, 'echo hi', { timeout_s: 10 });
    const first = (await call(server.url, 'GET', `/api/jobs/${id}`)).json;
    const ceilingS = first.ceiling_s as number;
    expect(ceilingS).toBeGreaterThan(0);
    await eventually(
      async () =>
        (await call(server.url, 'GET', `/api/jobs/${id}`)).json.phase === 'work: waiting for a node for shell',
      POLL_MS,
      'the phase saying what the job waits for',
    );
    const ended = (await waitFor(server, id, 'done', 40)).state;
    expect(ended.duration_s).toBeLessThanOrEqual(ceilingS);
    expect(ended.status).not.toBe('done');
    expect(ended.result.workers[0].error).toBe(
      'no node took the attempt within its timeout (10 s): no live node takes shell: start one with gaffer node --runners shell',
    );
    // nothing is left waiting for a node that comes later: it runs nothing
    const late = await startNode(redis.url, 'late');
    await new Promise((r) => setTimeout(r, 3_000));
    expect(late.stderr()).not.toContain('worker starting');
    const view = (await call(server.url, 'GET', '/api/nodes')).json;
    expect(view.queues.filter((q: { waiting: number }) => q.waiting > 0)).toEqual([]);
  }, 60_000);

  for (const how of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`a node lost mid-attempt (${how}) is noticed within 2 × --stall-s, with no other node alive`, async () => {
      const redis = await startRedis();
      const server = await startCoordinator(redis.url);
      const stallS = 4;
      const node = await startNode(redis.url, 'n1', { stallS });
      const id = await submit(server, 'sleep 60');
      await eventually(
        async () => (await eventsOf(server, id)).some((e) => e.event === 'node' && e.node_event === 'taken'),
        POLL_MS,
        'the attempt taken',
      );
      node.child.kill(how);
      const lostAt = Date.now();
      await eventually(
        async () => (await eventsOf(server, id)).some((e) => e.event === 'node' && e.node_event === 'lost'),
        2 * stallS * 1000 + 2_000,
        'the lost node noticed',
      );
      const took = Date.now() - lostAt;
      expect(took).toBeLessThanOrEqual(2 * stallS * 1000);
      // its record expired with its stall window: the list no longer shows it
      await eventually(
        async () => (await call(server.url, 'GET', '/api/nodes')).json.nodes.length === 0,
        POLL_MS,
        'n1 gone from /api/nodes',
      );
      // the work handed over waits for a node that is not there: the job's phase says so
      await eventually(
        async () =>
          /^work\S*: waiting for a node for shell$/.test((await call(server.url, 'GET', `/api/jobs/${id}`)).json.phase),
        POLL_MS,
        'the phase saying the handed-over work waits for a node',
      );
      if (how === 'SIGSTOP') node.child.kill('SIGCONT');
      await call(server.url, 'POST', `/api/jobs/${id}/cancel`);
    }, 60_000);
  }
});
