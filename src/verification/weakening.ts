import type { ParsedRun } from './parsers/types.js';

/**
 * Tests that ran (passed or failed) on the baseline and are gone or skipped after the work: the
 * suite asks less than before. Only meaningful when both runs were parsed with listed ids.
 */
export function findWeakenedTests(baseline: ParsedRun, after: ParsedRun): string[] {
  // by id only when both runs name every test that ran: a reporter that names only the failing ones
  // (jest without --verbose) would make every test that passed look gone
  if (!namesEveryTest(baseline) || !namesEveryTest(after)) return countDrop(baseline, after);
  const before = [...baseline.passed, ...baseline.failed];
  const ranAfter = new Set([...after.passed, ...after.failed]);
  const skippedAfter = new Set(after.skipped);
  return before.filter((id) => !ranAfter.has(id) || skippedAfter.has(id));
}

/**
 * The run names each test that ran: its summary's counts are no more than the ids it listed; with no
 * summary, only when it names passing tests at all (plain `go test` names only the failing ones).
 */
function namesEveryTest(run: ParsedRun): boolean {
  const c = run.counts;
  if (c === null) return run.passed.length > 0;
  return (
    run.passed.length + run.failed.length + run.skipped.length > 0 &&
    run.passed.length >= c.passed &&
    run.failed.length >= c.failed
  );
}

/** Without listed ids, a fall in the number of tests that ran is the only sign. */
function countDrop(baseline: ParsedRun, after: ParsedRun): string[] {
  if (!baseline.counts || !after.counts) return [];
  const ranBefore = baseline.counts.passed + baseline.counts.failed;
  const ranAfter = after.counts.passed + after.counts.failed;
  return ranAfter < ranBefore ? [`${ranBefore - ranAfter} fewer test(s) ran than before the work`] : [];
}
