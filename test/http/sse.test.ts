import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { makeWorkspace } from '../helpers/temp.js';
import { eventually, openEngine, openStream, serveEngine, shellTask, type SseFrame } from './helpers.js';

const jobFrames = (frames: SseFrame[]) => frames.filter((f) => f.event === 'job');
const seqs = (frames: SseFrame[]) => jobFrames(frames).map((f) => Number(f.id));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('live events (SSE) over a real socket', () => {
  it('every event as id/event: job/data, in order, then `end` with {id, status, verdict, error}, then the stream closes', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('for i in 1 2 3; do echo line-$i; sleep 0.3; done; echo b > b.txt')],
    });

    const stream = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
    await stream.done;
    expect(stream.status).toBe(200);
    const frames = stream.frames;
    const end = frames.at(-1) as SseFrame;
    expect(end.event).toBe('end');
    const final = engine.get(job.id);
    expect(JSON.parse(end.data)).toEqual({ id: job.id, status: 'done', verdict: final.verdict, error: null });
    expect(frames.filter((f) => f.event === 'end')).toHaveLength(1);

    const stored = engine.events(job.id).events;
    expect(seqs(frames)).toEqual(stored.map((e) => e.seq));
    expect(seqs(frames)).toEqual(range(1, stored.length));
    for (const f of jobFrames(frames)) expect(JSON.parse(f.data).seq).toBe(Number(f.id));
    expect(jobFrames(frames).map((f) => JSON.parse(f.data))).toEqual(stored);
    const phases = stored.filter((e) => e.name === 'job' && e.event === 'phase').map((e) => e.message);
    expect(phases[0]).toBe('queued');
    expect(phases).toContain('workers running');
    expect(phases.at(-1)).toBe('settled');
    expect(stored.some((e) => e.event === 'output' && String(e.message).includes('line-'))).toBe(true);
    expect(stream.closed).toBe(true);
    await eventually(
      async () => (await server.call('GET', '/api/health')).json.sse_clients === 0,
      2_000,
      'sse_clients 0',
    );
  });

  it('worker output reaches the stream coalesced: at most one `output` per worker per 250 ms (bar the final flush), each ≤ 2 KiB of the newest lines', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const command =
      'for round in 1 2 3 4 5 6; do seq 1 20000 | sed "s/^/r$round-line-/"; sleep 0.1; done; echo the-last-line';
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask(command)],
    });
    const stream = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
    await stream.done;
    const outputs = jobFrames(stream.frames)
      .map((f) => JSON.parse(f.data) as { event: string; name: string; ts: number; message: string })
      .filter((e) => e.event === 'output');
    expect(outputs.length).toBeGreaterThanOrEqual(2);
    for (const e of outputs) expect(Buffer.byteLength(e.message)).toBeLessThanOrEqual(2_048);
    // the worker's end flushes what is left at once (before its `done`): the spacing holds up to it
    for (let i = 1; i < outputs.length - 1; i++)
      expect((outputs[i] as { ts: number }).ts - (outputs[i - 1] as { ts: number }).ts).toBeGreaterThanOrEqual(0.24);
    expect(outputs.at(-1)?.message.endsWith('the-last-line')).toBe(true);
    // far fewer events than lines
    expect(outputs.length).toBeLessThan(40);
  });

  it('reconnecting with Last-Event-ID resumes right after that sequence: none missing, none twice', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('for i in $(seq 1 8); do echo tick-$i; sleep 0.25; done')],
    });

    const first = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
    await first.until((f) => jobFrames(f).some((x) => JSON.parse(x.data).event === 'output'));
    first.abort();
    await first.done;
    const seen = seqs(first.frames);
    const last = seen.at(-1) as number;
    expect(seen).toEqual(range(1, last));

    // the job goes on while nobody listens
    await new Promise((r) => setTimeout(r, 600));
    const second = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`, { 'last-event-id': String(last) });
    await second.done;
    expect(second.frames.at(-1)?.event).toBe('end');
    expect(second.frames.some((f) => f.event === 'gap')).toBe(false);
    const resumed = seqs(second.frames);
    expect(resumed[0]).toBe(last + 1);
    expect([...seen, ...resumed]).toEqual(engine.events(job.id).events.map((e) => e.seq));

    // a resume point past the end gives just the end
    const third = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`, {
      'last-event-id': String(engine.events(job.id).produced),
    });
    await third.done;
    expect(third.frames.map((f) => f.event)).toEqual(['end']);
  });

  it('asking for events older than the newest 5,000 gives one `gap` with {missed} first', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('true')],
    });
    await engine.settled(job.id);
    const insert = engine.store.db.transaction(() => {
      for (let i = 0; i < 6_000; i++)
        engine.store.appendEvent(job.id, { name: 'worker-1', event: 'output', message: `filler ${i}` });
    });
    insert();
    const stored = engine.events(job.id).events;
    const oldest = (stored[0] as { seq: number }).seq;
    const produced = engine.events(job.id).produced;
    expect(oldest).toBeGreaterThan(1);
    expect(produced - oldest + 1).toBeGreaterThanOrEqual(5_000);

    const stream = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`, { 'last-event-id': '3' });
    await stream.done;
    const gaps = stream.frames.filter((f) => f.event === 'gap');
    expect(gaps).toHaveLength(1);
    expect(stream.frames[0]?.event).toBe('gap');
    expect(JSON.parse(gaps[0]?.data as string)).toEqual({ missed: oldest - 4 });
    expect(seqs(stream.frames)).toEqual(range(oldest, produced));
    expect(stream.frames.at(-1)?.event).toBe('end');

    // a client that resumes inside what is kept gets no gap
    const inside = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`, {
      'last-event-id': String(produced - 10),
    });
    await inside.done;
    expect(inside.frames.map((f) => f.event)).toEqual([...Array(10).fill('job'), 'end']);
  });

  it('a client that disconnects mid-stream leaves nothing behind (sse_clients, waiters, listeners, timers back to 0)', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('echo started; sleep 30')],
    });
    const health = async () => (await server.call('GET', '/api/health')).json;
    const idle = await health();

    const streams = [0, 1, 2].map(() => openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`));
    const all = openStream(`${server.url}/api/events?stream=1`);
    for (const s of streams)
      await s.until((f) => f.some((x) => x.event === 'job' && JSON.parse(x.data).event === 'started'));
    const busy = await health();
    expect(busy).toMatchObject({ sse_clients: 4, live_jobs: 1 });
    expect(busy.timers).toBeGreaterThanOrEqual(3);
    expect(busy.listeners).toBeGreaterThan(idle.listeners);

    for (const s of [...streams, all]) s.abort();
    await Promise.all([...streams, all].map((s) => s.done));
    await eventually(
      async () => {
        const h = await health();
        return h.sse_clients === 0 && h.timers === 0 && h.waiters === 0 && h.listeners === idle.listeners;
      },
      3_000,
      'the counters back to idle',
    );

    await server.call('POST', `/api/jobs/${job.id}/cancel`);
    await engine.settled(job.id);
    expect(await health()).toMatchObject({ sse_clients: 0, waiters: 0, listeners: 0, timers: 0, live_jobs: 0 });
  });

  it('GET /api/events?stream=1 delivers `created` and `status` events of a new job', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const stream = openStream(`${server.url}/api/events?stream=1`);
    await eventually(
      async () => (await server.call('GET', '/api/health')).json.sse_clients === 1,
      2_000,
      'the stream to open',
    );
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      title: 'watched',
      tasks: [shellTask('echo b > b.txt')],
    });
    await stream.until((f) => f.some((x) => x.event === 'status' && JSON.parse(x.data).status === 'done'));
    const mine = stream.frames.map((f) => ({ event: f.event, ...JSON.parse(f.data) })).filter((f) => f.id === job.id);
    expect(mine[0]).toMatchObject({ event: 'created', id: job.id, title: 'watched', workspace: ws });
    expect(mine.filter((f) => f.event === 'status').map((f) => f.status)).toEqual(
      expect.arrayContaining(['running', 'done']),
    );
    expect(mine.at(-1)).toMatchObject({ event: 'status', status: 'done', verdict: engine.get(job.id).verdict });
    stream.abort();
    await stream.done;
    expect((await server.call('GET', '/api/events')).status).toBe(400);
    expect((await server.call('GET', '/api/jobs/ffffffffffff/events?stream=1')).status).toBe(404);
  });

  it('GET /api/events?stream=1 sends `progress` {id, status, phase, progress} as workers are queued, start and end and the job changes phase — not on output, never after the job ended', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const stream = openStream(`${server.url}/api/events?stream=1`);
    await eventually(
      async () => (await server.call('GET', '/api/health')).json.sse_clients === 1,
      2_000,
      'the stream to open',
    );
    // output every 300 ms while nothing else happens: coalesced into an `output` event each
    const chatty = 'for i in 1 2 3 4 5 6 7 8; do echo out-$i; sleep 0.3; done';
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [
        { ...shellTask(chatty), name: 'one' },
        { ...shellTask('echo two'), name: 'two' },
      ],
    });
    await stream.until((f) =>
      f.some(
        (x) =>
          x.event === 'status' &&
          JSON.parse(x.data).id === job.id &&
          ['done', 'partial', 'error'].includes(JSON.parse(x.data).status),
      ),
    );
    const mine = stream.frames.map((f) => ({ event: f.event, ...JSON.parse(f.data) })).filter((f) => f.id === job.id);
    const progress = mine.filter((f) => f.event === 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const p of progress) {
      expect(Object.keys(p).sort()).toEqual(['event', 'id', 'phase', 'progress', 'status']);
      expect(Object.keys(p.progress).sort()).toEqual(['one', 'two']);
    }
    const seen = new Set(
      progress.flatMap((p) =>
        Object.values(p.progress as Record<string, { last_event: string }>).map((e) => e.last_event),
      ),
    );
    expect(seen).toContain('started');
    expect(seen).toContain('done');
    expect(progress.map((p) => p.phase)).toContain('workers running');
    // output adds none: at most one per queued, started and done of each worker and per phase
    const events = engine.events(job.id).events;
    expect(events.filter((e) => e.event === 'output').length).toBeGreaterThanOrEqual(6);
    const moves = events.filter((e) =>
      e.name === 'job' ? e.event === 'phase' : ['queued', 'started', 'done'].includes(e.event),
    ).length;
    expect(progress.length).toBeLessThanOrEqual(moves);
    const final = mine.findIndex(
      (f) =>
        f.event === 'status' &&
        !['queued', 'running', 'verifying', 'awaiting_approval', 'cancelling'].includes(f.status),
    );
    expect(mine.slice(final + 1).filter((f) => f.event === 'progress')).toEqual([]);
    stream.abort();
    await stream.done;
  });

  it('follows a job that another process (engine) on the same data dir runs, through the store', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const other = await Engine.open({ dataDir: engine.dataDir });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' });
      const { job } = other.submit({
        workspace: ws,
        verify: 'none',
        tasks: [shellTask('for i in 1 2 3; do echo x-$i; sleep 0.2; done; echo b > b.txt')],
      });
      const stream = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
      await stream.done;
      expect(stream.frames.at(-1)?.event).toBe('end');
      expect(JSON.parse(stream.frames.at(-1)?.data as string)).toMatchObject({ id: job.id, status: 'done' });
      expect(seqs(stream.frames)).toEqual(other.events(job.id).events.map((e) => e.seq));
    } finally {
      await other.close();
    }
  });

  it('a server shutting down ends open streams with their `end` event (interrupted)', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('echo started; sleep 60')],
    });
    const stream = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
    await stream.until((f) => f.some((x) => x.event === 'job' && JSON.parse(x.data).event === 'started'));
    const started = performance.now();
    await server.close();
    expect(performance.now() - started).toBeLessThan(10_000);
    await stream.done;
    const end = stream.frames.at(-1) as SseFrame;
    expect(end.event).toBe('end');
    expect(JSON.parse(end.data)).toMatchObject({
      id: job.id,
      status: 'interrupted',
      error: 'interrupted by a shutdown of gaffer',
    });
    const reopened = await Engine.open({ dataDir: engine.dataDir });
    try {
      expect(reopened.get(job.id)).toMatchObject({
        status: 'interrupted',
        verdict: expect.stringContaining('interrupted by a shutdown of gaffer'),
      });
    } finally {
      await reopened.close();
    }
  });
});
