import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Attempt } from '../../src/domain/attempt-machine.js';
import { ATTEMPT_EFFECTS, type AttemptEffect } from '../../src/domain/attempt-table.js';
import { parseRoster } from '../../src/domain/roster.js';
import { windowOf } from '../../src/domain/budget.js';
import { epochS } from '../../src/engine/clock.js';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { againstTable } from '../helpers/attempt-table.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelRequest, type ModelServer } from '../support/model-server/index.js';

// issue 34 "the table is the program": real jobs of every kind, and for each of their attempts the
// effects it carried out (or dropped at a cancel) replayed against the table from the events it took:
// each effect owed by a move is carried out, in the row's order, before the next event; nothing
// else is carried out; nothing is owed at the end. Across the jobs, every effect the table names ran.

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(opts: Partial<EngineOptions> = {}): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({
      sandbox: 'off',
      builtin: {
        endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'default-model' },
      },
    }),
    ...opts,
  });
  engines.push(engine);
  return engine;
}

const ran = new Set<AttemptEffect>();

/** Every attempt of the settled job follows the table; the effects they carried out are noted. */
function checkJob(engine: Engine, id: string): Attempt[] {
  const attempts = engine.store.listAttempts(id).map((row) => row.machine as Attempt);
  expect(attempts.length).toBeGreaterThan(0);
  expect(attempts.flatMap(againstTable)).toEqual([]);
  for (const a of attempts) for (const c of a.carried) if (!c.dropped) ran.add(c.effect);
  return attempts;
}

/** The turns of one rung's model: it writes `answer` to answer.txt, then says so. */
const writes = (model: string, answer: string) => [
  {
    when: (r: ModelRequest) => r.model === model && !r.isToolResult,
    toolCalls: [{ name: 'write_file', args: { path: 'answer.txt', content: `${answer}\n` } }],
  },
  {
    when: (r: ModelRequest) => r.model === model && r.isToolResult,
    text: `Wrote ${answer}.\nFiles changed:\nanswer.txt`,
  },
];
const ANSWER = {
  name: 'ans',
  type: 'fix',
  instruction: 'write 42 to answer.txt',
  files: ['answer.txt'],
  gates: ['grep -qx 42 answer.txt'],
};

const effectsOf = (a: Attempt | undefined) => a?.carried.filter((c) => !c.dropped).map((c) => c.effect);

