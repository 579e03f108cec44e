import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRunners } from '../../src/runners/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { inProcess, openEngine } from './helpers.js';

const errorShape = (code: string, field: string) => ({
  error: expect.objectContaining({ code, field, message: expect.any(String) }),
});
const TOKENS = { 'tok-alice': 'alice', 'tok-bob': 'bob' };
const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe('POST /api/jobs/:id/tasks/:task/steer (issue 16)', () => {
  it('202 queued for a running shell task, which becomes its follow-up when the job ends; an ended job gets one at once; refusals name the field', async () => {
    // unsandboxed: the worker waits on a file in the test's temp dir, which the sandbox hides
    const engine = await openEngine({ runners: createRunners({ sandbox: 'off' }) });
    const { call } = inProcess(engine, { tokens: TOKENS });
    const go = join(tempDir(), 'go');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const created = await call(
      'POST',
      '/api/jobs',
      {
        workspace: ws,
        verify: 'none',
        tasks: [
          {
            name: 'make-b',
            runner: 'shell',
            instruction: 'write b.txt',
            command: `until [ -f ${go} ]; do sleep 0.05; done; echo b >> b.txt`,
          },
        ],
      },
      as('tok-alice'),
    );
    expect(created.status).toBe(202);
    const id: string = created.json.id;
    const path = `/api/jobs/${id}/tasks/make-b/steer`;
    await engine.waitFor(id, 'worker:make-b:running', 30);

    const queued = await call('POST', path, { message: 'write it twice' }, as('tok-alice'));
    expect(queued.status).toBe(202);
    expect(queued.json).toEqual({
      id: expect.stringMatching(/^st-[0-9a-f]{8}$/),
      delivery: 'queued_as_follow_up',
      job_id: id,
      task: 'make-b',
      worker: null,
      waiting: 1,
      follow_up_job: null,
      detail: expect.stringContaining('queued'),
    });
    // the event stream shows it received
    const events = await call('GET', `/api/jobs/${id}/events`, undefined, as('tok-alice'));
    expect(events.json.events).toContainEqual(
      expect.objectContaining({
        event: 'steer_received',
        steer_id: queued.json.id,
        delivery: 'queued_as_follow_up',
        text: 'write it twice',
      }),
    );

    // another owner does not see the job; unknown job and task
    expect((await call('POST', path, { message: 'x' }, as('tok-bob'))).json).toEqual(errorShape('not_found', 'job_id'));
    expect(
      (await call('POST', '/api/jobs/ffffffffffff/tasks/make-b/steer', { message: 'x' }, as('tok-alice'))).status,
    ).toBe(404);
    const noTask = await call('POST', `/api/jobs/${id}/tasks/nope/steer`, { message: 'x' }, as('tok-alice'));
    expect(noTask.status).toBe(404);
    expect(noTask.json).toEqual(errorShape('not_found', 'task'));

    const refusals: [unknown, string][] = [
      [{}, 'message'],
      [{ message: '' }, 'message'],
      [{ message: ['x'] }, 'message'],
      [{ message: 'y'.repeat(8_001) }, 'message'],
      [{ message: 'x', delivery: 'next_turn' }, 'delivery'],
      [{ message: 'x', worker: 'make-b' }, 'worker'],
      ['"x"', 'body'],
    ];
    for (const [body, field] of refusals) {
      const refused = await call('POST', path, body, as('tok-alice'));
      expect(refused.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(refused.json, JSON.stringify(body).slice(0, 60)).toEqual(errorShape('invalid_request', field));
    }

    writeFileSync(go, '');
    await engine.settled(id);
    const jobs = await call('GET', '/api/jobs', undefined, as('tok-alice'));
    expect(jobs.json.jobs).toHaveLength(2);
    const follow = jobs.json.jobs[0];
    expect(follow.follow_up).toEqual({ job: id, task: 'make-b', resumed: false });
    const after = await call('GET', `/api/jobs/${id}/events`, undefined, as('tok-alice'));
    expect(after.json.events).toContainEqual(
      expect.objectContaining({ event: 'steer_delivered', steer_id: queued.json.id, follow_up_job: follow.id }),
    );
    await engine.settled(follow.id);
    // bob cannot see alice's follow-up either: it is hers
    expect((await call('GET', `/api/jobs/${follow.id}`, undefined, as('tok-bob'))).status).toBe(404);

    // the job has ended: the follow-up starts now and the answer names it
    const late = await call('POST', path, { message: 'and a third time' }, as('tok-alice'));
    expect(late.status).toBe(202);
    expect(late.json).toMatchObject({
      delivery: 'queued_as_follow_up',
      waiting: 0,
      follow_up_job: expect.stringMatching(/^[0-9a-f]{12}$/),
    });
    const lateJob = await call('GET', `/api/jobs/${late.json.follow_up_job}`, undefined, as('tok-alice'));
    expect(lateJob.json.follow_up).toEqual({ job: id, task: 'make-b', resumed: false });
    await engine.settled(late.json.follow_up_job);
  });
});
