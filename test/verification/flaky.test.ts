// spec 03 "Flaky", issue 10: a failure is flaky only when a targeted rerun lists that very id as passed.
import { describe, expect, it } from 'vitest';
import type { ParsedRun } from '../../src/verification/parsers/types.js';
import type { SuiteRun } from '../../src/verification/run-suite.js';
import { findFlaky } from '../../src/verification/verify.js';

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
const suiteRun = (p: Partial<ParsedRun>, exitCode = 0): SuiteRun => ({
  command: 'npm test',
  exitCode,
  signal: null,
  timedOut: false,
  isCancelled: false,
  cause: null,
  durationMs: 10,
  tail: '',
  parsed: parsed(p),
  landmarkSeen: undefined,
});
const input = { signal: new AbortController().signal, workspace: '/tmp' };
const first = suiteRun({ failed: ['test/a.test.js > a', 'test/a.test.js > b'] }, 1);

describe('flaky by its own id', () => {
  it('a rerun that exits 0 naming no test excuses nothing (the old "ran cleanly" rule did)', async () => {
    const reruns: string[] = [];
    const clean = suiteRun({ counts: { passed: 3, failed: 0, skipped: 0 } });
    const flaky = await findFlaky(input, first, first.parsed.failed, async (command) => (reruns.push(command), clean));
    expect(flaky).toEqual([]);
    expect(reruns).toHaveLength(3);
  });

  it('only the ids a rerun lists as passed are flaky; the others keep failing', async () => {
    const runs = [
      suiteRun({ passed: ['test/a.test.js > a'], failed: ['test/a.test.js > b'] }, 1),
      suiteRun({ passed: ['test/a.test.js > other'] }),
    ];
    const flaky = await findFlaky(input, first, first.parsed.failed, async () => runs.shift() ?? suiteRun({}, 1));
    expect(flaky).toEqual(['test/a.test.js > a']);
  });

  it('an id listed as passed and failed in one rerun (two tests of one name) is not flaky', async () => {
    const flaky = await findFlaky(input, first, ['test/a.test.js > a'], async () =>
      suiteRun({ passed: ['test/a.test.js > a'], failed: ['test/a.test.js > a'] }, 1),
    );
    expect(flaky).toEqual([]);
  });
});
