import type { ParsedRun } from './parsers/types.js';

/**
 * Tests that ran (passed or failed) on the baseline and are gone or skipped after the work: the
 * suite asks less than before. Only meaningful when both runs were parsed with listed ids.
 */
export function findWeakenedTests(baseline: ParsedRun, after: ParsedRun): string[] {
  const before = [...baseline.passed, ...baseline.failed];
  if (before.length === 0) return countDrop(baseline, after);
  const ranAfter = new Set([...after.passed, ...after.failed]);
  const skippedAfter = new Set(after.skipped);
  if (ranAfter.size === 0 && skippedAfter.size === 0) return countDrop(baseline, after);
  return before.filter((id) => !ranAfter.has(id) || skippedAfter.has(id));
}

/** Without listed ids, a fall in the number of tests that ran is the only sign. */
function countDrop(baseline: ParsedRun, after: ParsedRun): string[] {
  if (!baseline.counts || !after.counts) return [];
  const ranBefore = baseline.counts.passed + baseline.counts.failed;
  const ranAfter = after.counts.passed + after.counts.failed;
  return ranAfter < ranBefore ? [`${ranBefore - ranAfter} fewer test(s) ran than before the work`] : [];
}
