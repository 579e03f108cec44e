import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually } from '../reliability/helpers.js';
import {
  credentialOf,
  eventsOf,
  HAS_REDIS,
  NODE_TOKEN,
  readAllOfRedis,
  startCoordinator,
  startNode,
  startRedis,
  waitFor,
} from './harness.js';

const connection = (url: string) => ({ connection: { url, maxRetriesPerRequest: null }, prefix: 'gaffer' });

/** Every string in a value, however deep. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsIn);
  return [];
}

const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

/**
 * An entry runs once, on the node the coordinator offered it to, and only while it is live: what
 * rides on Redis is an opaque reference, signed for its node, entry id, namespace and expiry, whose
 * attempt the coordinator hands over once, to that node's credential alone.
 */
describe.skipIf(!HAS_REDIS)('queue entries (needs redis-server)', () => {
  it('a completed entry added again, under another id or its own, runs nothing: the node refuses it and says so', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    // sandbox off on the node: its worker can leave a mark outside its worktree, once per run
    const node = await startNode(redis.url, 'r1', { env: { GAFFER_SANDBOX: 'off' } });
    const runs = join(tempDir('gaffer-runs-'), 'runs');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'none',
      tasks: [{ name: 'once', instruction: 'once', command: `echo ran >> '${runs}'; echo b > a.txt` }],
    });
    const id = res.json.id as string;
    expect((await waitFor(server, id, 'done', 60)).state.status).toBe('done');
    expect(linesOf(runs)).toEqual(['ran']);
    const queue = new Queue('node-r1', connection(redis.url));
    try {
      const original = (await queue.getCompleted()).find((j) => j.id?.startsWith(`${id}.`));
      expect(original).toBeDefined();
      const data = original?.data as unknown;
      const key = original?.id as string;
      // a copy under a new id, then the entry itself again once BullMQ let go of it
      await queue.add('shell', data, { jobId: 'replayed-copy', attempts: 1 });
      await original?.remove();
      await queue.add('shell', data, { jobId: key, attempts: 1 });
      for (const replay of ['replayed-copy', key])
        await eventually(
          async () => ((await queue.getJob(replay))?.finishedOn ?? 0) > 0,
          30_000,
          `the node's end of ${replay}`,
        );
      expect(linesOf(runs)).toEqual(['ran']);
      expect((await queue.getJob('replayed-copy'))?.failedReason).toContain('refused queue entry replayed-copy');
      expect((await queue.getJob(key))?.failedReason).toContain(`refused queue entry ${key}`);
      // logged by the node, and by the coordinator it tried to claim from
      expect(node.stderr()).toContain('refused queue entry replayed-copy');
      expect(node.stderr()).toContain(`refused queue entry ${key}`);
      expect(server.stderr()).toContain(`claim of ${(data as { entry: { key: string } }).entry.key}`);
      expect(node.stderr().match(/worker starting/g) ?? []).toHaveLength(1);
      // the job is untouched by its replays
      expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('b\n');
      expect((await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json.result.workers).toHaveLength(1);
    } finally {
      await queue.close();
    }
  }, 90_000);

  it('an entry that waited on the queue past --entry-ttl-s runs nothing, and its attempt ends saying so', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url, ['--entry-ttl-s', '2']);
    const runs = join(tempDir('gaffer-runs-'), 'runs');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'none',
      tasks: [{ name: 'late', instruction: 'late', command: `echo ran >> '${runs}'` }],
    });
    const id = res.json.id as string;
    // no node yet: the entry waits past its expiry
    await new Promise((r) => setTimeout(r, 3_000));
    const node = await startNode(redis.url, 'e1', { env: { GAFFER_SANDBOX: 'off' } });
    const answer = (await waitFor(server, id, 'done', 60)).state;
    expect(linesOf(runs)).toEqual([]);
    expect(node.stderr()).toMatch(/refused queue entry \S+: it expired at/);
    expect(node.stderr()).not.toContain('worker starting');
    const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
    expect(full.result.workers[0]).toMatchObject({ status: 'error' });
    expect(full.result.workers[0].error).toContain('expired');
    expect(answer.status).not.toBe('done');
  }, 90_000);

  it('a hostile node with its own credential and the whole Redis — reading the entry another node was given, its one-time value and lock, overwriting the lock — gets nothing of the job; the attempt runs once, and the refused claim is logged', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    // sandbox off on the node: its worker can leave a mark outside its worktree, once per run
    await startNode(redis.url, 'owner', { env: { GAFFER_SANDBOX: 'off' } });
    // the hostile node: a credential of its own, valid on this coordinator, and a connection to every Redis key
    const thief = { authorization: `Bearer ${credentialOf('thief')}` };
    const tag = `t${Date.now().toString(36)}`;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const runs = join(tempDir('gaffer-runs-'), 'runs.log');
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'grep -q done out.txt',
      tasks: [
        {
          name: 'private',
          instruction: `instruction-${tag}: keep this between us`,
          command: `echo ran >> ${runs}; echo begun; sleep 3; echo done > out.txt; : command-${tag}`,
        },
      ],
    });
    const id = res.json.id as string;
    const reader = new Redis(redis.url);
    const queue = new Queue('node-owner', connection(redis.url));
    try {
      // it watches the queue: the entry the coordinator gave node owner, the moment it is there
      let entry: Awaited<ReturnType<Queue['getJobs']>>[number] | undefined;
      await eventually(async () => {
        entry = (await queue.getJobs(['waiting', 'active', 'delayed'])).find((j) => j.id?.startsWith(`${id}.`));
        return entry !== undefined;
      }, 30_000);
      const jobId = entry?.id as string;
      const data = entry?.data as { entry: { key: string; once: string; node: string } };
      expect(data.entry.node).toBe('owner');
      const key = data.entry.key;
      // its lock and one-time value read, and the lock overwritten with the thief's own for longer than the run (and the
      // stall and try counts raised): the coordinator decides the claim by credential, not by anything on the Redis
      const lockKey = `gaffer:node-owner:${jobId}:lock`;
      await eventually(async () => (await reader.get(lockKey)) !== null, 30_000);
      const ownersLock = (await reader.get(lockKey)) as string;
      await reader.set(lockKey, 'thief-lock', 'PX', 60_000);
      await reader.hincrby(`gaffer:node-owner:${jobId}`, 'stc', 1);
      await reader.hincrby(`gaffer:node-owner:${jobId}`, 'atm', 1);
      for (const lock of [ownersLock, 'thief-lock']) {
        const claim = await call(
          server.url,
          'POST',
          `/api/node/attempts/${encodeURIComponent(key)}/claim`,
          { once: data.entry.once, lock },
          thief,
        );
        expect(claim.status, claim.text).toBe(404);
        expect(claim.text).not.toContain(tag);
        expect(claim.text).not.toContain('owner');
      }
      // every string of the entry and of its Redis hash tried as the attempt's ticket: none fetches its workspace or reports for it
      const hash = await reader.hgetall(`gaffer:node-owner:${jobId}`);
      for (const candidate of [...stringsIn(entry?.data), ...Object.values(hash), ownersLock]) {
        const base = await call(server.url, 'GET', `/api/node/attempts/${encodeURIComponent(key)}/base`, undefined, {
          ...thief,
          'gaffer-ticket': candidate,
        });
        expect(base.status).not.toBe(200);
        const progress = await call(
          server.url,
          'POST',
          `/api/node/attempts/${encodeURIComponent(key)}/progress`,
          { type: 'output', lines: ['forged'] },
          { ...thief, 'gaffer-ticket': candidate },
        );
        expect(progress.status).not.toBe(200);
      }
      // the shared node token of old opens nothing
      const old = await call(
        server.url,
        'POST',
        `/api/node/attempts/${encodeURIComponent(key)}/claim`,
        { once: data.entry.once },
        { authorization: `Bearer ${NODE_TOKEN}` },
      );
      expect(old.status).toBe(401);
      expect(old.json.error.message).toContain('gaffer nodes issue NAME');
      expect(old.text).not.toContain(server.dataDir);
      // a malformed claim is refused naming the field and the value
      const bad = await call(
        server.url,
        'POST',
        `/api/node/attempts/${encodeURIComponent(key)}/claim`,
        { once: 'short' },
        thief,
      );
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: 'invalid_request', field: 'once' });
      expect(bad.json.error.message).toContain('got "short"');
    } finally {
      await queue.close();
      reader.disconnect();
    }
    // the owner's attempt ran once, whole, and nothing of it is on the Redis
    const answer = (await waitFor(server, id, 'done', 60)).state;
    expect(answer.status, answer.verdict).toBe('done');
    expect(linesOf(runs)).toEqual(['ran']);
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('done\n');
    const taken = (await eventsOf(server, id)).filter((e) => e.event === 'node' && e.node_event === 'taken');
    expect(taken.map((e) => e.node)).toEqual(['owner']);
    expect(server.stderr()).toMatch(/refused node thief's claim of \S+: it was offered to node owner/);
    const leaks = [...(await readAllOfRedis(redis.url))].filter(
      ([, v]) => v.includes(`instruction-${tag}`) || v.includes(`command-${tag}`) || v.includes('begun'),
    );
    expect(leaks.map(([k]) => k)).toEqual([]);
  }, 120_000);

  it('a Redis writer who deletes a running entry’s lock, again and again, makes it look stalled to BullMQ: the node still runs it once, with another node idle, because its node is still heard', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    // a short stall window: BullMQ's stall checks (the coordinator's and the nodes') come every second or two
    const owner = await startNode(redis.url, 'owner', { stallS: 3, env: { GAFFER_SANDBOX: 'off' } });
    const runs = join(tempDir('gaffer-runs-'), 'runs.log');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'grep -q done out.txt',
      tasks: [
        {
          name: 'held',
          instruction: 'held',
          command: `echo ran >> ${runs}; echo begun; sleep 10; echo done > out.txt`,
        },
      ],
    });
    const id = res.json.id as string;
    await waitFor(server, id, 'event:begun', 30);
    // another node, idle: where a re-offer would run the attempt a second time
    const idle = await startNode(redis.url, 'idle', { stallS: 3, env: { GAFFER_SANDBOX: 'off' } });
    const writer = new Redis(redis.url);
    const queue = new Queue('node-owner', connection(redis.url));
    let deleted = 0;
    try {
      const running = (await queue.getActive()).find((j) => j.id?.startsWith(`${id}.`));
      expect(running).toBeDefined();
      const lockKey = `gaffer:node-owner:${running?.id ?? ''}:lock`;
      // for 8 s, the lock goes as soon as it is there: BullMQ takes the entry for stalled, more than once
      for (const until = Date.now() + 8_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100)))
        deleted += await writer.del(lockKey);
    } finally {
      await queue.close();
      writer.disconnect();
    }
    expect(deleted).toBeGreaterThan(0);
    const answer = (await waitFor(server, id, 'done', 60)).state;
    expect(answer.status, answer.verdict).toBe('done');
    expect(linesOf(runs)).toEqual(['ran']);
    const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
    expect(full.result.workers.map((w: { name: string; status: string }) => `${w.name}:${w.status}`)).toEqual([
      'held:done',
    ]);
    const taken = (await eventsOf(server, id)).filter((e) => e.event === 'node' && e.node_event === 'taken');
    expect(taken.map((e) => e.node)).toEqual(['owner']);
    expect(idle.stderr()).not.toContain('worker starting');
    expect(owner.stderr().match(/worker starting/g) ?? []).toHaveLength(1);
    // BullMQ's word was heard, and named as a hint the coordinator did not act on
    expect(server.stderr()).toMatch(/BullMQ says its entry on node owner's queue (stalled|was failed)/);
  }, 120_000);
});
