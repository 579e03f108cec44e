import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually } from '../reliability/helpers.js';
import {
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
 * An entry runs once, on the node that took it, and only while it is live: what rides on Redis is
 * an opaque reference, signed for its entry id, namespace and expiry, whose attempt the coordinator
 * hands over once to the node holding the entry's BullMQ lock.
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
    const queue = new Queue('runner-shell', connection(redis.url));
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
      expect(server.stderr()).toContain(`claim of ${key}`);
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

  it('another node reads nothing of an attempt from Redis — not its instruction, command or ticket — and cannot claim it or fetch its workspace', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    await startNode(redis.url, 'owner');
    const tag = `t${Date.now().toString(36)}`;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'grep -q done out.txt',
      tasks: [
        {
          name: 'private',
          instruction: `instruction-${tag}: keep this between us`,
          command: `echo begun; sleep 3; echo done > out.txt; : command-${tag}`,
        },
      ],
    });
    const id = res.json.id as string;
    await waitFor(server, id, 'event:begun', 30);
    // a second node has the Redis URL and the node token: all it can read there, read now while the attempt runs
    const leaks = (all: Map<string, string>) =>
      [...all].filter(([, v]) => v.includes(`instruction-${tag}`) || v.includes(`command-${tag}`)).map(([k]) => k);
    expect(leaks(await readAllOfRedis(redis.url))).toEqual([]);
    const queue = new Queue('runner-shell', connection(redis.url));
    const reader = new Redis(redis.url);
    try {
      const entry = (await queue.getActive()).find((j) => j.id?.startsWith(`${id}.`));
      expect(entry).toBeDefined();
      const key = entry?.id as string;
      // every string of the entry tried as the attempt's ticket: none fetches its workspace
      for (const candidate of stringsIn(entry?.data)) {
        const base = await call(server.url, 'GET', `/api/node/attempts/${encodeURIComponent(key)}/base`, undefined, {
          authorization: `Bearer ${NODE_TOKEN}`,
          'gaffer-ticket': candidate,
        });
        expect(base.status, `the ticket ${candidate}`).not.toBe(200);
      }
      // the entry's one-time value, with a lock of its own or with the owner's lock read from Redis: no attempt
      const once = (entry?.data as { entry?: { once?: string } }).entry?.once ?? 'x'.repeat(43);
      const ownersLock = (await reader.get(`gaffer:runner-shell:${key}:lock`)) ?? 'none';
      for (const lock of ['thief:0', ownersLock]) {
        const claim = await call(
          server.url,
          'POST',
          `/api/node/attempts/${encodeURIComponent(key)}/claim`,
          { once, lock, node: 'thief' },
          { authorization: `Bearer ${NODE_TOKEN}` },
        );
        expect(claim.status, `claim with lock ${lock}: ${claim.text}`).not.toBe(200);
        expect(claim.text).not.toContain(tag);
      }
      // a malformed claim is refused naming the field and the value
      const bad = await call(
        server.url,
        'POST',
        `/api/node/attempts/${encodeURIComponent(key)}/claim`,
        { once: 'short', lock: 'l', node: 'thief' },
        { authorization: `Bearer ${NODE_TOKEN}` },
      );
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: 'invalid_request', field: 'once' });
      expect(bad.json.error.message).toContain('got "short"');
    } finally {
      await queue.close();
      reader.disconnect();
    }
    // the owner's attempt is untouched by all that
    const answer = (await waitFor(server, id, 'done', 60)).state;
    expect(answer.status, answer.verdict).toBe('done');
    expect((await eventsOf(server, id)).filter((e) => e.event === 'node' && e.node_event === 'taken')).toHaveLength(1);
    expect(leaks(await readAllOfRedis(redis.url))).toEqual([]);
  }, 90_000);
});
