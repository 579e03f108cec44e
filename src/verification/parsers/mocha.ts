import { hintNames, makeRun } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// The spec reporter prints a tree: suites as plain lines, tests as "✔ title", "N) title" (failing) or
// "- title" (pending), two more spaces per level. It does not name files: ids are "suite > test".

const PASSING = /^\s*(\d+) passing\b/;
const FAILING = /^\s*(\d+) failing\s*$/;
const PENDING = /^\s*(\d+) pending\s*$/;
const TEST = /^(\s+)(?:(✔|✓|√)|(\d+)\)|(-)) (.+?)(?: \(\d+\s*m?s\))?$/;

/** Parses mocha's spec reporter. */
export function parseMochaOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const noFiles = lines.some((l) => /^(?:Error|Warning): No test files found/.test(l));
  const exception = lines.some((l) => /^\s*Exception during run:/.test(l));
  const summaryAt = lines.findIndex((l) => PASSING.test(l));
  // told it is mocha's, a tree cut short before its summary is mocha's too (issue 33)
  const cutShort = summaryAt < 0 && hintNames(hint, 'mocha') && lines.some((l) => TEST.test(l));
  if (summaryAt < 0 && !noFiles && !exception && !cutShort) return null;

  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  let suites: { indent: number; name: string }[] = [];
  const treeEnd = summaryAt >= 0 ? summaryAt : cutShort ? lines.length : 0;
  for (const line of lines.slice(0, treeEnd)) {
    if (line.trim() === '') continue;
    const indent = /^\s*/.exec(line)?.[0].length ?? 0;
    // console output of the tests starts at column 0: it is not part of the tree
    if (indent < 2) continue;
    suites = suites.filter((s) => s.indent < indent);
    const test = TEST.exec(line);
    if (!test) {
      suites.push({ indent, name: line.trim() });
      continue;
    }
    const id = [...suites.map((s) => s.name), test[5] ?? ''].join(' > ');
    if (test[2]) passed.push(id);
    else if (test[3]) failed.push(id);
    else skipped.push(id);
  }
  let counts: TestCounts | null = null;
  if (summaryAt >= 0) {
    const count = (re: RegExp) =>
      Number(
        lines
          .slice(summaryAt)
          .map((l) => re.exec(l)?.[1])
          .find((n) => n !== undefined) ?? 0,
      );
    counts = { passed: count(PASSING), failed: count(FAILING), skipped: count(PENDING) };
  }
  const executed = counts ? counts.passed + counts.failed : 0;
  const collectionError = exception && executed === 0;
  return makeRun('mocha', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: executed > 0,
    noTestsRan: !collectionError && (noFiles || (counts !== null && executed === 0)),
    collectionError,
    incomplete:
      summaryAt >= 0 || noFiles
        ? null
        : exception
          ? "mocha stopped with 'Exception during run'"
          : "mocha printed no 'N passing' summary",
  });
}
