import { describe, expect, it } from 'vitest';
import { buildAcceptance, type OutcomeCount } from '../../src/domain/acceptance.js';
import type { TaskResult } from '../../src/domain/attempt-results.js';
import { costOf, decideOutcomeStatus } from '../../src/domain/outcome.js';

const count = (extra: Partial<OutcomeCount>): OutcomeCount => ({
  type: 'fix',
  runner: 'builtin',
  model: 'qwen3:8b',
  provider: 'ollama',
  status: 'passed',
  count: 1,
  ...extra,
});

describe('the acceptance rate', () => {
  it('no outcome is an empty report that says its denominator', () => {
    expect(buildAcceptance([])).toEqual({
      acceptance: {},
      outcomes_total: 0,
      excluded: { not_dispatched: 0, abstained: 0 },
      note: expect.stringContaining('not_dispatched'),
    });
  });

  it('accepted / total per (type, model), keyed as spec 02 says; not_dispatched is counted in the total but in no denominator', () => {
    const report = buildAcceptance([
      count({ status: 'passed', count: 2 }),
      count({ status: 'failed', count: 1 }),
      count({ status: 'cancelled', count: 1 }),
      count({ status: 'not_dispatched', count: 5 }),
      count({ type: 'implement', runner: 'shell', model: null, provider: null, status: 'error', count: 1 }),
      // only denied: nothing ran, so no row at all
      count({ type: 'design', status: 'not_dispatched', count: 1 }),
    ]);
    expect(report.acceptance).toEqual({
      'fix/qwen3:8b': {
        type: 'fix',
        model: 'qwen3:8b',
        runners: ['builtin'],
        providers: ['ollama'],
        accepted: 2,
        total: 4,
        rate: 0.5,
      },
      'implement/(shell default)': {
        type: 'implement',
        model: null,
        runners: ['shell'],
        providers: [],
        accepted: 0,
        total: 1,
        rate: 0,
      },
    });
    expect(report.outcomes_total).toBe(11);
    expect(report.excluded).toEqual({ not_dispatched: 6, abstained: 0 });
  });

  it('keys sort the same whatever order the counts come in; a model served by two runners is one entry naming both; rates to three places', () => {
    const counts = [
      count({ type: 'fix', model: null, runner: 'claude', provider: null }),
      count({ type: 'fix', model: 'b-model' }),
      count({ type: 'fix', model: 'a-model', status: 'failed', count: 2 }),
      count({ type: 'fix', model: 'a-model' }),
      count({ type: 'design', model: 'z-model' }),
      count({ type: 'fix', model: 'b-model', runner: 'aider' }),
    ];
    const rows = (cs: OutcomeCount[]) =>
      Object.entries(buildAcceptance(cs).acceptance).map(([key, r]) => [key, r.runners, r.rate]);
    const expected = [
      ['design/z-model', ['builtin'], 1],
      ['fix/(claude default)', ['claude'], 1],
      ['fix/a-model', ['builtin'], 0.333],
      ['fix/b-model', ['aider', 'builtin'], 1],
    ];
    expect(rows(counts)).toEqual(expected);
    expect(rows([...counts].reverse())).toEqual(expected);
  });
});

const result = (extra: Partial<TaskResult>): TaskResult => ({
  task: 't',
  attempts: 1,
  state: 'settled',
  ending: 'finished',
  status: 'done',
  outcome: 'success',
  started: true,
  nothingChanged: false,
  verificationBlocks: false,
  gatesPass: true,
  ...extra,
});

describe("a task's outcome status", () => {
  it('passed only through the result gates with its verification passing and its work done', () => {
    expect(decideOutcomeStatus(result({}))).toBe('passed');
    expect(decideOutcomeStatus(result({ gatesPass: false }))).toBe('failed');
    expect(decideOutcomeStatus(result({ verificationBlocks: true }))).toBe('failed');
    expect(decideOutcomeStatus(result({ status: 'error', outcome: 'expected_error' }))).toBe('failed');
    expect(decideOutcomeStatus(result({ nothingChanged: true }))).toBe('failed');
  });

  it('nothing of it ran (a denied ask, a refusal, a launch failure, a hold or a cancel before a process, no attempt) is not_dispatched; stops while it ran are cancelled or interrupted', () => {
    expect(decideOutcomeStatus(result({ ending: 'refused', started: false }))).toBe('not_dispatched');
    expect(decideOutcomeStatus(result({ ending: 'launch_failed', started: false }))).toBe('not_dispatched');
    expect(decideOutcomeStatus(result({ ending: 'cancelled', started: false }))).toBe('not_dispatched');
    expect(decideOutcomeStatus(undefined)).toBe('not_dispatched');
    expect(decideOutcomeStatus(result({ ending: 'cancelled' }))).toBe('cancelled');
    expect(decideOutcomeStatus(result({ state: 'interrupted', ending: null }))).toBe('interrupted');
    // gaffer failed while the attempt was still live
    expect(decideOutcomeStatus(result({ state: 'running', ending: null }))).toBe('error');
  });
});

describe("a task's cost", () => {
  it('free and subscription record 0; api sums what was reported, and is unknown as soon as one attempt that ran reported nothing', () => {
    expect(costOf([])).toBe(0);
    expect(
      costOf([
        { billing: 'free', ran: true, costUsd: null },
        { billing: 'subscription', ran: true, costUsd: 3 },
      ]),
    ).toBe(0);
    expect(
      costOf([
        { billing: 'api', ran: true, costUsd: 0.25 },
        { billing: 'api', ran: true, costUsd: 0.5 },
      ]),
    ).toBe(0.75);
    expect(
      costOf([
        { billing: 'api', ran: true, costUsd: 0.25 },
        { billing: 'api', ran: true, costUsd: null },
      ]),
    ).toBeNull();
    // an attempt that never got a process made no call
    expect(
      costOf([
        { billing: 'api', ran: false, costUsd: null },
        { billing: 'api', ran: true, costUsd: 1 },
      ]),
    ).toBe(1);
    expect(costOf([{ billing: null, ran: true, costUsd: 1 }])).toBeNull();
  });
});
