import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { jobAnswerSchema } from '../../src/domain/answer-schema.js';
import { renderCompact } from '../../src/interfaces/cli/render.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// spec 07 "Objectives ordering", through real jobs: a real git workspace, real shell workers that
// write the order they ran in, the objectives file read from the checkpoint.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox: createSandbox('off') }),
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>) {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return { full: engine.get(job.id, { full: true }), compact: engine.get(job.id) };
}

/**
 * OBJ-1 (docs) and OBJ-2 (api, priority 1, long untouched) both wait on OBJ-3 (schema): OBJ-3
 * has the highest PageRank and blocks both; OBJ-2's priority and staleness put it above OBJ-1.
 */
const OBJECTIVES = JSON.stringify({
  objectives: [
    { id: 'OBJ-1', title: 'document the API', depends_on: ['OBJ-3'] },
    { id: 'OBJ-2', title: 'ship the API', priority: 1, depends_on: ['OBJ-3'], last_touched: '2025-01-01T00:00:00Z' },
    { id: 'OBJ-3', title: 'settle the schema' },
  ],
});

/** Written: docs (OBJ-1), tidy (none), api (OBJ-2), schema (OBJ-3); each appends its name to order.txt. */
const TASKS = [
  { name: 'docs', instruction: 'write the docs for OBJ-1', command: 'echo docs >> order.txt' },
  { name: 'tidy', instruction: 'tidy the README', command: 'echo tidy >> order.txt' },
  { name: 'api', instruction: 'build the endpoint (OBJ-2)', command: 'echo api >> order.txt' },
  { name: 'schema', instruction: 'OBJ-3: settle the schema', command: 'echo schema >> order.txt' },
];

const ranOrder = (ws: string) => readFileSync(join(ws, 'order.txt'), 'utf8').trim().split('\n');

