import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobEvent } from '../../src/domain/events.js';
import { Engine } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

/** Blocks until the test creates `file`: the worker is at work for as long as the test needs, no timing involved. */
const until = (file: string) => `until [ -f ${file} ]; do sleep 0.05; done`;

const steerEvents = (engine: Engine, id: string): JobEvent[] =>
  engine.events(id).events.filter((e) => e.event.startsWith('steer_'));

describe('steering a running worker (issue 16)', () => {
  it('a builtin worker reads a steer before its next model call: the request carries it after the tool result, the transcript and the events say when', async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({
      dataDir,
      runners: createRunners({
        sandbox: 'off',
        builtin: { endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' } },
      }),
    });
    try {
      const go = join(tempDir(), 'go');
      server.script([
        // the worker is inside this tool call until the test lets it go
        { toolCalls: [{ name: 'run_command', args: { command: until(go) } }] },
        { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\twith a tab\n' } }] },
        { text: 'Wrote it.\nFiles changed:\nhello.txt' },
      ]);
      const before = server.requests.length;
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      const { job } = engine.submit({
        workspace: ws,
        verify: 'test -f hello.txt',
        tasks: [{ name: 'greet', runner: 'builtin', files: ['hello.txt'], instruction: 'write hello.txt' }],
      });
      // its first model call has been made: the steer can only reach the next one
      await server.waitForRequests(before + 1);

      const answer = await engine.steer(job.id, 'greet', { message: 'indent with tabs, not spaces' });
      expect(answer).toEqual({
        id: expect.stringMatching(/^st-[0-9a-f]{8}$/),
        delivery: 'next_turn',
        job_id: job.id,
        task: 'greet',
        worker: 'greet',
        waiting: 1,
        follow_up_job: null,
        detail: expect.stringContaining('greet reads it before its next model call'),
      });
      writeFileSync(go, '');
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');

      const next = server.requests[before + 1];
      expect(next?.lastRole).toBe('user');
      expect(next?.lastText).toContain('Message from the person supervising this task');
      expect(next?.lastText).toContain('indent with tabs, not spaces');
      // after the tool call's result, as the conversation was at that turn; and only once
      const wire = JSON.stringify(next?.body.messages);
      expect(wire.indexOf('"role":"tool"')).toBeLessThan(wire.indexOf('indent with tabs'));
      expect(wire.split('indent with tabs').length).toBe(2);
      // the next turn still has it where it was delivered, and the saved session too (a fix round resumes it)
      const last = server.requests[before + 2];
      expect(JSON.stringify(last?.body.messages).split('indent with tabs').length).toBe(2);
      expect(last?.lastRole).toBe('tool');
      expect(readFileSync(join(dataDir, 'jobs', job.id, 'greet.session.json'), 'utf8')).toContain(
        'indent with tabs, not spaces',
      );
      expect(readFileSync(join(dataDir, 'jobs', job.id, 'greet.log'), 'utf8')).toContain(
        `[steer] ${answer.id} delivered before round 2: indent with tabs, not spaces`,
      );

      const events = steerEvents(engine, job.id);
      expect(events).toEqual([
        expect.objectContaining({
          name: 'job',
          event: 'steer_received',
          steer_id: answer.id,
          task: 'greet',
          delivery: 'next_turn',
          worker: 'greet',
          text: 'indent with tabs, not spaces',
        }),
        expect.objectContaining({
          name: 'greet',
          event: 'steer_delivered',
          steer_id: answer.id,
          task: 'greet',
          delivery: 'next_turn',
        }),
      ]);
      // no follow-up: it was read
      expect(engine.list()).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });

  it("a shell worker's steers are queued and become one follow-up job of the task when the job ends, linked to it", async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, runners: createRunners({ sandbox: 'off' }) });
    try {
      const go = join(tempDir(), 'go');
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      // writes "steered" once its instruction carries the message, else "plain"
      const command = `${until(go)}; if grep -q 'say steered' "$GAFFER_INSTRUCTION_FILE"; then echo steered > out.txt; else echo plain > out.txt; fi`;
      const { job } = engine.submit({
        workspace: ws,
        verify: 'test -f out.txt',
        tasks: [{ name: 'write', runner: 'shell', instruction: 'write out.txt', command, files: ['out.txt'] }],
      });
      await engine.waitFor(job.id, 'worker:write:running', 30);

      const first = await engine.steer(job.id, 'write', { message: 'say steered' });
      expect(first).toMatchObject({
        delivery: 'queued_as_follow_up',
        job_id: job.id,
        task: 'write',
        worker: null,
        waiting: 1,
        follow_up_job: null,
      });
      expect(first.detail).toContain('shell workers take no input while they run');
      const second = await engine.steer(job.id, 'write', { message: 'and keep it to one line' });
      expect(second).toMatchObject({ delivery: 'queued_as_follow_up', waiting: 2 });

      writeFileSync(go, '');
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');
      expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('plain\n');

      // settled() waits for the follow-up to be started: the job's events name it
      const delivered = steerEvents(engine, job.id).filter((e) => e.event === 'steer_delivered');
      expect(delivered).toEqual([
        expect.objectContaining({
          name: 'job',
          steer_id: first.id,
          delivery: 'queued_as_follow_up',
          follow_up_job: expect.any(String),
        }),
        expect.objectContaining({
          name: 'job',
          steer_id: second.id,
          delivery: 'queued_as_follow_up',
          follow_up_job: delivered[0]?.follow_up_job,
        }),
      ]);
      const followId = String(delivered[0]?.follow_up_job);
      expect(engine.list().map((j) => j.id)).toEqual([followId, job.id]);
      const follow = engine.get(followId);
      expect(follow.follow_up).toEqual({ job: job.id, task: 'write', resumed: false });
      expect(follow.tasks).toEqual([expect.objectContaining({ name: 'write', runner: 'shell' })]);

      await engine.settled(followId);
      expect(engine.get(followId).status).toBe('done');
      const instruction = readFileSync(join(dataDir, 'jobs', followId, 'write.instruction.txt'), 'utf8');
      expect(instruction).toContain('write out.txt');
      expect(instruction).toContain('[1] say steered');
      expect(instruction).toContain('[2] and keep it to one line');
      expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('steered\n');
    } finally {
      await engine.close();
    }
  });

  it('a job that has ended gets the follow-up at once; a cancelled job starts none; the refusals name the field', async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, runners: createRunners({ sandbox: 'off' }) });
    try {
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      const { job: ended } = engine.submit({
        workspace: ws,
        verify: 'none',
        tasks: [{ name: 'touch', runner: 'shell', instruction: 'touch b.txt', command: 'touch b.txt' }],
      });
      await engine.settled(ended.id);

      const now = await engine.steer(ended.id, 'touch', { message: 'touch c.txt too' });
      expect(now).toMatchObject({
        delivery: 'queued_as_follow_up',
        worker: null,
        waiting: 0,
        follow_up_job: expect.stringMatching(/^[0-9a-f]{12}$/),
      });
      expect(now.detail).toContain(`job ${ended.id} had ended (done)`);
      const follow = engine.get(String(now.follow_up_job));
      expect(follow.follow_up).toEqual({ job: ended.id, task: 'touch', resumed: false });
      await engine.settled(follow.id);
      expect(readFileSync(join(dataDir, 'jobs', follow.id, 'touch.instruction.txt'), 'utf8')).toContain(
        'touch c.txt too',
      );
      expect(steerEvents(engine, ended.id).map((e) => [e.event, e.follow_up_job ?? null])).toEqual([
        ['steer_received', null],
        ['steer_delivered', follow.id],
      ]);

      // the body and the names: each refusal names its field
      const refusals: [unknown, string][] = [
        [{}, 'message'],
        [{ message: '' }, 'message'],
        [{ message: '   ' }, 'message'],
        [{ message: 7 }, 'message'],
        [{ message: 'x'.repeat(8_001) }, 'message'],
        [{ message: 'x', worker: 'touch' }, 'worker'],
        [['x'], 'body'],
      ];
      for (const [body, field] of refusals) {
        await expect(engine.steer(ended.id, 'touch', body), JSON.stringify(body).slice(0, 60)).rejects.toMatchObject({
          code: 'invalid_request',
          field,
        });
      }
      await expect(engine.steer(ended.id, 'nope', { message: 'x' })).rejects.toMatchObject({
        code: 'not_found',
        field: 'task',
      });
      await expect(engine.steer('ffffffffffff', 'touch', { message: 'x' })).rejects.toMatchObject({
        code: 'not_found',
        field: 'job_id',
      });
      await expect(engine.steer(ended.id, 'touch', { message: 'x' }, { owner: 'bob' })).rejects.toMatchObject({
        code: 'not_found',
        field: 'job_id',
      });

      // queued for a shell task, then the job is cancelled: nothing is started, the events say why
      const { job: live } = engine.submit({
        workspace: ws,
        verify: 'none',
        tasks: [{ name: 'slow', runner: 'shell', instruction: 'wait', command: 'sleep 30' }],
      });
      await engine.waitFor(live.id, 'worker:slow:running', 30);
      const queued = await engine.steer(live.id, 'slow', { message: 'hurry up' });
      expect(queued.delivery).toBe('queued_as_follow_up');
      // another engine on the data dir (another gaffer process) does not run it: it says where to steer it
      const other = await Engine.open({ dataDir, runners: createRunners({ sandbox: 'off' }) });
      try {
        await expect(other.steer(live.id, 'slow', { message: 'x' })).rejects.toMatchObject({
          code: 'conflict',
          field: 'job_id',
          message: expect.stringContaining('run by another gaffer process'),
        });
      } finally {
        await other.close();
      }
      engine.cancel(live.id);
      await expect(engine.steer(live.id, 'slow', { message: 'x' })).rejects.toMatchObject({
        code: 'conflict',
        field: 'job_id',
      });
      await engine.settled(live.id);
      expect(engine.get(live.id).status).toBe('cancelled');
      expect(steerEvents(engine, live.id).at(-1)).toMatchObject({
        event: 'steer_undelivered',
        steer_id: queued.id,
        why: expect.stringContaining('the job ended cancelled'),
      });
      expect(engine.list()).toHaveLength(3);
    } finally {
      await engine.close();
    }
  });

  it("a worktree job's shell task queues a steer as its follow-up, which runs in a worktree from the task's branch when the job ends", async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, runners: createRunners({ sandbox: 'off' }) });
    try {
      const go = join(tempDir(), 'go');
      const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
      // told to, appends to the x.txt it wrote before — which only the task's branch has
      const command = `${until(go)}; if grep -q 'add a line' "$GAFFER_INSTRUCTION_FILE"; then grep -qx x x.txt && echo y >> x.txt; else echo x > x.txt; fi`;
      const { job } = engine.submit({
        workspace: ws,
        isolation: 'worktree',
        verify: 'test -f x.txt',
        tasks: [{ name: 'wt', runner: 'shell', instruction: 'write x.txt', command, files: ['x.txt'] }],
      });
      await engine.waitFor(job.id, 'worker:wt:running', 30);
      const queued = await engine.steer(job.id, 'wt', { message: 'add a line' });
      expect(queued).toMatchObject({ delivery: 'queued_as_follow_up', worker: null, waiting: 1, follow_up_job: null });
      writeFileSync(go, '');
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');

      const delivered = steerEvents(engine, job.id).filter((e) => e.event === 'steer_delivered');
      expect(delivered).toEqual([
        expect.objectContaining({
          steer_id: queued.id,
          delivery: 'queued_as_follow_up',
          follow_up_job: expect.any(String),
        }),
      ]);
      const followId = String(delivered[0]?.follow_up_job);
      expect(engine.get(followId).follow_up).toEqual({ job: job.id, task: 'wt', resumed: false });
      await engine.settled(followId);
      const follow = engine.get(followId, { full: true });
      expect(follow.status).toBe('done');
      expect(readFileSync(join(dataDir, 'jobs', followId, 'wt.instruction.txt'), 'utf8')).toContain('add a line');
      const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, encoding: 'utf8' }).trim();
      expect(follow.result?.worktrees?.base).toBe(git('rev-parse', `gaffer/${job.id}/wt`));
      expect(git('show', `gaffer/${followId}/wt:x.txt`)).toBe('x\ny');
    } finally {
      await engine.close();
    }
  });
});
