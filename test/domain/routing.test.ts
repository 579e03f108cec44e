// Issue 34: where a task runs is decided in one place (domain/routing.ts), the same for every door.
import { describe, expect, it } from 'vitest';
import { parseJobRequest } from '../../src/domain/request.js';
import { parseRoster } from '../../src/domain/roster.js';

const ROSTER = parseRoster(
  {
    entries: [
      {
        id: 'local',
        runner: 'builtin',
        model: 'small',
        provider: 'home',
        billing: 'free',
        cost: 'free',
        tasks: ['fix', 'review'],
      },
      {
        id: 'paid',
        runner: 'builtin',
        model: 'big',
        provider: 'cloud',
        billing: 'api',
        cost: 'high',
        tasks: ['fix', 'review'],
      },
    ],
  },
  'config test',
);
const facts = { defaultRunner: 'builtin', available: ['builtin', 'shell'], roster: ROSTER };

describe('routing at admission (issue 34)', () => {
  it('a command without a runner is the shell, also when a default runner (a model) is configured: the command is never dropped', () => {
    const spec = parseJobRequest(
      { workspace: '/tmp/x', tasks: [{ instruction: 'make x', command: 'touch x' }] },
      { defaultRunner: 'builtin', available: ['builtin', 'shell'] },
    );
    expect(spec.tasks[0]).toMatchObject({ runner: 'shell', command: 'touch x' });
    const named = parseJobRequest(
      { workspace: '/tmp/x', tasks: [{ instruction: 'make x' }] },
      { defaultRunner: 'builtin', available: ['builtin', 'shell'] },
    );
    expect(named.tasks[0]).toMatchObject({ runner: 'builtin', command: null });
  });

  it("the reviewer on a named runner and model is billed as the roster's entry for them, as any task is (it ran the api model unasked)", () => {
    const spec = parseJobRequest(
      {
        workspace: '/tmp/x',
        runner: 'builtin',
        model: 'big',
        reviewer: true,
        tasks: [{ instruction: 'fix the parser in src/p.js', files: ['src/p.js'] }],
      },
      facts,
    );
    expect(spec.tasks.map((t) => [t.name, t.runner, t.model, t.roster?.entry, t.roster?.billing])).toEqual([
      ['worker-1', 'builtin', 'big', 'paid', 'api'],
      ['reviewer', 'builtin', 'big', 'paid', 'api'],
    ]);
  });

  it("a pinned task runs on its entry whatever runner and model it names; the pin's ladder is kept for climbs", () => {
    const spec = parseJobRequest(
      {
        workspace: '/tmp/x',
        tasks: [{ name: 'a', type: 'fix', instruction: 'fix the parser in src/p.js', runner: 'shell' }],
      },
      { ...facts, pins: new Map([['a', 'paid']]) },
    );
    expect(spec.tasks[0]).toMatchObject({
      runner: 'builtin',
      model: 'big',
      roster: { entry: 'paid', billing: 'api', why: 'where its task last ran: roster entry paid' },
    });
    expect(spec.tasks[0]?.roster?.ladder?.map((r) => r.entry)).toEqual(['local', 'paid']);
  });
});
