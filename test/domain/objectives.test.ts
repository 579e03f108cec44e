import fc from 'fast-check';
import { DirectedGraph } from 'graphology';
import { pagerank } from 'graphology-metrics/centrality/index.js';
import { describe, expect, it } from 'vitest';
import {
  IMPACT_WEIGHTS,
  STALE_AFTER_MS,
  objectiveEvidenceOf,
  objectivesNamedIn,
  orderByImpact,
  parseObjectives,
  scoreObjectives,
  taskImpacts,
  type Objective,
  type TaskImpact,
} from '../../src/domain/objectives.js';
import { taskOrderOf } from '../../src/domain/phase-order.js';
import type { TaskType } from '../../src/domain/status.js';
import { buildVerdict, type VerdictFacts } from '../../src/domain/verdict.js';

// spec 07 "Objectives ordering": the file, the impact score, the order, the evidence — pure.

const NOW = Date.parse('2025-06-01T00:00:00Z');
const DAY = 24 * 3_600_000;
const obj = (id: string, extra: Partial<Objective> = {}): Objective => ({
  id,
  title: id,
  priority: 3,
  dependsOn: [],
  lastTouchedMs: null,
  ...extra,
});
const file = (objectives: unknown[]) => JSON.stringify({ objectives });

describe('reading the objectives file', () => {
  it('reads ids, titles, priorities, dependencies and last-touched times', () => {
    const reading = parseObjectives(
      file([
        {
          id: 'OBJ-1',
          title: 'ship the API',
          priority: 1,
          depends_on: ['OBJ-2'],
          last_touched: '2025-05-01T00:00:00Z',
        },
        { id: 'OBJ-2', title: 'schema' },
      ]),
    );
    expect(reading.warnings).toEqual([]);
    expect(reading.objectives).toEqual([
      {
        id: 'OBJ-1',
        title: 'ship the API',
        priority: 1,
        dependsOn: ['OBJ-2'],
        lastTouchedMs: Date.parse('2025-05-01T00:00:00Z'),
      },
      { id: 'OBJ-2', title: 'schema', priority: 3, dependsOn: [], lastTouchedMs: null },
    ]);
    // a bare array is read too
    expect(parseObjectives(JSON.stringify([{ id: 'OBJ-7', title: 'x' }])).objectives.map((o) => o.id)).toEqual([
      'OBJ-7',
    ]);
  });

  it('a bad file is warnings naming the field, the value and the fix, never a throw', () => {
    expect(parseObjectives('{nope', 'plan/objs.json')).toEqual({
      objectives: [],
      warnings: [expect.stringMatching(/^plan\/objs\.json is not valid JSON \(.*\): ignored — fix the JSON$/)],
    });
    expect(parseObjectives('{"objectives": "all of them"}').warnings).toEqual([
      '.gaffer/objectives.json must hold {"objectives": [...]}, got {"objectives":"all of them"}: ignored — put the objectives in an "objectives" array',
    ]);
    const reading = parseObjectives(
      file([
        {
          id: 'OBJ-1',
          title: 'a',
          priority: 9,
          depends_on: ['OBJ-1', 'OBJ-404', 'nope', 'OBJ-2'],
          last_touched: 'yesterday',
          owner: 'me',
        },
        { id: 'obj-2', title: 'lower case' },
        { id: 'OBJ-2', title: '' },
        { id: 'OBJ-2', title: 'again' },
        'OBJ-3',
        { id: 'OBJ-4', title: 'b', depends_on: 'OBJ-1' },
      ]),
    );
    expect(reading.objectives.map((o) => [o.id, o.priority, o.dependsOn, o.lastTouchedMs])).toEqual([
      ['OBJ-1', 3, ['OBJ-2'], null],
      ['OBJ-2', 3, [], null],
      ['OBJ-4', 3, [], null],
    ]);
    const at = '.gaffer/objectives.json: objectives';
    expect(reading.warnings).toEqual([
      `${at}[0].owner ignored — an objective has id, title, priority, depends_on, last_touched`,
      `${at}[0].priority must be an integer 1..5 (1 most urgent), got 9: 3 used`,
      `${at}[0].last_touched must be an ISO 8601 time like "2025-01-31T12:00:00Z", got "yesterday": ignored`,
      `${at}[1].id must be "OBJ-<n>" (like "OBJ-3"), got "obj-2": skipped — give it an OBJ-<n> id`,
      `${at}[2].title must be a non-empty string up to 200 characters, got "" — say what the objective is`,
      `${at}[3].id "OBJ-2" is already objectives[2]'s: skipped — give each objective its own id`,
      `${at}[4] must be an object like {"id": "OBJ-1", "title": "…"}, got "OBJ-3": skipped`,
      `${at}[0].depends_on[0]: OBJ-1 cannot depend on itself: dropped`,
      `${at}[0].depends_on[1]: OBJ-404 is not an objective in the file: dropped — add it or remove the dependency`,
      `${at}[0].depends_on[2] must be an "OBJ-<n>" id, got "nope": dropped`,
      `${at}[5].depends_on must be a list of ids like ["OBJ-2"], got "OBJ-1": ignored`,
    ]);
  });

  it('never throws, whatever JSON the file holds', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const reading = parseObjectives(JSON.stringify({ objectives: [value] }));
        expect(Array.isArray(reading.warnings)).toBe(true);
        scoreObjectives(reading.objectives, NOW);
      }),
    );
  });
});