describe("the effects each attempt ran are the table's (issue 34)", () => {
  it('a first attempt, a fix round, and its job settled', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES);
    const command = `if grep -q 'verification of this work failed' "$GAFFER_INSTRUCTION_FILE"; then ${FIX_ADD}; else echo "// touched" >> src/math.js; fi`;
    const { job } = engine.submit({
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 2,
      tasks: [{ name: 'impl', instruction: 'fix add', command }],
    });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');
    const [first, fix] = checkJob(engine, job.id);
    expect(effectsOf(first)).toEqual([
      'check_gates',
      'acquire_placement',
      'take_checkpoint',
      'start_executor',
      'collect_evidence',
      'run_verification',
      'admit_fix_attempt',
      'release_placement',
    ]);
    expect(effectsOf(fix)).toEqual([
      'check_gates',
      'acquire_placement',
      'take_checkpoint',
      'start_executor',
      'collect_evidence',
      'run_verification',
      'check_result_gates',
      'release_placement',
    ]);
  });

  it('asked: a yes and a no; a retry of missing outputs; a parallel batch; worktrees', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const asked = engine.submit({
      workspace: ws,
      approval: 'required',
      verify: 'exit 0',
      tasks: [
        { name: 'a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
      ],
    }).job.id;
    expect((await engine.waitFor(asked, 'phase:awaiting approval', 10)).met).toBe(true);
    engine.approve(asked, { a: true, b: false });
    await engine.settled(asked);
    checkJob(engine, asked);

    // its first attempt exits 0 without its output: a retry takes over (spec 06)
    const retried = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          name: 'w',
          instruction: 'write out.md',
          command: 'test -f .tried && echo x > out.md; touch .tried',
          outputs: ['out.md'],
        },
      ],
    }).job.id;
    await engine.settled(retried);
    const [missing, retry] = checkJob(engine, retried);
    expect(effectsOf(missing)).toContain('admit_retry_attempt');
    expect(retry?.kind).toBe('retry');

    const parallel = engine.submit({
      workspace: ws,
      parallel: true,
      verify: 'exit 0',
      tasks: [
        { name: 'p', instruction: 'write p', files: ['p.txt'], command: 'echo p > p.txt' },
        { name: 'q', instruction: 'write q', files: ['q.txt'], command: 'echo q > q.txt' },
      ],
    }).job.id;
    await engine.settled(parallel);
    checkJob(engine, parallel);

    const worktrees = engine.submit({
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      verify: 'exit 0',
      tasks: [
        { name: 'x', instruction: 'write x', files: ['x.txt'], command: 'echo x > x.txt' },
        { name: 'y', instruction: 'write y', files: ['y.txt'], command: 'echo y > y.txt' },
      ],
    }).job.id;
    await engine.settled(worktrees);
    expect(engine.get(worktrees).status).toBe('done');
    checkJob(engine, worktrees);
  });

  it('cancelled while it runs: the stop, then its evidence and release', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'exit 0',
      tasks: [{ name: 's', instruction: 'sleep', command: 'echo started > s.txt; sleep 30' }],
    });
    expect((await engine.waitFor(job.id, 'worker:s:running', 20)).met).toBe(true);
    engine.cancel(job.id);
    await engine.settled(job.id);
    const [s] = checkJob(engine, job.id);
    expect(effectsOf(s)).toEqual(expect.arrayContaining(['stop_processes', 'collect_evidence', 'release_placement']));
  });

  it('interrupted by gaffer stopping: the stop and the release', async () => {
    const dataDir = join(tempDir('gaffer-data-'), 'data');
    const engine = await open({ dataDir });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'exit 0',
      tasks: [{ name: 's', instruction: 'sleep', command: 'sleep 30' }],
    });
    expect((await engine.waitFor(job.id, 'worker:s:running', 20)).met).toBe(true);
    await engine.shutdown();
    const again = await open({ dataDir });
    const [s] = checkJob(again, job.id);
    expect(s?.state).toBe('interrupted');
    expect(effectsOf(s)?.slice(-2)).toEqual(['stop_processes', 'release_placement']);
  });

  it('a rate limit waited out, and a rung that fails its gate climbing to the next', async () => {
    const engine = await open({
      defaultRunner: null,
      roster: parseRoster(
        {
          entries: ['small', 'mid'].map((id) => ({
            id,
            runner: 'builtin',
            model: `${id}-1`,
            provider: 'local',
            billing: 'free',
            cost: id === 'small' ? 'free' : 'mid',
            tasks: ['fix'],
          })),
        },
        'config test',
      ),
    });
    server.script([
      {
        when: (r: ModelRequest) => r.model === 'small-1' && !r.isToolResult,
        error: { status: 429, headers: { 'retry-after': '1' } },
      },
      ...writes('small-1', '41'),
      ...writes('mid-1', '42'),
    ]);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({ workspace: ws, verify: 'exit 0', fix_rounds: 0, tasks: [ANSWER] });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');
    const [small, mid] = checkJob(engine, job.id);
    expect(small?.trail).toContain('rate_limited');
    expect(effectsOf(small)).toEqual(expect.arrayContaining(['wait_for_window', 'admit_escalation_attempt']));
    expect(mid?.kind).toBe('escalation');
  });

  it('a climb held by a spent budget: it waits for the window, its gates are checked again, then it runs', async () => {
    let offsetS = 0;
    const now = () => epochS() + offsetS;
    const engine = await open({
      defaultRunner: null,
      roster: parseRoster(
        {
          entries: ['small', 'mid'].map((id) => ({
            id,
            runner: 'builtin',
            model: `${id}-1`,
            provider: 'local',
            billing: 'free',
            cost: id === 'small' ? 'free' : 'mid',
            tasks: ['fix'],
          })),
        },
        'config test',
      ),
      operations: {
        budgets: [{ provider: 'local', entry: null, window: 'day', unit: 'requests', limit: 1, pace_margin: 0.2 }],
        now,
      },
    });
    server.script([...writes('small-1', '41'), ...writes('mid-1', '42')]);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({ workspace: ws, verify: 'exit 0', fix_rounds: 0, tasks: [ANSWER] });
    expect((await engine.waitFor(job.id, 'worker:ans+mid:budget_paused', 30)).met).toBe(true);
    offsetS = windowOf('day', now()).end - epochS() + 60;
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');
    const [, mid] = checkJob(engine, job.id);
    expect(mid?.trail.slice(0, 3)).toEqual(['budget_spent', 'window_reset', 'gates_passed']);
    expect(effectsOf(mid)?.slice(0, 3)).toEqual(['check_gates', 'wait_for_window', 'check_gates']);
  });

  it('across these jobs every effect the table names was carried out', () => {
    expect([...ATTEMPT_EFFECTS].filter((e) => !ran.has(e))).toEqual([]);
  });
});
