import { describe, expect, it } from 'vitest';
import { buildHandoff } from '../../src/domain/handoff.js';
import { parseJobRequest, type TaskSpec } from '../../src/domain/request.js';
import { GafferError } from '../../src/domain/errors.js';

// spec 05 "Grounding" and "The handoff prompt".

const runners = { defaultRunner: 'builtin', available: ['builtin', 'shell'] };
const request = (task: Record<string, unknown>) => ({
  workspace: '/tmp',
  tasks: [{ instruction: 'fix the parser', ...task }],
});

function refusal(body: unknown): GafferError {
  try {
    parseJobRequest(body, runners);
  } catch (err) {
    if (err instanceof GafferError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('grounding (spec 05)', () => {
  it('a grounded task without receipts, done_means or a known type is returned with each gap named, never dispatched', () => {
    const err = refusal(request({ name: 'api-fix', grounded: true, type: 'paint' }));
    expect(err.code).toBe('needs_detail');
    expect(err.extra.grounding).toEqual([
      {
        task: 'api-fix',
        field: 'tasks[0]',
        gaps: [
          'no receipts (evidence the task is real: a file:line, a log line, an issue link)',
          'no done_means (explicit, checkable completion criteria: what must be true when it is done)',
          expect.stringMatching(/^unknown type 'paint' \(known: design, implement, fix, /),
        ],
      },
    ]);
    expect(err.message).toMatch(/^returned, not dispatched: tasks\[0\] \(api-fix\): no receipts/);
    expect(
      refusal(request({ grounded: true, receipts: ['src/p.ts:12'], done_means: ['parses "a,b"'] })).extra.grounding,
    ).toEqual([{ task: 'tasks[0]', field: 'tasks[0]', gaps: [expect.stringMatching(/^no type \(known: /)] }]);
  });

  it('a held task never dispatches, grounded or not', () => {
    expect(refusal(request({ hold: 'waiting on the schema review' })).extra.grounding).toEqual([
      { task: 'tasks[0]', field: 'tasks[0]', gaps: ['held: waiting on the schema review'] },
    ]);
    // not grounded: an unknown type is a plain invalid request
    expect(refusal(request({ type: 'paint' }))).toMatchObject({ code: 'invalid_request', field: 'tasks[0].type' });
  });

  it('a grounded task with all it needs is dispatchable, its brief kept', () => {
    const spec = parseJobRequest(
      request({
        grounded: true,
        type: 'fix',
        receipts: ['src/p.ts:12 throws on ""'],
        done_means: ['parse("") returns []'],
        abort_criteria: ['the grammar needs a change'],
        read_first: ['docs/grammar.md'],
        context: 'the parser is hand-written',
      }),
      runners,
    );
    expect(spec.tasks[0]?.brief).toEqual({
      receipts: ['src/p.ts:12 throws on ""'],
      done_means: ['parse("") returns []'],
      abort_criteria: ['the grammar needs a change'],
      read_first: ['docs/grammar.md'],
      context: 'the parser is hand-written',
      grounded: true,
    });
  });
});

describe('the handoff prompt (spec 05)', () => {
  const task = (extra: Partial<TaskSpec> = {}): TaskSpec => ({
    name: 'api-fix',
    instruction: 'Fix the parser.\nDo not touch the lexer.',
    files: ['src/p.ts'],
    type: 'fix',
    runner: 'builtin',
    model: 'm-1',
    criteria: ['src/p.ts changes'],
    outputs: [],
    command: null,
    tests_may_change: false,
    brief: {
      receipts: ['src/p.ts:12 throws'],
      done_means: ['parse("") returns []', 'the old tests pass'],
      abort_criteria: ['the grammar must change'],
      read_first: [],
      context: 'hand-written parser',
      grounded: true,
    },
    ...extra,
  });
  const route = { runner: 'builtin', model: 'm-1', entry: 'local', provider: 'ollama' };
  const rules = ['Make surgical changes.', 'Never fake done.'];

  it('has every section, in order, from the task and the standing rules', () => {
    const text = buildHandoff({
      task: task(),
      route,
      jobContext: 'a monorepo',
      verify: 'npm test',
      rules,
      source: 'gaffer job j1',
    });
    const titles = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(titles).toEqual([
      'Role',
      'Task',
      'Context',
      'Read first',
      'Order of work',
      'Hard rules',
      'Done means',
      'Gates',
      'Decisions',
      'Abort criteria',
    ]);
    expect(text).toContain('You are m-1 on builtin (roster entry local), dispatched by gaffer for a fix task.');
    expect(text).toContain('a monorepo\nhand-written parser');
    // no read_first: the receipts are what to read first
    expect(text).toContain('read it before you start:\n- src/p.ts:12 throws');
    expect(text).toContain('1. parse("") returns []\n2. the old tests pass');
    expect(text).toContain(
      '- Make surgical changes.\n- Never fake done.\n- Write only these paths: src/p.ts.\n- Do not touch the lexer.',
    );
    expect(text).toMatch(
      /confirm or fail each of these explicitly[^\n]*\n- parse\(""\) returns \[\]\n- the old tests pass/,
    );
    expect(text).toContain("gaffer runs the project's tests itself (npm test)");
    expect(text).toContain('- criterion: src/p.ts changes');
    expect(text).toContain('state it decision-grade');
    expect(text).toContain('- the grammar must change');
    expect(text.endsWith('---\nsource: gaffer job j1 · task: api-fix')).toBe(true);
  });

  it('a bare task still gets role, task, rules, done means, gates, decisions and abort criteria', () => {
    const text = buildHandoff({
      task: task({ brief: undefined, criteria: [], files: [] }),
      route: { ...route, model: null, entry: null },
      jobContext: null,
      verify: 'none',
      rules: [],
      source: 's',
    });
    expect([...text.matchAll(/^## (.+)$/gm)].map((m) => m[1])).toEqual([
      'Role',
      'Task',
      'Hard rules',
      'Done means',
      'Gates',
      'Decisions',
      'Abort criteria',
    ]);
    expect(text).toContain('You are the default model on builtin, dispatched');
    expect(text).toContain('- the task above is carried out as written');
    expect(text).toContain('No verification runs');
  });

  // issue 33: for a job that changes code, a test failing before the work is the job's to fix unless declared known
  it('a task that changes code is told a failure from before the work is still its own unless declared known; a review keeps the old sense', () => {
    for (const type of ['fix', 'implement', 'test'] as const) {
      const text = buildHandoff({
        task: task({ type }),
        route,
        jobContext: null,
        verify: 'npm test',
        rules,
        source: 's',
      });
      expect(text).toContain(
        'every test that fails after it is yours to fix, a test that already failed before you started included, unless it is declared a known failure (`verify.known_failures`)',
      );
      expect(text).not.toContain('a failure that was there before is not');
    }
    for (const type of ['review', 'research'] as const) {
      const text = buildHandoff({
        task: task({ type }),
        route,
        jobContext: null,
        verify: 'npm test',
        rules,
        source: 's',
      });
      expect(text).toContain(
        "gaffer runs the project's tests itself (npm test); a new failure is yours, a failure that was there before is not.",
      );
    }
  });
});