describe('impact scores', () => {
  // OBJ-3 depends on OBJ-2, which depends on OBJ-1: OBJ-1 blocks everything, OBJ-2 lies between
  const chain = [obj('OBJ-1'), obj('OBJ-2', { dependsOn: ['OBJ-1'] }), obj('OBJ-3', { dependsOn: ['OBJ-2'] })];

  it('weighs PageRank, betweenness, blocker ratio, staleness and priority, each 0..1', () => {
    const scores = scoreObjectives(chain, NOW);
    const parts = (id: string) => {
      const s = scores.get(id);
      return s && [s.pagerank, s.betweenness, s.blockerRatio, s.staleness, s.priority];
    };
    expect(parts('OBJ-1')).toEqual([1, 0, 1, 0, 0.5]);
    expect(parts('OBJ-2')?.slice(1)).toEqual([1, 0.5, 0, 0.5]);
    expect(parts('OBJ-3')?.slice(1)).toEqual([0, 0, 0, 0.5]);
    for (const s of scores.values()) {
      const sum =
        IMPACT_WEIGHTS.pagerank * s.pagerank +
        IMPACT_WEIGHTS.betweenness * s.betweenness +
        IMPACT_WEIGHTS.blockerRatio * s.blockerRatio +
        IMPACT_WEIGHTS.staleness * s.staleness +
        IMPACT_WEIGHTS.priority * s.priority;
      expect(s.impact).toBe(Math.round(sum * 1000) / 1000);
    }
    // betweenness weighs as much as PageRank: the objective everything passes through outranks the root
    expect([...scores.values()].sort((a, b) => b.impact - a.impact).map((s) => s.id)).toEqual([
      'OBJ-2',
      'OBJ-1',
      'OBJ-3',
    ]);
  });

  it("PageRank is the graph library's, over edges from an objective to what it depends on, divided by the largest", () => {
    const graph = new DirectedGraph();
    for (const o of chain) graph.addNode(o.id);
    graph.addEdge('OBJ-2', 'OBJ-1');
    graph.addEdge('OBJ-3', 'OBJ-2');
    const ranks = pagerank(graph, { getEdgeWeight: null });
    const max = Math.max(...Object.values(ranks));
    const scores = scoreObjectives(chain, NOW);
    for (const o of chain) expect(scores.get(o.id)?.pagerank).toBeCloseTo((ranks[o.id] ?? 0) / max, 12);
  });

  it('staleness grows to 1 over 30 days untouched; priority 1 is 1 and 5 is 0', () => {
    const scores = scoreObjectives(
      [
        obj('OBJ-1', { lastTouchedMs: NOW - 15 * DAY, priority: 1 }),
        obj('OBJ-2', { lastTouchedMs: NOW - 90 * DAY, priority: 5 }),
        obj('OBJ-3', { lastTouchedMs: NOW + DAY }),
      ],
      NOW,
    );
    expect(STALE_AFTER_MS).toBe(30 * DAY);
    expect([scores.get('OBJ-1')?.staleness, scores.get('OBJ-2')?.staleness, scores.get('OBJ-3')?.staleness]).toEqual([
      0.5, 1, 0,
    ]);
    expect([scores.get('OBJ-1')?.priority, scores.get('OBJ-2')?.priority, scores.get('OBJ-3')?.priority]).toEqual([
      1, 0, 0.5,
    ]);
    // no edges: every PageRank equal (1 after division), no betweenness, no blocker
    expect(scores.get('OBJ-1')).toMatchObject({ pagerank: 1, betweenness: 0, blockerRatio: 0 });
  });

  it('an empty file scores nothing; one objective alone blocks nothing', () => {
    expect(scoreObjectives([], NOW).size).toBe(0);
    expect(scoreObjectives([obj('OBJ-1')], NOW).get('OBJ-1')).toMatchObject({
      pagerank: 1,
      betweenness: 0,
      blockerRatio: 0,
      impact: 0.35,
    });
  });
});

