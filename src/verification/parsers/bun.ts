import { makeRun, relativeTestPath, TEST_FILE } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// `bun test` prints "<file>:" and under it "(pass) suite > test [0.12ms]", "(fail) …", "(skip) …", "(todo) …";
// an error outside any test is "# Unhandled error between tests" under its file. A long run repeats the
// failures after the totals ("2 tests failed:") without their files: that recap is not read. Ids are
// "<file> > suite > test".

const HEADER = /^bun test v\d+\.\d+/;
const FILE = /^(\S.*?):$/;
const RESULT = /^\((pass|fail|skip|todo)\) (.+?)(?: \[[\d.]+m?s\])?$/;
const TOTAL = /^ (\d+) (pass|fail|skip|todo|error)s?$/;
const RAN = /^Ran (\d+) tests? across (\d+) files?\./;
const RECAP = /^\d+ tests? (?:failed|skipped|todo):$/;
const UNHANDLED = /^# Unhandled error between tests$/;

/** Parses `bun test` output. */
export function parseBunOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const noTests = lines.some((l) => /^No tests found!$/.test(l));
  if (!lines.some((l) => HEADER.test(l)) && !lines.some((l) => RAN.test(l)) && !noTests) return null;
  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  const totals = new Map<string, number>();
  let file = '';
  let inRecap = false;
  let fileErrors = 0;
  let tests = 0;
  for (const line of lines) {
    if (RECAP.test(line)) {
      inRecap = true;
      continue;
    }
    if (inRecap) {
      if (line.trim() === '') inRecap = false;
      continue;
    }
    const total = TOTAL.exec(line);
    if (total) {
      totals.set(total[2] ?? '', Number(total[1]));
      continue;
    }
    const header = FILE.exec(line);
    if (header && TEST_FILE.test(header[1] ?? '')) {
      file = relativeTestPath(header[1] ?? '', hint.workspace);
      continue;
    }
    if (UNHANDLED.test(line)) {
      if (file) failed.push(file);
      fileErrors++;
      continue;
    }
    const result = RESULT.exec(line);
    if (!result) continue;
    const id = [file, result[2] ?? ''].filter(Boolean).join(' > ');
    const outcome = result[1];
    if (outcome === 'pass' || outcome === 'fail') tests++;
    if (outcome === 'pass') passed.push(id);
    else if (outcome === 'fail') failed.push(id);
    else skipped.push(id);
  }
  const get = (key: string) => totals.get(key) ?? 0;
  const counts: TestCounts | null =
    totals.size > 0 ? { passed: get('pass'), failed: get('fail'), skipped: get('skip') + get('todo') } : null;
  const collectionError = fileErrors > 0 && tests === 0;
  const executed = counts ? counts.passed + counts.failed - (collectionError ? fileErrors : 0) : tests;
  return makeRun('bun', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: !collectionError && executed > 0,
    // only the totals or "No tests found!" say so: output cut short (a crash) is not that
    noTestsRan: !collectionError && executed === 0 && failed.length === 0 && (noTests || totals.size > 0),
    collectionError,
  });
}