describe('objectives ordering (spec 07)', () => {
  it('a sequential job runs the tasks naming objectives highest impact first; a task naming none keeps its slot', async () => {
    const engine = await open();
    // ignored by git: the checkpoint still holds it, and the order is read from there
    const ws = makeWorkspace(
      { '.gitignore': '.gaffer/\n', '.gaffer/objectives.json': OBJECTIVES, 'README.md': 'hi\n' },
      { git: true },
    );
    const { full, compact } = await run(engine, { workspace: ws, verify: 'none', tasks: TASKS });

    expect(ranOrder(ws)).toEqual(['schema', 'tidy', 'api', 'docs']);
    expect(full.status).toBe('done');
    expect(full.task_order).toMatchObject({
      by: 'impact',
      from: ['docs', 'tidy', 'api', 'schema'],
      to: ['schema', 'tidy', 'api', 'docs'],
    });
    expect(full.task_order?.impact?.map((t) => [t.task, t.objectives])).toEqual([
      ['schema', ['OBJ-3']],
      ['api', ['OBJ-2']],
      ['docs', ['OBJ-1']],
    ]);
    const scores = full.task_order?.impact?.map((t) => t.score) ?? [];
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(full.verdict).toContain('tasks ordered by objective impact: schema → api → docs');
    // the rows keep the request's order
    expect(full.result?.workers.map((w) => w.name)).toEqual(['docs', 'tidy', 'api', 'schema']);

    // each named objective got its evidence record, on the full answer
    expect(full.objectives?.named.map((o) => o.id)).toEqual(['OBJ-1', 'OBJ-2', 'OBJ-3']);
    expect(full.objectives?.warnings).toEqual([]);
    expect(full.objectives?.evidence).toEqual(
      ['OBJ-1', 'OBJ-2', 'OBJ-3'].map((objective) => ({
        objective,
        job_id: full.id,
        workspace: ws,
        status: 'done',
        files_changed: ['order.txt'],
        confidence: 0.6,
        ts: expect.any(Number),
      })),
    );
    // the compact answer says what was named, and leaves the records to `full`
    expect(compact.objectives).toEqual({
      file: '.gaffer/objectives.json',
      named: full.objectives?.named,
      warnings: [],
    });
    expect(jobAnswerSchema(true).safeParse(full).success).toBe(true);
    expect(jobAnswerSchema(false).safeParse(compact).success).toBe(true);
    expect(renderCompact(full)).toContain(
      'task order: schema → tidy → api → docs (tasks naming objectives run highest impact first',
    );
  });

  it('a parallel job is never reordered; its named objectives still get evidence (the hint names the file)', async () => {
    const engine = await open();
    const ws = makeWorkspace(
      {
        '.gaffer/workspace.json': JSON.stringify({ objectives: 'plan/objectives.json' }),
        'plan/objectives.json': OBJECTIVES,
        'README.md': 'hi\n',
      },
      { git: true },
    );
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      parallel: true,
      tasks: TASKS.map((t) => ({ ...t, command: `echo ${t.name} > ${t.name}.txt` })),
    });
    expect(full.status).toBe('done');
    expect(full.task_order).toBeUndefined();
    expect(full.verdict).not.toContain('objective impact');
    expect(full.objectives?.file).toBe('plan/objectives.json');
    expect(full.objectives?.evidence?.map((e) => [e.objective, e.status, e.confidence])).toEqual([
      ['OBJ-1', 'done', 0.6],
      ['OBJ-2', 'done', 0.6],
      ['OBJ-3', 'done', 0.6],
    ]);
  });

  it('a worktree job is not reordered (its tasks run as their gates class them) but leaves evidence', async () => {
    const engine = await open();
    const ws = makeWorkspace({ '.gaffer/objectives.json': OBJECTIVES, 'README.md': 'hi\n' }, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      isolation: 'worktree',
      tasks: TASKS.map((t) => ({ ...t, command: `echo ${t.name} > ${t.name}.txt` })),
    });
    expect(full.task_order?.by ?? 'none').not.toContain('impact');
    expect(full.verdict).not.toContain('objective impact');
    expect(full.objectives?.evidence?.map((e) => [e.objective, e.status])).toEqual([
      ['OBJ-1', full.status],
      ['OBJ-2', full.status],
      ['OBJ-3', full.status],
    ]);
  });

  it('a bad objectives file is a warning on the job, which runs as written; no file: nothing said', async () => {
    const engine = await open();
    const ws = makeWorkspace(
      { '.gaffer/objectives.json': '{"objectives": [{"id": "goal-1"}]', 'README.md': 'hi\n' },
      { git: true },
    );
    const { full } = await run(engine, { workspace: ws, verify: 'none', tasks: TASKS });
    expect(full.status).toBe('done');
    expect(ranOrder(ws)).toEqual(['docs', 'tidy', 'api', 'schema']);
    expect(full.task_order).toBeUndefined();
    expect(full.objectives).toMatchObject({ file: '.gaffer/objectives.json', named: [], evidence: [] });
    expect(full.objectives?.warnings[0]).toMatch(
      /^\.gaffer\/objectives\.json is not valid JSON .*: ignored — fix the JSON$/,
    );
    expect(
      engine
        .events(full.id)
        .events.some(
          (e) => e.event === 'phase' && e.message.startsWith('objectives: .gaffer/objectives.json is not valid JSON'),
        ),
    ).toBe(true);

    // a link could point anywhere: its target is never read
    const linked = makeWorkspace({ 'secret.json': OBJECTIVES, 'README.md': 'hi\n' }, { git: true });
    mkdirSync(join(linked, '.gaffer'));
    symlinkSync('../secret.json', join(linked, '.gaffer', 'objectives.json'));
    const viaLink = await run(engine, { workspace: linked, verify: 'none', tasks: TASKS });
    expect(ranOrder(linked)).toEqual(['docs', 'tidy', 'api', 'schema']);
    expect(viaLink.full.objectives?.warnings).toEqual([
      '.gaffer/objectives.json: is a symlink; only a regular file is read: ignored',
    ]);

    const bare = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
    const plain = await run(engine, { workspace: bare, verify: 'none', tasks: TASKS });
    expect(ranOrder(bare)).toEqual(['docs', 'tidy', 'api', 'schema']);
    expect(plain.full.objectives).toBeUndefined();
    expect(plain.full.task_order).toBeUndefined();
  });

  it('a job that fails still leaves evidence, at 0.4; ids the file lacks are warned about, not recorded', async () => {
    const engine = await open();
    const ws = makeWorkspace({ '.gaffer/objectives.json': OBJECTIVES, 'README.md': 'hi\n' }, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'broken', instruction: 'OBJ-2 and OBJ-99', command: 'echo half > half.txt; exit 3' }],
    });
    expect(full.status).not.toBe('done');
    expect(full.objectives?.warnings).toEqual([
      'task broken names OBJ-99, which .gaffer/objectives.json does not declare: not ordered by it, no evidence kept for it',
    ]);
    expect(full.objectives?.evidence).toEqual([
      {
        objective: 'OBJ-2',
        job_id: full.id,
        workspace: ws,
        status: full.status,
        files_changed: ['half.txt'],
        confidence: 0.4,
        ts: expect.any(Number),
      },
    ]);
  });
});
