import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { openEngine, serveEngine } from './helpers.js';

// spec 02/05: POST /api/jobs/:id/approve answers the asks of a job awaiting approval, per task.

describe('POST /api/jobs/:id/approve', () => {
  it('answers per task over a socket; a bad body is refused naming its field; the open asks are listed', async () => {
    const engine = await openEngine();
    const { call } = await serveEngine(engine);
    const ws = makeWorkspace({ 'README.md': 'x\n' });
    const body = {
      workspace: ws,
      approval: 'required',
      verify: 'none',
      tasks: [
        { name: 'a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
      ],
    };
    const { json: job } = await call('POST', '/api/jobs', body);
    const waited = await call(
      'GET',
      `/api/jobs/${job.id}/wait?for=${encodeURIComponent('phase:awaiting approval')}&timeout_s=10`,
    );
    expect(waited.json.met).toBe(true);
    expect(
      (await call('GET', '/api/asks')).json.asks.map((a: { job_id: string; ask: { task: string } }) => [
        a.job_id,
        a.ask.task,
      ]),
    ).toEqual([
      [job.id, 'a'],
      [job.id, 'b'],
    ]);

    for (const [bad, field] of [
      [{}, 'approve'],
      [{ approve: 'yes' }, 'approve'],
      [{ approve: {} }, 'approve'],
      [{ approve: true, extra: 1 }, ''],
    ] as const) {
      const refused = await call('POST', `/api/jobs/${job.id}/approve`, bad);
      expect(refused.status).toBe(400);
      expect(refused.json.error.code).toBe('invalid_request');
      if (field) expect(refused.json.error.field).toBe(field);
    }
    const unknown = await call('POST', `/api/jobs/${job.id}/approve`, { approve: { zed: true } });
    expect([unknown.status, unknown.json.error.field]).toEqual([400, 'approve.zed']);

    const answered = await call('POST', `/api/jobs/${job.id}/approve`, {
      approve: { a: true, b: false },
      note: 'only a',
    });
    expect(answered.status).toBe(200);
    expect(answered.json.asks.map((a: { task: string; answer: boolean }) => [a.task, a.answer])).toEqual([
      ['a', true],
      ['b', false],
    ]);
    await engine.settled(job.id);
    const end = (await call('GET', `/api/jobs/${job.id}`)).json;
    expect(end.result.workers.map((w: { name: string; status: string }) => [w.name, w.status])).toEqual([
      ['a', 'done'],
      ['b', 'refused'],
    ]);
    expect((await call('POST', `/api/jobs/${job.id}/approve`, { approve: true })).status).toBe(409);
    expect((await call('GET', '/api/asks')).json.asks).toEqual([]);
  });
});
