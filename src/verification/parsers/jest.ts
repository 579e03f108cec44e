import { hintNames, makeRun, readTally, relativeTestPath, sumOf } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// Jest prints "FAIL <file>" then one "● suite › test" block per failure; with one test file (or --verbose)
// it also prints the tree of every test, which fills `passed` and `skipped`.

const FILE_HEADER = /^\s*(PASS|FAIL)\s+(?:\S+\s+)??(\S+?\.[cm]?[jt]sx?)(?:\s+\(\d[\d.]*\s*m?s\))?\s*$/;
const FAILURE = /^\s{2}● (.+)$/;
const TREE_TEST = /^(\s+)(✓|√|✕|×|○|✎)\s+(?:(skipped|todo)\s+)?(.+?)(?:\s+\(\d[\d.]*\s*m?s\))?$/;
const TESTS_LINE = /^Tests:\s+(.*)$/;
const NOT_TESTS = new Set(['Console', 'Test suite failed to run']);

/** Parses jest's default console reporter (and its verbose tree). */
export function parseJestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const recognized = lines.some((l) => /^Test Suites:\s/.test(l) || /^No tests found, exiting with code/.test(l));
  // told it is jest's, file results cut short before the summary are jest's too (issue 33)
  if (!recognized && !(hintNames(hint, 'jest') && lines.some((l) => FILE_HEADER.test(l)))) return null;
  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  let counts: TestCounts | null = null;
  let suiteFailedToRun = false;
  let file = '';
  // the tree follows its file header until the first blank line
  let inTree = false;
  let suites: { indent: number; name: string }[] = [];
  for (const line of lines) {
    const header = FILE_HEADER.exec(line);
    if (header) {
      file = relativeTestPath(header[2] ?? '', hint.workspace);
      inTree = true;
      suites = [];
      continue;
    }
    const failure = FAILURE.exec(line);
    if (failure) {
      inTree = false;
      const title = (failure[1] ?? '').trim();
      if (title === 'Test suite failed to run') {
        suiteFailedToRun = true;
        if (file) failed.push(file);
      } else if (!NOT_TESTS.has(title) && file) failed.push([file, ...title.split(' › ')].join(' > '));
      continue;
    }
    const tests = TESTS_LINE.exec(line);
    if (tests) {
      const tally = readTally(tests[1] ?? '');
      counts = {
        passed: sumOf(tally, 'passed'),
        failed: sumOf(tally, 'failed'),
        skipped: sumOf(tally, 'skipped', 'todo'),
      };
      continue;
    }
    if (!inTree) continue;
    if (line.trim() === '') {
      inTree = false;
      continue;
    }
    const indent = /^\s*/.exec(line)?.[0].length ?? 0;
    suites = suites.filter((s) => s.indent < indent);
    const test = TREE_TEST.exec(line);
    if (!test) {
      suites.push({ indent, name: line.trim() });
      continue;
    }
    const id = [file, ...suites.map((s) => s.name), test[4] ?? ''].join(' > ');
    const mark = test[2];
    if (mark === '✓' || mark === '√') passed.push(id);
    else if (mark === '✕' || mark === '×') failed.push(id);
    else skipped.push(id);
  }
  const executed = counts ? counts.passed + counts.failed : 0;
  const collectionError = suiteFailedToRun && executed === 0;
  const noTests = lines.some((l) => /^No tests found/.test(l));
  // the tree lists every test only when each file printed one; a partial list would look like lost tests
  const complete = counts !== null && passed.length === counts.passed;
  return makeRun('jest', {
    failed,
    passed: complete ? passed : [],
    skipped: complete ? skipped : [],
    counts,
    ranSignal: executed > 0,
    noTestsRan: !collectionError && (noTests || (counts !== null && executed === 0)),
    collectionError,
    incomplete: counts !== null || noTests ? null : "jest printed no 'Tests:' summary",
  });
}
