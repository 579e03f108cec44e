import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// spec 05 "Approval: the yes-gate", through real jobs: nothing runs before the yes, each task is
// answered on its own, no answer in time is no, a fan-out is asked as one batch.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(opts: Partial<EngineOptions> = {}): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox: createSandbox('off') }),
    ...opts,
  });
  engines.push(engine);
  return engine;
}

/** Resolves once the job is awaiting approval. */
async function awaiting(engine: Engine, id: string): Promise<void> {
  const answer = await engine.waitFor(id, 'phase:awaiting approval', 10);
  expect(answer.met).toBe(true);
}

const twoTasks = (ws: string) => ({
  workspace: ws,
  approval: 'required',
  verify: 'exit 0',
  tasks: [
    { name: 'a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
    { name: 'b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
  ],
});

describe('the yes-gate', () => {
  it('approval required: nothing runs until the yes; a yes for one task and a no for the other run one, the other a refused row', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit(twoTasks(ws));
    await awaiting(engine, job.id);
    const waiting = engine.get(job.id);
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.asks?.map((a) => [a.task, a.answer, a.judge_abstained, a.blocking])).toEqual([
      ['a', null, true, true],
      ['b', null, true, true],
    ]);
    expect(waiting.asks?.[0]).toMatchObject({
      route: 'its default model (shell)',
      why: 'the request says approval: "required"',
      pros: expect.arrayContaining(['may change only a.txt (its write policy)']),
    });
    // nothing ran, and the workspace is not held: another job in it runs meanwhile
    expect(existsSync(join(ws, 'a.txt'))).toBe(false);
    const other = engine.submit({
      workspace: ws,
      verify: 'exit 0',
      tasks: [{ name: 'c', instruction: 'write c', files: ['c.txt'], command: 'echo c > c.txt' }],
    });
    await engine.settled(other.job.id);
    expect(engine.get(other.job.id).status).toBe('done');

    // a name the job does not ask about is refused, naming it; nothing is answered
    expect(() => engine.approve(job.id, { a: true, zed: true })).toThrow(/"zed" is not asked about/);
    engine.approve(job.id, { a: true, b: false }, { note: 'b is not needed' });
    await engine.settled(job.id);
    const end = engine.get(job.id, { full: true });
    expect(end.result?.workers.map((w) => [w.name, w.status, w.outcome])).toEqual([
      ['a', 'done', 'success'],
      ['b', 'refused', 'cancelled'],
    ]);
    expect(end.result?.workers[1]?.error).toBe('not approved: b is not needed');
    expect(end.asks?.map((a) => [a.task, a.answer, a.note])).toEqual([
      ['a', true, 'b is not needed'],
      ['b', false, 'b is not needed'],
    ]);
    expect(existsSync(join(ws, 'a.txt'))).toBe(true);
    expect(existsSync(join(ws, 'b.txt'))).toBe(false);
    expect(end.status).toBe('partial');
    // a job that is not awaiting approval has nothing to answer
    expect(() => engine.approve(job.id, true)).toThrow(expect.objectContaining({ code: 'conflict' }));
  });

  it('every task denied: the job ends cancelled, "not approved", and nothing ran', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit(twoTasks(ws));
    await awaiting(engine, job.id);
    engine.approve(job.id, false);
    await engine.settled(job.id);
    const end = engine.get(job.id);
    expect([end.status, end.verdict]).toEqual(['cancelled', 'not approved']);
    expect(end.result?.workers.map((w) => w.status)).toEqual(['refused', 'refused']);
    expect(existsSync(join(ws, 'a.txt')) || existsSync(join(ws, 'b.txt'))).toBe(false);
  });

  it('no answer within approval.timeout_s is no; approval "never" and "auto" (config default auto) ask nothing; config approval.default "required" makes auto ask', async () => {
    const engine = await open({ approval: { timeoutS: 1 } });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit(twoTasks(ws));
    await engine.settled(job.id);
    const end = engine.get(job.id);
    expect([end.status, end.verdict]).toEqual(['cancelled', 'not approved']);
    expect(end.asks?.map((a) => [a.answer, a.answered_by])).toEqual([
      [false, 'timeout'],
      [false, 'timeout'],
    ]);
    expect(end.result?.workers[0]?.error).toBe('no answer in time: no answer within 1 s');

    for (const approval of ['never', 'auto']) {
      const { job: free } = engine.submit({
        ...twoTasks(makeWorkspace({ 'README.md': 'x\n' }, { git: true })),
        approval,
      });
      await engine.settled(free.id);
      expect(engine.get(free.id).status).toBe('done');
      expect(engine.get(free.id).asks).toBeUndefined();
    }
    const strict = await open({ approval: { default: 'required' } });
    const { job: asked } = strict.submit({ ...twoTasks(ws), approval: 'auto' });
    await awaiting(strict, asked.id);
    expect(strict.get(asked.id).asks?.[0]?.why).toBe('config approval.default is "required"');
    strict.cancel(asked.id);
    await strict.settled(asked.id);
    expect(strict.get(asked.id).status).toBe('cancelled');
  });

  it('a worktree fan-out is asked as one batch before any worktree is made, a yes/no per item', async () => {
    const engine = await open({ worktrees: { parallelSafeGates: ['exit 0'] } });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({ ...twoTasks(ws), isolation: 'worktree', parallel: true, merge: 'auto' });
    await awaiting(engine, job.id);
    const asks = engine.get(job.id).asks ?? [];
    expect(asks.map((a) => a.issue)).toEqual([
      'implement task needs a yes before it runs (one of 2 tasks asked together, a worktree fan-out)',
      'implement task needs a yes before it runs (one of 2 tasks asked together, a worktree fan-out)',
    ]);
    expect(engine.openAsks().map((o) => [o.job_id, o.ask.task])).toEqual([
      [job.id, 'a'],
      [job.id, 'b'],
    ]);
    // no worktree, no branch before the answer
    expect(await engine.worktrees()).toEqual([]);
    engine.approve(job.id, { b: true });
    // one answered, one open: still waiting
    expect(engine.get(job.id).status).toBe('awaiting_approval');
    engine.approve(job.id, { a: false });
    await engine.settled(job.id);
    const end = engine.get(job.id, { full: true });
    expect(end.result?.worktrees?.tasks.map((t) => t.task)).toEqual(['b']);
    expect(end.result?.workers.map((w) => [w.name, w.status])).toEqual([
      ['a', 'refused'],
      ['b', 'done'],
    ]);
    expect(existsSync(join(ws, 'b.txt'))).toBe(true);
    expect(engine.openAsks()).toEqual([]);
  });
});

