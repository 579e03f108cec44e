import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { appendJsonLine } from '../../src/engine/settle/outcome-log.js';
import type { RunnerReport } from '../../src/domain/runner-report.js';
import type { Runner } from '../../src/runners/contract.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';

// spec 05 "The outcome log and acceptance rate" and "Liveness", through real jobs: real shell
// workers, real git worktrees, a real SQLite store, the builtin agent against the scripted model
// server; the logs are read back from the data dir as any other reader would.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

async function open(opts: Partial<EngineOptions> = {}): Promise<Engine> {
  const runners = new Map(
    createRunners({
      sandbox: createSandbox('off'),
      builtin: { endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' } },
    }),
  );
  const shell = runners.get('shell') as Runner;
  // the real shell runner, its process started where nothing is: spawn fails
  runners.set('unlaunchable', {
    ...shell,
    key: 'unlaunchable',
    run: (input) => shell.run({ ...input, workspace: join(input.workspace, 'no-such-folder') }),
  });
  // a report that throws when gaffer reads it: gaffer itself fails under the worker (a runner's throw, the executor catches)
  const unreadable = (report: RunnerReport): RunnerReport =>
    Object.defineProperty({ ...report }, 'status', {
      get: () => {
        throw new Error('the report cannot be read');
      },
    });
  runners.set('throwing', { ...shell, key: 'throwing', run: async (input) => unreadable(await shell.run(input)) });
  // the two test runners bill nothing (a runner config does not know bills per call, and would ask first: spec 05)
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    maxParallel: 4,
    runners,
    billing: { unlaunchable: 'free', throwing: 'free' },
    ...opts,
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>): Promise<string> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return job.id;
}

