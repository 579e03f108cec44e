// Issue 33: a run is held to the same command's run on the checkpoint — tests that ran there and not now
// are a failure (by id where the runner names every test, by count where it names only the failing ones),
// and `fixed` counts only tests a completed run shows passing.
import { describe, expect, it } from 'vitest';
import { judgeVerification, readRun, type JudgeInput } from '../../src/verification/judge.js';
import type { ParsedRun } from '../../src/verification/parsers/types.js';
import type { SuiteRun } from '../../src/verification/run-suite.js';
import { buildVerdict } from '../../src/domain/verdict.js';

const parsed = (p: Partial<ParsedRun>): ParsedRun => ({
  framework: 'jest',
  failed: [],
  passed: [],
  skipped: [],
  counts: null,
  ranSignal: true,
  noTestsRan: false,
  collectionError: false,
  incomplete: null,
  ...p,
});
const run = (exitCode: number, p: Partial<ParsedRun>): SuiteRun => ({
  command: 'npm test',
  exitCode,
  signal: null,
  timedOut: false,
  isCancelled: false,
  cause: null,
  durationMs: 500,
  tail: '',
  parsed: parsed(p),
  landmarkSeen: undefined,
});

function judge(after: SuiteRun, baseline: SuiteRun): ReturnType<typeof judgeVerification> {
  const opts = { kind: 'node', timeoutS: 60, expectedOutput: null };
  const input: JudgeInput = {
    mode: 'auto',
    kind: 'node',
    command: 'npm test',
    scope: 'all',
    after,
    reading: readRun(after, opts),
    baseline: { run: baseline, reading: readRun(baseline, opts) },
    flaky: [],
    testsTouched: [],
    testsWeakened: [],
    original: null,
    testsMayChange: false,
    knownFailures: [],
    ownsCheckpointFailures: true,
  };
  return judgeVerification(input);
}

describe('held to the checkpoint', () => {
  it('by id when both runs name every test: the missing one blocks and is named on the verdict', () => {
    const v = judge(
      run(0, { passed: ['a', 'b'], counts: { passed: 2, failed: 0, skipped: 0 } }),
      run(1, { passed: ['a', 'b'], failed: ['c'], counts: { passed: 2, failed: 1, skipped: 0 } }),
    );
    expect(v).toMatchObject({ ok: false, blocking: true, missing_tests: ['c'], fixed: [], checkpoint_failures: 1 });
    const verdict = buildVerdict({
      status: 'partial',
      error: null,
      workerStatuses: ['done'],
      filesChanged: 1,
      verification: v,
      fixRoundsRun: 0,
      converged: false,
      proof: null,
      claimedOnly: [],
      criteriaUnmet: [],
      reportedStates: [],
    });
    expect(verdict).toMatch(/^the suite did not run to its end: 1 test that ran at the checkpoint did not run \(c\)/);
  });

  it('by count when the runner names only the failing tests (jest without --verbose): no passing test looks gone', () => {
    const fine = judge(
      run(0, { counts: { passed: 3, failed: 0, skipped: 0 } }),
      run(1, { failed: ['c'], counts: { passed: 2, failed: 1, skipped: 0 } }),
    );
    expect(fine).toMatchObject({ ok: true, blocking: false });
    expect(fine.missing_tests).toBeUndefined();
    const fewer = judge(
      run(0, { counts: { passed: 1, failed: 0, skipped: 0 } }),
      run(1, { failed: ['c'], counts: { passed: 2, failed: 1, skipped: 0 } }),
    );
    expect(fewer).toMatchObject({
      ok: false,
      blocking: true,
      missing_tests: ['2 fewer test(s) ran than before the work'],
    });
    expect(fewer.summary).toContain('counted: the runner names no passing test');
  });

  it('a run that did not complete fixes nothing, whatever it stopped naming', () => {
    const cut = run(0, {
      framework: 'tape',
      counts: null,
      ranSignal: false,
      incomplete: 'TAP output has no plan line (1..N)',
    });
    const v = judge(
      cut,
      run(1, { framework: 'tape', passed: ['a'], failed: ['c'], counts: { passed: 1, failed: 1, skipped: 0 } }),
    );
    expect(v).toMatchObject({ ok: false, blocking: true, fixed: [] });
  });
});
