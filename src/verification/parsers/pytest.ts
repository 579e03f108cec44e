import { hintNames, makeRun, readTally, sumOf } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// `-rA` lists every outcome in the short summary ("PASSED tests/test_a.py::test_x"); `-v` prints
// "tests/test_a.py::test_x PASSED [ 50%]". Skips are listed by location ("SKIPPED [1] tests/test_a.py:12: why").

const SHORT = /^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED) (.+)$/;
const VERBOSE = /^(\S+::\S.*?) (PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED)(?: \(.*\))?(?:\s+\[\s*\d+%\])?\s*$/;
const SUMMARY = /^=*\s*((?:\d+ [a-z]+(?:, )?)+)(?: in [\d.]+s(?: \([^)]*\))?)?\s*=*$/;
const NO_TESTS = /^=*\s*no tests ran(?: in [\d.]+s)?\s*=*$/;
// `-q` prints only its progress: "..F.s  [ 50%]"
const PROGRESS = /^[.FEsxX]+\s*(?:\[\s*\d+%\])?$/;
const SUMMARY_WORDS = /\b(?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)\b/;

/** Parses pytest's console output (`-q -rA` as gaffer runs it, and `-v`). */
export function parsePytestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const summaryLine = findLast(
    lines,
    (l) => (SUMMARY.test(l) && SUMMARY_WORDS.test(l) && / in [\d.]+s/.test(l)) || NO_TESTS.test(l),
  );
  const collecting = lines.some((l) => /ERROR collecting|errors? during collection/.test(l));
  // told it is pytest's, a session cut short before its summary is pytest's too (issue 33)
  const cutShort =
    hintNames(hint, 'pytest') &&
    lines.some((l) => /^=+ test session starts =+$/.test(l) || PROGRESS.test(l) || VERBOSE.test(l));
  if (summaryLine === undefined && !collecting && !cutShort && !lines.some((l) => /short test summary info/.test(l)))
    return null;

  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  for (const line of lines) {
    const short = SHORT.exec(line);
    const verbose = short ? null : VERBOSE.exec(line);
    const outcome = short?.[1] ?? verbose?.[2];
    const rest = short?.[2] ?? verbose?.[1];
    if (!outcome || rest === undefined) continue;
    if (outcome === 'SKIPPED') {
      // "[2] tests/test_a.py:12: reason": the location is all pytest gives
      const where = /^(?:\[\d+\] )?(\S+?:\d+)(?::|$)/.exec(rest)?.[1] ?? nodeId(rest);
      if (where) skipped.push(where);
      continue;
    }
    const id = nodeId(rest);
    if (!id) continue;
    if (outcome === 'PASSED' || outcome === 'XPASS') passed.push(id);
    else if (outcome === 'XFAIL') skipped.push(id);
    else failed.push(id);
  }

  let counts: TestCounts | null = null;
  let errors = 0;
  if (summaryLine !== undefined && !NO_TESTS.test(summaryLine)) {
    const tally = readTally(summaryLine);
    errors = sumOf(tally, 'error', 'errors');
    counts = {
      passed: sumOf(tally, 'passed', 'xpassed'),
      failed: sumOf(tally, 'failed') + errors,
      skipped: sumOf(tally, 'skipped', 'xfailed'),
    };
  } else if (summaryLine !== undefined) {
    counts = { passed: 0, failed: 0, skipped: 0 };
  }
  const interrupted = lines.some((l) => /Interrupted: \d+ errors? during collection/.test(l));
  const ranTests = counts ? counts.passed + counts.failed - errors : passed.length + failed.length;
  const collectionError = collecting && (interrupted || ranTests === 0);
  return makeRun('pytest', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: !collectionError && counts !== null && counts.passed + counts.failed > 0,
    noTestsRan: !collectionError && counts !== null && counts.passed + counts.failed === 0,
    collectionError,
    incomplete: summaryLine === undefined ? 'pytest printed no final summary line' : null,
  });
}

/** The node id at the start of a summary entry: "tests/a.py::test_x[a - b] - AssertionError" → "tests/a.py::test_x[a - b]". */
function nodeId(text: string): string {
  const bracket = text.indexOf('[');
  const dash = text.indexOf(' - ');
  if (bracket >= 0 && (dash < 0 || bracket < dash)) {
    // parametrize ids may hold " - " and spaces: the id runs to the "]" before " - " or the end
    const end = text.search(/\](?= - |\s*$)/);
    if (end >= 0) return text.slice(0, end + 1);
  }
  return (dash >= 0 ? text.slice(0, dash) : text).trim().split(/\s/)[0] ?? '';
}

function findLast(lines: string[], test: (line: string) => boolean): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i];
    if (line !== undefined && test(line)) return line;
  }
  return undefined;
}
