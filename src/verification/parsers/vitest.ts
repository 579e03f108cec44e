import { hintNames, makeRun, readTally, relativeTestPath, sumOf, TEST_FILE } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// The default reporter lists every failure as " FAIL  <file> > <suite> > <test>" (a suite that failed to
// load as " FAIL  <file> [ <file> ]"); it names passing tests only inside failing files and without their
// suites, so `passed` is filled only from reporters that print whole paths (verbose: " ✓ <file> > … > <test>").

const HEADER = /^\s*RUN\s+v\d+\.\d+/;
const FAIL_LINE = /^\s*FAIL\s+(?:\|[^|]+\|\s+)?(.+?)\s*$/;
const TESTS_LINE = /^\s*Tests\s{2,}(.*)$/;
const FILES_LINE = /^\s*Test Files\s{2,}/;
const VERBOSE_LINE = /^\s*(✓|√|×|✗|↓)\s+(?:\|[^|]+\|\s+)?(\S+?) > (.+?)(?:\s+\d+(?:\.\d+)?\s*m?s)?(?:\s+\[[^\]]*\])?$/;

/** Parses vitest's default (and verbose) console reporter. */
export function parseVitestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const recognized = lines.some((l) => FILES_LINE.test(l) || /No test files found, exiting with code/.test(l));
  const header = lines.some((l) => HEADER.test(l));
  // told it is vitest's, a run cut short before its summary (the RUN header, file results) is vitest's too (issue 33)
  const cutShort =
    hintNames(hint, 'vitest') && (header || lines.some((l) => /^\s*(?:✓|❯|×)\s+\S+\.[cm]?[jt]sx?\b/.test(l)));
  if (!recognized && !(header && lines.some((l) => TESTS_LINE.test(l))) && !cutShort) return null;

  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  let counts: TestCounts | null = null;
  let noTests = false;
  for (const line of lines) {
    const fail = FAIL_LINE.exec(line);
    if (fail) {
      const id = toId(fail[1] ?? '', hint.workspace);
      if (id) failed.push(id);
      continue;
    }
    const verbose = VERBOSE_LINE.exec(line);
    if (verbose && TEST_FILE.test(verbose[2] ?? '')) {
      const id = `${relativeTestPath(verbose[2] ?? '', hint.workspace)} > ${verbose[3] ?? ''}`;
      const mark = verbose[1];
      if (mark === '✓' || mark === '√') passed.push(id);
      else if (mark === '↓') skipped.push(id);
      else failed.push(id);
      continue;
    }
    const tests = TESTS_LINE.exec(line);
    if (tests) {
      if (/no tests/i.test(tests[1] ?? '')) noTests = true;
      const tally = readTally(tests[1] ?? '');
      counts = {
        passed: sumOf(tally, 'passed'),
        failed: sumOf(tally, 'failed'),
        skipped: sumOf(tally, 'skipped', 'todo'),
      };
    }
  }
  const failedSuites = lines.some((l) => /Failed Suites \d+|Failed to load/.test(l));
  const executed = counts ? counts.passed + counts.failed : passed.length + failed.length;
  const collectionError = failedSuites && executed === 0;
  const noFiles = lines.some((l) => /No test files found/.test(l));
  // a partial list of passing tests would look like tests that disappeared
  const complete = counts === null || passed.length === counts.passed;
  return makeRun('vitest', {
    failed,
    passed: complete ? passed : [],
    skipped: complete ? skipped : [],
    counts,
    ranSignal: executed > 0,
    noTestsRan: !collectionError && (noFiles || noTests || (counts !== null && executed === 0)),
    collectionError,
    incomplete: counts !== null || noFiles || noTests ? null : "vitest printed no 'Tests' summary",
  });
}

/** "test/a.test.ts > suite > name" stays; "test/a.test.ts [ test/a.test.ts ]" (a suite error) is the file. */
function toId(text: string, workspace: string | null | undefined): string {
  const withoutTag = text.replace(/\s+\[[^\]]*\]$/, '').trim();
  const [file, ...names] = withoutTag.split(' > ');
  if (!file || !TEST_FILE.test(file)) return '';
  return [relativeTestPath(file, workspace), ...names].join(' > ');
}