describe('ordering tasks by impact', () => {
  const impacts = (entries: [string, number][]): Map<string, TaskImpact> =>
    new Map(entries.map(([name, score]) => [name, { objectives: [], score }]));

  it('finds the OBJ-<n> ids a text names, once each, whole ids only', () => {
    expect(objectivesNamedIn('fix OBJ-12, then OBJ-1 (see OBJ-12); not obj-3, not OBJ-4x, not xOBJ-5')).toEqual([
      'OBJ-12',
      'OBJ-1',
    ]);
  });

  it('a task takes the highest impact of the objectives it names; ids the file lacks are said', () => {
    const scores = scoreObjectives([obj('OBJ-1'), obj('OBJ-2', { dependsOn: ['OBJ-1'] })], NOW);
    const { impacts: found, unknown } = taskImpacts(
      [
        { name: 'both', text: 'OBJ-2 and OBJ-1' },
        { name: 'none', text: 'tidy up' },
        { name: 'ghost', text: 'OBJ-9' },
      ],
      scores,
    );
    expect(found.get('both')).toEqual({ objectives: ['OBJ-2', 'OBJ-1'], score: scores.get('OBJ-1')?.impact });
    expect(found.has('none')).toBe(false);
    expect(found.has('ghost')).toBe(false);
    expect(unknown).toEqual([{ task: 'ghost', id: 'OBJ-9' }]);
  });

  it('fills the slots of the tasks naming objectives highest impact first; the others keep their places; ties keep the written order', () => {
    const tasks = ['low', 'free-1', 'tie-a', 'high', 'free-2', 'tie-b'].map((name) => ({ name }));
    const order = orderByImpact(
      tasks,
      impacts([
        ['low', 0.1],
        ['tie-a', 0.5],
        ['high', 0.9],
        ['tie-b', 0.5],
      ]),
    );
    expect(order.map((t) => t.name)).toEqual(['high', 'free-1', 'tie-a', 'tie-b', 'free-2', 'low']);
    expect(orderByImpact(tasks, new Map()).map((t) => t.name)).toEqual(tasks.map((t) => t.name));
  });

  const t = (name: string, type: TaskType = 'implement') => ({ name, type });

  it('a sequential job records `by: impact`; a parallel one is never reordered', () => {
    const tasks = [t('a'), t('free'), t('b')];
    const scored = new Map<string, TaskImpact>([
      ['a', { objectives: ['OBJ-1'], score: 0.2 }],
      ['b', { objectives: ['OBJ-2'], score: 0.8 }],
    ]);
    expect(taskOrderOf(tasks, false, scored)).toEqual({
      by: 'impact',
      from: ['a', 'free', 'b'],
      to: ['b', 'free', 'a'],
      phases: [['b', 'free', 'a']],
      why: 'tasks naming objectives run highest impact first (impact: b 0.8, a 0.2); the others keep their places',
      impact: [
        { task: 'b', objectives: ['OBJ-2'], score: 0.8 },
        { task: 'a', objectives: ['OBJ-1'], score: 0.2 },
      ],
    });
    expect(taskOrderOf(tasks, true, scored)).toBeNull();
    // already in impact order: nothing to say
    expect(taskOrderOf([t('b'), t('a')], false, scored)).toBeNull();
  });

  it('with reviewers, the phases hold and the impact order applies within each: `phase+impact`', () => {
    const tasks = [t('rev-low', 'review'), t('impl-low'), t('rev-high', 'review'), t('impl-high')];
    const scored = impacts([
      ['rev-low', 0.1],
      ['impl-low', 0.2],
      ['rev-high', 0.9],
      ['impl-high', 0.8],
    ]);
    const order = taskOrderOf(tasks, false, scored);
    expect(order).toMatchObject({
      by: 'phase+impact',
      to: ['impl-high', 'impl-low', 'rev-high', 'rev-low'],
      phases: [
        ['impl-high', 'impl-low'],
        ['rev-high', 'rev-low'],
      ],
    });
    expect(order?.why).toMatch(
      /^rev-low, rev-high moved after the implementers, to run against their changes; within each phase, tasks naming objectives run highest impact first/,
    );
    // a parallel job keeps its phase batches only
    expect(taskOrderOf(tasks, true, scored)).toMatchObject({
      by: 'phase',
      phases: [
        ['impl-low', 'impl-high'],
        ['rev-low', 'rev-high'],
      ],
    });
  });
});