describe('notifications (config notify)', () => {
  it("a command and a webhook are told when the asks open and when the job ends; a webhook that fails is in the job's notify.log", async () => {
    const received: { event: string; asks?: unknown[]; job: { status: string } }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const log = join(tempDir('gaffer-notify-'), 'told.txt');
    try {
      const engine = await open({
        notify: {
          command: `echo "$GAFFER_NOTIFY_EVENT $GAFFER_JOB_STATUS" >> ${log}`,
          webhook: `http://127.0.0.1:${port}/hook`,
        },
      });
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const { job } = engine.submit(twoTasks(ws));
      await awaiting(engine, job.id);
      await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
      expect(received[0]).toMatchObject({ event: 'asks_opened', job: { status: 'awaiting_approval' } });
      expect(received[0]?.asks).toHaveLength(2);
      engine.approve(job.id, true);
      await engine.settled(job.id);
      await expect.poll(() => received.length, { timeout: 10_000 }).toBe(2);
      expect(received[1]).toMatchObject({ event: 'job_ended', job: { status: 'done' } });
      // each in the background: the two lines in either order
      await expect
        .poll(() => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).sort() : []), {
          timeout: 10_000,
        })
        .toEqual(['asks_opened awaiting_approval', 'job_ended done']);

      // nobody listening: the job is not held up, and the failure is written down
      const deaf = await open({ notify: { command: null, webhook: 'http://127.0.0.1:9/hook' } });
      const { job: other } = deaf.submit({
        ...twoTasks(makeWorkspace({ 'README.md': 'x\n' }, { git: true })),
        approval: 'never',
      });
      await deaf.settled(other.id);
      expect(deaf.get(other.id).status).toBe('done');
      const notifyLog = join(deaf.dataDir, 'jobs', other.id, 'notify.log');
      await expect
        .poll(() => (existsSync(notifyLog) ? readFileSync(notifyLog, 'utf8') : ''), { timeout: 15000 })
        .toMatch(/job_ended notification failed: notify.webhook/);
    } finally {
      server.close();
    }
  });
});
