import { describe, expect, it } from 'vitest';
import { autopsySection } from '../../src/domain/escalation.js';
import type { TaskSpec } from '../../src/domain/request.js';
import type { VerificationJson } from '../../src/domain/result.js';
import type { Rung } from '../../src/domain/route.js';
import { TaskLadders } from '../../src/engine/routing/escalation.js';
import type { WorkerEnd } from '../../src/engine/pipeline/attempt-run.js';
import { blankReport } from '../../src/runners/report.js';
import { describeFailures } from '../../src/verification/describe-failures.js';
import { buildFixerInstruction } from '../../src/verification/fixer-instruction.js';
import { rosterRouter } from '../../src/engine/routing/router.js';

// issue 33: a fixer and the next rung of a climb are told what failed in the same words — each failing
// test with the lines that report it; a test that failed at the checkpoint too is still the job's

const verification = (extra: Partial<VerificationJson> & Record<string, unknown> = {}): VerificationJson => ({
  mode: 'auto',
  ran: true,
  ok: false,
  inconclusive: false,
  kind: 'node',
  command: 'npm test',
  scope: 'all',
  exit_code: 1,
  timed_out: false,
  duration_s: 1.2,
  blocking: true,
  summary: '2 failed, 3 passed',
  failures: ['test/math.test.js > divide rounds down', 'test/math.test.js > adds'],
  new_failures: ['test/math.test.js > adds'],
  pre_existing: ['test/math.test.js > divide rounds down'],
  flaky: [],
  output_tail: 'Tests: 2 failed, 3 passed, 5 total',
  failure_details: [
    { id: 'test/math.test.js > divide rounds down', excerpt: '● divide rounds down\n  Expected: 3\n  Received: 4' },
    { id: 'test/math.test.js > adds', excerpt: '● adds\n  Expected: 5\n  Received: -1' },
  ],
  attempts: 1,
  ...extra,
});

const rung = (entry: string, cost: Rung['cost']): Rung => ({
  entry,
  runner: 'builtin',
  model: `${entry}-1`,
  provider: 'local',
  billing: 'free',
  cost,
  approve: false,
  endpoint: null,
});
const LADDER = [rung('small', 'free'), rung('mid', 'mid')];
const TASK = {
  name: 'fix-math',
  type: 'fix',
  instruction: 'make the math tests pass',
  files: [],
  roster: {
    entry: 'small',
    provider: 'local',
    billing: 'free',
    cost: 'free',
    approve: false,
    why: 'first',
    ladder: LADDER,
  },
} as unknown as TaskSpec;
const workerEnd = (summary: string): WorkerEnd =>
  ({
    plan: { task: TASK, name: 'fix-math' },
    report: blankReport({ status: 'done', outcome: 'success', stopReason: 'complete', summary }),
    started: true,
  }) as unknown as WorkerEnd;

/** The autopsy the next rung reads after the first rung's verification blocked with `v`. */
function climbAfter(v: VerificationJson) {
  const ladders = new TaskLadders(
    [TASK],
    rosterRouter(() => 'free'),
  );
  const climb = ladders.next([workerEnd('Changed src/math.js.')], [], v, () => 'fix-math');
  if (climb === null) throw new Error('expected a climb');
  return climb;
}

describe('what failed, for a fixer and for the next rung', () => {
  it('a fix round and a climb carry the same failure block: ids, their assertions, the output tail', () => {
    const v = verification();
    const block = describeFailures(v);
    const fixer = buildFixerInstruction(v, [TASK], ['src/math.js']);
    expect(fixer).toContain(block);
    const autopsy = autopsySection(climbAfter(v).autopsy);
    // the autopsy indents it under its attempt
    const dedented = autopsy
      .split('\n')
      .map((l) => l.replace(/^ {6}/, ''))
      .join('\n');
    expect(dedented).toContain(block);
    for (const text of [fixer, dedented]) {
      expect(text).toContain('Command: npm test');
      expect(text).toContain('- test/math.test.js > adds\n    ● adds\n      Expected: 5\n      Received: -1');
      expect(text).toContain('Received: 4');
      expect(text).toContain('Tests: 2 failed, 3 passed, 5 total');
    }
  });

  it("a test that failed at the checkpoint too is still the job's to fix; the old excuse is gone; a declared known failure is named as not the job's", () => {
    const block = describeFailures(
      verification({
        known_failures: ['test/math.test.js > adds'],
        pre_existing: ['test/math.test.js > divide rounds down', 'test/math.test.js > adds'],
      }),
    );
    expect(block).toContain(
      "- test/math.test.js > divide rounds down (failed at the checkpoint too — still this job's to fix)",
    );
    expect(block).toContain("- test/math.test.js > adds (declared a known failure: not this job's)");
    expect(buildFixerInstruction(verification(), [TASK], [])).not.toMatch(/already failed before/);
  });

  it('tests that stopped running, the original tests and flaky ids are named; no ids: the output is pointed at', () => {
    const block = describeFailures(
      verification({
        missing_tests: ['test/a.test.js > one', 'test/a.test.js > two'],
        flaky: ['test/math.test.js > adds'],
        original_tests: {
          ran: true,
          ok: false,
          command: 'npm test',
          changed: ['test/math.test.js'],
          summary: '1 failed',
          failures: ['test/math.test.js > divide rounds down'],
          blocking: true,
          tests_may_change: false,
        },
      }),
    );
    expect(block).toContain(
      'Tests that ran at the checkpoint and did not run now (2): test/a.test.js > one, test/a.test.js > two',
    );
    expect(block).toContain('- test/math.test.js > adds (flaky: it passed on a rerun)');
    expect(block).toContain(
      'The tests as they were before the work were run against the new code and fail (test/math.test.js > divide rounds down). Test files changed: test/math.test.js.',
    );
    expect(describeFailures(verification({ failures: [], failure_details: [] }))).toContain(
      '- (no test ids could be parsed; see the output below)',
    );
    expect(describeFailures(verification({ output_tail: 'x'.repeat(5_000) })).match(/x+$/)?.[0].length).toBe(2_000);
  });

  it("the autopsy's verdict for a rung whose verification blocked is fail, whatever its gates said; the climb keeps the gates' reading", () => {
    const climb = climbAfter(verification());
    expect(climb.autopsy[0]).toMatchObject({ verdict: 'fail', verification: '2 failed, 3 passed' });
    expect(climb.verdict).toBe('pass');
    expect(climb.why).toBe('the verification failed: 2 failed, 3 passed');
    // a verification that did not block leaves the rung passing: no climb
    expect(
      new TaskLadders(
        [TASK],
        rosterRouter(() => 'free'),
      ).next([workerEnd('ok')], [], verification({ blocking: false }), () => 'fix-math'),
    ).toBeNull();
  });
});
