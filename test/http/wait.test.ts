import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { bearerFor } from '../helpers/credential.js';
import { makeWorkspace } from '../helpers/temp.js';
import { eventually, jobRows, openEngine, serveEngine, shellTask } from './helpers.js';

const wait = (id: string, condition: string, timeoutS: number) =>
  `/api/jobs/${id}/wait?for=${encodeURIComponent(condition)}&timeout_s=${timeoutS}`;

describe('wait_for over HTTP', () => {
  it('done, phase:, event:, worker:*:running and changed each resolve while the job runs', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'slow', ...shellTask('echo marker-4711; sleep 1; echo b > b.txt; sleep 0.5') }],
    });
    const [running, phase, event, changed, done] = await Promise.all([
      server.call('GET', wait(job.id, 'worker:*:running', 20)),
      server.call('GET', wait(job.id, 'phase:workers running', 20)),
      server.call('GET', wait(job.id, 'event:marker-4711', 20)),
      server.call('GET', wait(job.id, 'changed', 20)),
      server.call('GET', wait(job.id, 'done', 20)),
    ]);
    expect(running.json).toMatchObject({ met: true, condition: 'worker:*:running' });
    expect(phase.json).toMatchObject({ met: true, condition: 'phase:workers running' });
    expect(event.json).toMatchObject({ met: true, condition: 'event:marker-4711' });
    expect(changed.json).toMatchObject({ met: true, condition: 'changed' });
    // changed resolved around the write (after ~1 s), well before the end
    expect(changed.json.waited_s).toBeGreaterThanOrEqual(0.7);
    expect(changed.json.state.status).not.toBe('done');
    expect(done.json).toMatchObject({ met: true, condition: 'done', state: { id: job.id, status: 'done' } });
    expect(done.json.state.wait_again).toBeUndefined();
    for (const early of [running, phase, event]) expect(early.json.waited_s).toBeLessThan(done.json.waited_s);
    expect((await server.call('GET', wait(job.id, 'worker:slow:done', 1))).json.met).toBe(true);

    // on a final job: done holds at once; anything else can no longer hold and answers at once
    for (const condition of ['phase:no such phase', 'event:never-printed', 'worker:*:rate_limited', 'changed']) {
      const started = performance.now();
      const r = await server.call('GET', wait(job.id, condition, 30));
      expect([condition, r.status, r.json.met]).toEqual([condition, 200, false]);
      expect(performance.now() - started).toBeLessThan(1_500);
    }
    // a condition that held in the past holds
    expect((await server.call('GET', wait(job.id, 'event:marker-4711', 30))).json.met).toBe(true);
    expect((await server.call('GET', '/api/health')).json).toMatchObject({ waiters: 0, listeners: 0 });
  });

  it('a timeout is not an error: met false with how long it waited', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('sleep 30')],
    });
    const [notDone, notChanged] = await Promise.all([
      server.call('GET', wait(job.id, 'done', 0.5)),
      server.call('GET', wait(job.id, 'changed', 0.6)),
    ]);
    expect(notDone.status).toBe(200);
    expect(notDone.json).toMatchObject({
      met: false,
      condition: 'done',
      state: { status: 'running', wait_again: true },
    });
    expect(notDone.json.waited_s).toBeGreaterThanOrEqual(0.4);
    expect(notDone.json.waited_s).toBeLessThan(2);
    expect(notChanged.json).toMatchObject({ met: false, condition: 'changed' });
    expect((await server.call('GET', wait(job.id, 'done', 601))).status).toBe(400);
    expect((await server.call('GET', wait(job.id, 'worker:*:sleepy', 1))).json.error.message).toContain(
      'unknown state',
    );
    await server.call('POST', `/api/jobs/${job.id}/cancel`);
    await engine.settled(job.id);
  });

  it('a wait whose client goes away leaves no waiter behind', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('sleep 30')],
    });
    const controllers = ['done', 'changed', 'phase:never'].map((condition) => {
      const controller = new AbortController();
      fetch(`${server.url}${wait(job.id, condition, 120)}`, {
        signal: controller.signal,
        headers: bearerFor(server.url),
      }).catch(() => undefined);
      return controller;
    });
    const health = async () => (await server.call('GET', '/api/health')).json;
    await eventually(async () => (await health()).waiters === 3, 3_000, '3 waiters');
    for (const c of controllers) c.abort();
    await eventually(
      async () => {
        const h = await health();
        return h.waiters === 0 && h.timers === 0;
      },
      3_000,
      'no waiter left',
    );
    await server.call('POST', `/api/jobs/${job.id}/cancel`);
    await engine.settled(job.id);
    expect((await health()).listeners).toBe(0);
  });

  it('waits on a job another process runs, through the store', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const other = await Engine.open({ dataDir: engine.dataDir });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' });
      const { job } = other.submit({
        workspace: ws,
        verify: 'none',
        tasks: [shellTask('echo elsewhere-1; echo b > b.txt; sleep 0.5')],
      });
      const [event, done] = await Promise.all([
        server.call('GET', wait(job.id, 'event:elsewhere-1', 20)),
        server.call('GET', wait(job.id, 'done', 20)),
      ]);
      expect(event.json.met).toBe(true);
      expect(done.json).toMatchObject({ met: true, state: { status: 'done' } });
    } finally {
      await other.close();
    }
  });
});

describe('idempotency under a race', () => {
  it('100 concurrent POSTs with one key over a socket create exactly one job', async () => {
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const body = { workspace: ws, verify: 'none', tasks: [shellTask('echo once >> a.txt')] };
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => server.call('POST', '/api/jobs', body, { 'idempotency-key': 'race-1' })),
    );
    const ids = new Set(answers.map((a) => a.json.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(99);
    expect(jobRows(engine)).toBe(1);
    expect(engine.list()).toHaveLength(1);
    const [id] = [...ids] as [string];
    await engine.settled(id);
    expect(engine.get(id).result?.changes).toMatchObject({ modified: ['a.txt'] });

    // the same through the body key, from two engines on one data dir (two processes' worth of locking)
    const other = await Engine.open({ dataDir: engine.dataDir });
    try {
      const keyed = { ...body, client_request_id: 'race-2' };
      const mixed = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2
            ? server.call('POST', '/api/jobs', keyed).then((r) => r.json.id as string)
            : Promise.resolve(other.submit(keyed).job.id),
        ),
      );
      expect(new Set(mixed).size).toBe(1);
      expect(jobRows(engine)).toBe(2);
      await engine.settled(mixed[1] as string);
      await other.settled(mixed[0] as string);
    } finally {
      await other.close();
    }
  });
});
