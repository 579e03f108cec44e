import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { bearerFor, secretOf } from '../helpers/credential.js';
import { eventually, openEngine, openStream, serveEngine, shellTask } from '../http/helpers.js';
import { makeWorkspace } from '../helpers/temp.js';

/** A small seeded PRNG (mulberry32): the same drop pattern on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw socket that sends (part of) a GET and is destroyed after `dropMs`: a client that vanishes without a FIN-ordered close. */
function rawDrop(url: string, path: string, dropMs: number, partial: boolean): Promise<void> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname, () => {
      const head = `GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${secretOf(url)}\r\nAccept: text/event-stream\r\n`;
      socket.write(partial ? head : `${head}\r\n`);
    });
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    setTimeout(() => {
      socket.destroy();
      resolve();
    }, dropMs);
  });
}

describe('SSE clients connecting and dropping at random', () => {
  it('100 clients on a live job and 30 on /api/events, plus dropped long-polls, leave no SSE client, waiter, listener or timer behind', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const health = async () => (await server.call('GET', '/api/health')).json;
    const idle = await health();
    expect(idle).toMatchObject({ sse_clients: 0, waiters: 0, listeners: 0, timers: 0 });

    // a live job that keeps talking for the whole test
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('echo started; for i in $(seq 1 400); do echo line-$i; sleep 0.02; done; sleep 60')],
    });
    const watcher = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
    await watcher.until((f) => f.some((x) => x.event === 'job' && JSON.parse(x.data).event === 'started'));
    watcher.abort();
    await watcher.done;
    await eventually(async () => (await health()).sse_clients === 0, 3_000, 'the watcher to go');
    const live = await health();

    // a few clients that stay until the health answer has counted them: the counters do move
    const held = [
      ...Array.from({ length: 10 }, () => openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`)),
      ...Array.from({ length: 5 }, () => {
        const controller = new AbortController();
        const done = fetch(`${server.url}/api/jobs/${job.id}/wait?for=event:never-said&timeout_s=60`, {
          signal: controller.signal,
          headers: bearerFor(server.url),
        }).then(
          () => undefined,
          (err: Error) => {
            if (err.name !== 'AbortError') throw err;
          },
        );
        return { abort: () => controller.abort(), done };
      }),
    ];
    await eventually(
      async () => {
        const h = await health();
        return h.sse_clients >= 10 && h.waiters >= 5;
      },
      10_000,
      'the held clients to be counted',
    );

    const random = seeded(0x5eed);
    const jobStream = `/api/jobs/${job.id}/events?stream=1`;
    const clients: Promise<unknown>[] = [];
    let readSome = 0;
    for (let i = 0; i < 130; i++) {
      const path = i < 100 ? jobStream : '/api/events?stream=1';
      const startMs = Math.floor(random() * 1_000);
      const dropMs = Math.floor(random() * 1_500);
      const kind = random();
      clients.push(
        (async () => {
          await sleep(startMs);
          if (kind < 0.2) {
            // a socket gone before (or right after) its request was complete
            await rawDrop(server.url, path, dropMs % 200, kind < 0.1);
            return;
          }
          if (kind < 0.4) {
            await rawDrop(server.url, path, dropMs, false);
            return;
          }
          // a streaming client that resumes from a random point and aborts at a random time
          const resume: Record<string, string> =
            kind < 0.7 ? {} : { 'last-event-id': String(Math.floor(random() * 50)) };
          const stream = openStream(`${server.url}${path}`, resume);
          await sleep(dropMs);
          if (stream.frames.length > 0) readSome++;
          stream.abort();
          await stream.done;
        })(),
      );
    }
    // long-polls on the same job, dropped mid-wait
    for (let i = 0; i < 20; i++) {
      const dropMs = 50 + Math.floor(random() * 1_000);
      clients.push(
        (async () => {
          const controller = new AbortController();
          const pending = fetch(`${server.url}/api/jobs/${job.id}/wait?for=event:never-said&timeout_s=60`, {
            signal: controller.signal,
            headers: bearerFor(server.url),
          }).catch((err: Error) => {
            if (err.name !== 'AbortError') throw err;
          });
          await sleep(dropMs);
          controller.abort();
          await pending;
        })(),
      );
    }
    await Promise.all(clients);
    for (const h of held) h.abort();
    await Promise.all(held.map((h) => h.done));
    expect(readSome).toBeGreaterThan(0);

    await eventually(
      async () => {
        const h = await health();
        return h.sse_clients === 0 && h.waiters === 0 && h.timers === 0 && h.listeners === live.listeners;
      },
      10_000,
      'the counters back to where the live job alone puts them',
    );

    // the server still answers, and runs and ends jobs
    expect((await server.call('GET', `/api/jobs/${job.id}`)).json.status).toBe('running');
    await server.call('POST', `/api/jobs/${job.id}/cancel`);
    await engine.settled(job.id);
    const ws2 = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: next } = await server.call('POST', '/api/jobs', {
      workspace: ws2,
      verify: 'none',
      tasks: [shellTask('echo b >> a.txt')],
    });
    expect((await server.call('GET', `/api/jobs/${next.id}/wait?timeout_s=30`)).json).toMatchObject({
      met: true,
      state: { status: 'done' },
    });
    await eventually(
      async () => {
        const h = await health();
        return h.live_jobs === 0 && h.sse_clients === 0 && h.waiters === 0 && h.listeners === 0 && h.timers === 0;
      },
      5_000,
      'everything at 0 once no job is live',
    );
  });
});