/** Every line of a JSON-lines file, parsed (a line that does not parse fails the test). */
function jsonLines(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  expect(text === '' || text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const outcomesOf = (engine: Engine) => jsonLines(join(engine.dataDir, 'outcomes.jsonl'));
const livenessOf = (engine: Engine) => jsonLines(join(engine.dataDir, 'worker_status.jsonl'));

/** Each worker's phases in order, by `job/worker`. */
function phasesByWorker(lines: Record<string, unknown>[]): Map<string, string> {
  const by = new Map<string, string>();
  for (const l of lines) {
    const key = `${String(l.job)}/${String(l.worker)}`;
    by.set(key, `${by.get(key) ?? ''} ${String(l.phase)}`.trim());
  }
  return by;
}

/** Every `running` reaches `finished` (a rate limit may requeue it in between), and nothing follows `finished`. */
function expectEveryRunningFinished(lines: Record<string, unknown>[]): void {
  for (const [worker, phases] of phasesByWorker(lines))
    expect([worker, phases]).toEqual([
      worker,
      expect.stringMatching(/^running( requeued running)*( requeued)? finished$/),
    ]);
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const shellOutcome = {
  rung: 1,
  type: 'implement',
  runner: 'shell',
  model: null,
  provider: null,
  entry: null,
  escalated_to: null,
  returned: false,
  cost_usd: 0,
};

describe('the outcome log', () => {
  it('a job with a task that passes its check and one that fails it: two lines, and stats counts them per (type, model)', async () => {
    const engine = await open();
    const id = await run(engine, {
      workspace: makeWorkspace({ 'README.md': 'x\n' }),
      verify: 'none',
      tasks: [
        {
          name: 'good',
          instruction: 'write good.txt',
          files: ['good.txt'],
          command: 'echo ok > good.txt && test -s good.txt',
        },
        {
          name: 'bad',
          instruction: 'write bad.txt',
          files: ['bad.txt'],
          command: 'echo no > bad.txt && test -s missing.txt',
        },
      ],
    });
    expect(engine.get(id).status).toBe('partial');
    expect(outcomesOf(engine)).toEqual([
      {
        ts: expect.stringMatching(ISO),
        job: id,
        task: 'good',
        ...shellOutcome,
        status: 'passed',
        gates_passed: true,
        attempts: 1,
      },
      {
        ts: expect.stringMatching(ISO),
        job: id,
        task: 'bad',
        ...shellOutcome,
        status: 'failed',
        gates_passed: false,
        attempts: 1,
      },
    ]);
    expect(engine.stats()).toMatchObject({
      acceptance: {
        'implement/(shell default)': {
          type: 'implement',
          model: null,
          runners: ['shell'],
          providers: [],
          accepted: 1,
          total: 2,
          rate: 0.5,
        },
      },
      outcomes_total: 2,
      excluded: { not_dispatched: 0, abstained: 0 },
    });
  });

  it('the verification decides: passed after a fix round that fixed it, failed after one that did not; attempts count the fix rounds', async () => {
    const engine = await open();
    // the first run does nothing useful; the fix round (its instruction names the failure) fixes add() — or, for the other job, does not
    const fixes = `if grep -q 'verification of this work failed' "$GAFFER_INSTRUCTION_FILE"; then ${FIX_ADD}; else echo "// touched" >> src/math.js; fi`;
    const body = (command: string) => ({
      workspace: makeWorkspace(CALC_FILES),
      verify: 'npm test',
      fix_rounds: 1,
      tasks: [{ name: 'add', type: 'fix', instruction: 'fix add', files: ['src/math.js'], command }],
    });
    const fixed = await run(engine, body(fixes));
    const unfixed = await run(engine, body('echo "// touched" >> src/math.js'));
    expect([engine.get(fixed).status, engine.get(unfixed).status]).toEqual(['done', 'partial']);
    expect(outcomesOf(engine).map((o) => [o.job, o.type, o.status, o.gates_passed, o.attempts])).toEqual([
      [fixed, 'fix', 'passed', true, 2],
      [unfixed, 'fix', 'failed', false, 2],
    ]);
    expect(engine.stats().acceptance).toEqual({
      'fix/(shell default)': {
        type: 'fix',
        model: null,
        runners: ['shell'],
        providers: [],
        accepted: 1,
        total: 2,
        rate: 0.5,
      },
    });
  });

  it('a task denied its approval is logged not_dispatched and left out of the denominator; an owner sees its own outcomes only', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit(
      {
        workspace: ws,
        approval: 'required',
        verify: 'exit 0',
        tasks: [
          { name: 'a', type: 'fix', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
          { name: 'b', type: 'fix', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
        ],
      },
      { owner: 'alice' },
    );
    expect((await engine.waitFor(job.id, 'phase:awaiting approval', 10)).met).toBe(true);
    engine.approve(job.id, { a: true, b: false });
    await engine.settled(job.id);
    expect(outcomesOf(engine).map((o) => [o.task, o.type, o.status, o.gates_passed, o.attempts])).toEqual([
      ['a', 'fix', 'passed', true, 1],
      ['b', 'fix', 'not_dispatched', false, 1],
    ]);
    const other = await run(engine, {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'none',
      tasks: [{ name: 'c', instruction: 'append', command: 'echo c >> a.txt' }],
    });
    expect(engine.get(other).status).toBe('done');

    const all = engine.stats();
    expect(all).toMatchObject({
      acceptance: {
        'fix/(shell default)': { type: 'fix', model: null, runners: ['shell'], accepted: 1, total: 1, rate: 1 },
        'implement/(shell default)': {
          type: 'implement',
          model: null,
          runners: ['shell'],
          accepted: 1,
          total: 1,
          rate: 1,
        },
      },
      outcomes_total: 3,
      excluded: { not_dispatched: 1, abstained: 0 },
    });
    expect(all.note).toContain('not_dispatched');
    expect(engine.stats({ owner: 'alice' })).toMatchObject({
      acceptance: { 'fix/(shell default)': { type: 'fix', accepted: 1, total: 1 } },
      outcomes_total: 2,
      excluded: { not_dispatched: 1 },
    });
    expect(engine.stats({ owner: 'bob' })).toMatchObject({ outcomes_total: 0 });
    expect(engine.stats({ owner: 'bob' }).acceptance).toEqual({});
  });

  it('a log removed or replaced between two lines gets the next line in the file now at its path', () => {
    const dir = tempDir();
    const file = join(dir, 'outcomes.jsonl');
    expect(appendJsonLine(file, { n: 1 })).toBeNull();
    rmSync(file);
    expect(appendJsonLine(file, { n: 2 })).toBeNull();
    writeFileSync(join(dir, 'rotated'), '');
    renameSync(join(dir, 'rotated'), file);
    expect(appendJsonLine(file, { n: 3 })).toBeNull();
    expect(appendJsonLine(file, { n: 4 })).toBeNull();
    expect(readFileSync(file, 'utf8')).toBe('{"n":3}\n{"n":4}\n');
    rmSync(dir, { recursive: true });
    expect(appendJsonLine(file, { n: 5 })).toMatch(/ENOENT/);
  });

  it('an empty data dir is an empty report, not a crash', async () => {
    const engine = await open();
    expect(engine.stats()).toEqual({
      acceptance: {},
      outcomes_total: 0,
      excluded: { not_dispatched: 0, abstained: 0 },
      note: expect.stringContaining('not_dispatched'),
      recent: { jobs: 0, done: 0, partial: 0, failed: 0, cancelled: 0, live: 0 },
      providers: [],
      breaker: { open: false, failures: 0, retry_after_s: 0, why: expect.stringContaining('opens at 3') },
    });
    expect(existsSync(join(engine.dataDir, 'outcomes.jsonl'))).toBe(false);
  });

  it('eight tasks of one parallel job, and two more jobs at once: every line parses, one per task', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' });
    const eight = Array.from({ length: 8 }, (_, i) => ({
      name: `t${i + 1}`,
      instruction: `write t${i + 1}.txt`,
      files: [`t${i + 1}.txt`],
      command: `echo ${i + 1} > t${i + 1}.txt`,
    }));
    const jobs = [
      engine.submit({ workspace: ws, parallel: true, verify: 'none', tasks: eight }).job.id,
      ...[0, 1].map(
        () =>
          engine.submit({
            workspace: makeWorkspace({ 'README.md': 'x\n' }),
            parallel: true,
            verify: 'none',
            tasks: eight.slice(0, 3),
          }).job.id,
      ),
    ];
    await Promise.all(jobs.map((id) => engine.settled(id)));
    const lines = outcomesOf(engine);
    expect(lines).toHaveLength(14);
    const first = lines.filter((o) => o.job === jobs[0]);
    expect(first.map((o) => o.task).sort()).toEqual(eight.map((t) => t.name).sort());
    expect(lines.every((o) => o.status === 'passed' && o.attempts === 1)).toBe(true);
    expect(engine.stats().acceptance).toEqual({
      'implement/(shell default)': {
        type: 'implement',
        model: null,
        runners: ['shell'],
        providers: [],
        accepted: 14,
        total: 14,
        rate: 1,
      },
    });
    // the liveness log saw every worker start and finish
    const liveness = livenessOf(engine);
    expect(liveness.filter((l) => l.phase === 'running')).toHaveLength(14);
    expectEveryRunningFinished(liveness);
  });
});

describe('the liveness log', () => {
  it("a worker that ends well: running before its process, finished with its row's words", async () => {
    const engine = await open();
    const id = await run(engine, {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'none',
      tasks: [{ name: 'w', instruction: 'append', command: 'echo b >> a.txt' }],
    });
    expect(livenessOf(engine)).toEqual([
      { ts: expect.stringMatching(ISO), job: id, worker: 'w', task: 'w', phase: 'running' },
      {
        ts: expect.stringMatching(ISO),
        job: id,
        worker: 'w',
        task: 'w',
        phase: 'finished',
        status: 'done',
        outcome: 'success',
      },
    ]);
  });

  it('a cancelled job, a command that fails to start, and gaffer failing under a worker: every running reaches finished', async () => {
    const engine = await open();
    const { job: slow } = engine.submit({
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'none',
      tasks: [{ name: 'sleeper', instruction: 'sleep', command: 'sleep 30' }],
    });
    await expect
      .poll(() => livenessOf(engine).some((l) => l.job === slow.id && l.phase === 'running'), { timeout: 10_000 })
      .toBe(true);
    engine.cancel(slow.id);
    await engine.settled(slow.id);
    const broken = await run(engine, {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'none',
      tasks: [{ name: 'broken', runner: 'unlaunchable', instruction: 'x', command: 'true' }],
    });
    const thrown = await run(engine, {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'none',
      tasks: [{ name: 'thrower', runner: 'throwing', instruction: 'x', command: 'true' }],
    });

    const liveness = livenessOf(engine);
    expectEveryRunningFinished(liveness);
    const finished = (job: string) => liveness.find((l) => l.job === job && l.phase === 'finished');
    expect(finished(slow.id)).toMatchObject({ worker: 'sleeper', status: 'cancelled', outcome: 'cancelled' });
    expect(finished(broken)).toMatchObject({ worker: 'broken', status: 'error', outcome: 'panic' });
    expect(finished(thrown)).toMatchObject({
      worker: 'thrower',
      status: 'error',
      outcome: null,
      error: 'the report cannot be read',
    });
    // and each task's outcome is logged, gaffer's own failure included
    expect(engine.get(thrown)).toMatchObject({
      status: 'partial',
      verdict: 'error: gaffer failed: the report cannot be read',
    });
    expect(outcomesOf(engine).map((o) => [o.task, o.runner, o.status, o.gates_passed, o.attempts])).toEqual([
      ['sleeper', 'shell', 'cancelled', false, 1],
      ['broken', 'unlaunchable', 'not_dispatched', false, 1],
      ['thrower', 'throwing', 'error', false, 1],
    ]);
    // the task that never got a process ran no model: logged, but in no denominator
    const stats = engine.stats();
    expect(stats.excluded.not_dispatched).toBe(1);
    expect(stats.acceptance['implement/(unlaunchable default)']).toBeUndefined();
  });

  it('a rate-limited builtin worker is requeued and runs again: running, requeued, running, finished; its outcome names the model it reported', async () => {
    // api billing and a runner that reports no cost: the cost is unknown, not 0
    const engine = await open({ billing: { unlaunchable: 'free', throwing: 'free', builtin: 'api' } });
    server.script([
      { error: { status: 429, headers: { 'retry-after': '1' } } },
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
      { text: 'Wrote it.\nFiles changed:\nhello.txt' },
    ]);
    // an api-billed task asks first (spec 05): the yes, then the work
    const { job } = engine.submit({
      workspace: makeWorkspace({ 'a.txt': 'a' }),
      verify: 'none',
      tasks: [{ name: 'w', runner: 'builtin', instruction: 'write hello.txt saying hi' }],
    });
    expect((await engine.waitFor(job.id, 'phase:awaiting approval', 10)).met).toBe(true);
    engine.approve(job.id, true);
    await engine.settled(job.id);
    const id = job.id;
    expect(engine.get(id).status).toBe('done');
    expect(livenessOf(engine).map((l) => l.phase)).toEqual(['running', 'requeued', 'running', 'finished']);
    expect(outcomesOf(engine)).toEqual([
      expect.objectContaining({
        task: 'w',
        runner: 'builtin',
        model: 'qwen3:8b',
        status: 'passed',
        attempts: 1,
        cost_usd: null,
      }),
    ]);
  });
});