describe('evidence and the verdict', () => {
  it('each named objective gets a record: confidence 0.6 when the job is done, 0.4 otherwise', () => {
    const job = { id: 'j1', workspace: '/ws', filesChanged: ['a.txt'], ts: 100 };
    expect(objectiveEvidenceOf(['OBJ-1', 'OBJ-2'], { ...job, status: 'done' })).toEqual([
      {
        objective: 'OBJ-1',
        job_id: 'j1',
        workspace: '/ws',
        status: 'done',
        files_changed: ['a.txt'],
        confidence: 0.6,
        ts: 100,
      },
      {
        objective: 'OBJ-2',
        job_id: 'j1',
        workspace: '/ws',
        status: 'done',
        files_changed: ['a.txt'],
        confidence: 0.6,
        ts: 100,
      },
    ]);
    expect(objectiveEvidenceOf(['OBJ-1'], { ...job, status: 'partial' })[0]?.confidence).toBe(0.4);
  });

  it('the verdict says the impact order after the criteria, before the unsandboxed agents (spec 01 part 8)', () => {
    const facts: VerdictFacts = {
      status: 'partial',
      error: null,
      workerStatuses: ['done', 'done'],
      filesChanged: 1,
      verification: null,
      fixRoundsRun: 0,
      converged: false,
      proof: null,
      claimedOnly: [],
      criteriaUnmet: ['README mentions it'],
      reportedStates: [],
      unsandboxedExternal: ['codex'],
      impactOrder: ['deploy', 'docs'],
    };
    expect(buildVerdict(facts)).toBe(
      '2/2 workers done · 1 file changed on disk · job criteria unmet: README mentions it · tasks ordered by objective impact: deploy → docs · external agent(s) ran unsandboxed: codex',
    );
    expect(buildVerdict({ ...facts, impactOrder: [] })).not.toContain('objective impact');
  });
});
