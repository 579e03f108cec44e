import { hintNames, makeRun } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// Python's unittest closes with "Ran 6 tests in 0.001s" and "OK" or "FAILED (failures=2, errors=1,
// skipped=1)"; each failure is a block headed "FAIL: test_x (pkg.mod.Class.test_x)". `-v` also prints
// "test_x (pkg.mod.Class.test_x) ... ok" for every test, a docstring's first line before " ... " when the
// test has one. Ids are the dotted names `python -m unittest` selects by ("pkg.mod.Class.test_x"); Python
// before 3.11 prints only the class in the parentheses. A subtest's failure is its test's. A module that
// does not import is a test named after the module (unittest.loader._FailedTest).

const RAN = /^Ran (\d+) tests? in [\d.]+s$/;
const VERDICT = /^(OK|FAILED)(?: \((.*)\))?$/;
const NO_TESTS = /^NO TESTS RAN$/;
const BLOCK = /^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([\w.]+)\)/;
const VERBOSE = /^( *)(\S+) \(([\w.]+)\)(?: \(.*?\))?(?: \.\.\. ?(.*))?$/;
const DESCRIBED = / \.\.\. ?(.*)$/;
const STATUS = /^(ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)\b/;
const LOADER = 'unittest.loader._FailedTest';
const CLASS_FIXTURES = new Set(['setUpClass', 'tearDownClass', 'setUpModule', 'tearDownModule']);

/** Parses the output of `python -m unittest` (plain and `-v`). */
export function parseUnittestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const ranLine = lines.findLastIndex((l) => RAN.test(l));
  // told it is unittest's, verbose results cut short before "Ran N tests" are unittest's too (issue 33)
  const cutShort =
    ranLine < 0 && hintNames(hint, 'unittest') && lines.some((l) => / \.\.\. ?(?:ok|FAIL|ERROR|skipped)\b/.test(l));
  if (ranLine < 0 && !cutShort) return null;
  const ranAt = ranLine < 0 ? lines.length : ranLine;
  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  const loaderFailures = new Set<string>();
  const record = (id: string, status: string) => {
    if (status === 'ok') passed.push(id);
    else if (status.startsWith('skipped') || status === 'expected failure') skipped.push(id);
    else failed.push(id);
  };
  // a verbose line whose status comes later: after a docstring line, the test's own output, or subtests
  let pending: string | null = null;
  for (const [i, line] of lines.slice(0, ranAt).entries()) {
    const block = BLOCK.exec(line);
    if (block) {
      pending = null;
      const id = idOf(block[2] ?? '', block[3] ?? '');
      if ((block[3] ?? '').startsWith(LOADER)) loaderFailures.add(id);
      failed.push(id);
      continue;
    }
    const verbose = VERBOSE.exec(line);
    // without " ... " the line is a test only when its docstring line follows
    if (verbose && (verbose[4] !== undefined || DESCRIBED.test(lines[i + 1] ?? ''))) {
      const id = idOf(verbose[2] ?? '', verbose[3] ?? '');
      const status = STATUS.exec(verbose[4] ?? '')?.[1];
      if ((verbose[3] ?? '').startsWith(LOADER)) loaderFailures.add(id);
      pending = status ? null : id;
      // an indented line is a subtest: its failure fails its test, its "ok" says nothing about it
      const isSubtest = (verbose[1] ?? '').length > 0;
      if (status && !(isSubtest && status === 'ok')) record(id, status);
      continue;
    }
    if (pending === null) continue;
    const status = STATUS.exec(DESCRIBED.exec(line)?.[1] ?? line)?.[1];
    if (status) {
      record(pending, status);
      pending = null;
    }
  }
  const tail = lines.slice(ranAt);
  const total = Number(RAN.exec(lines[ranAt] ?? '')?.[1] ?? 0);
  const verdict = tail.map((l) => VERDICT.exec(l)).find((m) => m !== null);
  const tally = new Map<string, number>();
  for (const m of (verdict?.[2] ?? '').matchAll(/([a-z ]+)=(\d+)/g)) tally.set((m[1] ?? '').trim(), Number(m[2]));
  const get = (key: string) => tally.get(key) ?? 0;
  const failedIds = new Set(failed);
  const failedCount =
    failedIds.size > 0 ? failedIds.size : get('failures') + get('errors') + get('unexpected successes');
  const skippedCount = get('skipped') + get('expected failures');
  const counts: TestCounts = {
    passed: Math.max(0, total - failedCount - skippedCount),
    failed: failedCount,
    skipped: skippedCount,
  };
  const executed = total - skippedCount - loaderFailures.size;
  const collectionError = loaderFailures.size > 0 && executed <= 0;
  if (cutShort) {
    return makeRun('unittest', {
      failed,
      passed,
      skipped,
      ranSignal: passed.length + failed.length > 0,
      incomplete: "unittest printed no 'Ran N tests' line",
    });
  }
  return makeRun('unittest', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: executed > 0,
    noTestsRan: total === 0 || tail.some((l) => NO_TESTS.test(l)),
    collectionError,
  });
}

/** "test_x" + "pkg.mod.Class.test_x" (3.11+) or "pkg.mod.Class" (older) → "pkg.mod.Class.test_x". */
function idOf(name: string, where: string): string {
  if (where.startsWith(LOADER)) return name;
  if (CLASS_FIXTURES.has(name)) return where;
  return where === name || where.endsWith(`.${name}`) ? where : `${where}.${name}`;
}
