import { makeRun } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// AVA's default reporter prints one line per test: "✔ title", "✘ [fail]: title message", "- [skip] title".
// With more than one test file the title is prefixed with the file ("math › add adds": the path under the
// test directory, extension and ".test" cut); ids keep that prefix, with " > " for " › ". A failed line
// runs the title and the assertion message together: the failure's own header below the "─" line gives
// the title alone. It prints no passed count next to failures, so counts are counted from the lines.

const PASS = /^\s*(?:✔|√)(?: \[expected fail\])? (.+?)(?: \((?:\d+m )?\d[\d.]*m?s\))?$/;
const FAIL = /^\s*(?:✘|×) \[(?:fail|unexpected pass)\]: (.+)$/;
const SKIP = /^\s*- \[(?:skip|todo)\] (.+)$/;
const PENDING = /^\s*◌ (.+)$/;
const FILE_FAILURE = [
  /^\s*(?:Uncaught exception|Unhandled rejection) in (\S+)$/,
  /^\s*(?:✘|×) (\S+) exited (?:with a non-zero exit code|due to)\b/,
  /^\s*(?:✘|×) No tests found in (\S+?),/,
];
const SUMMARY =
  /^\s*\d+ (?:tests? (?:passed|failed|skipped|todo)|known failures?|uncaught exceptions?|unhandled rejections?|hooks? failed)$/;
const NOTHING = /^\s*(?:✘|×) Couldn[’']t find any (?:files to test|matching tests)/;
const SEPARATOR = /^\s*─$/;

/** Parses AVA's default reporter. */
export function parseAvaOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  void hint;
  const nothing = lines.some((l) => NOTHING.test(l));
  const recognized =
    nothing ||
    lines.some((l) => SUMMARY.test(l) || FAIL.test(l) || SKIP.test(l) || FILE_FAILURE.some((re) => re.test(l)));
  if (!recognized) return null;
  const passed: string[] = [];
  const failedLines: string[] = [];
  const skipped: string[] = [];
  const pending: string[] = [];
  const files: string[] = [];
  const firstSeparator = lines.findIndex((l) => SEPARATOR.test(l));
  for (const [i, line] of lines.entries()) {
    // below the first "─" come the failures' details: excerpts and stacks, not results
    if (firstSeparator >= 0 && i > firstSeparator) break;
    const fileFailure = FILE_FAILURE.map((re) => re.exec(line)?.[1]).find((f) => f !== undefined);
    if (fileFailure) {
      files.push(fileFailure);
      continue;
    }
    const fail = FAIL.exec(line);
    if (fail) {
      failedLines.push(fail[1] ?? '');
      continue;
    }
    const skip = SKIP.exec(line);
    if (skip) {
      skipped.push(toId(skip[1] ?? ''));
      continue;
    }
    const pend = PENDING.exec(line);
    if (pend) {
      pending.push(toId(pend[1] ?? ''));
      continue;
    }
    const pass = PASS.exec(line);
    if (pass && !/^Timed out while running tests/.test(pass[1] ?? '')) passed.push(toId(pass[1] ?? ''));
  }
  const headers =
    firstSeparator < 0
      ? []
      : lines
          .slice(firstSeparator + 1)
          .map((l) => l.trim())
          .filter(Boolean);
  const failedTests = failedLines.map((text) => toId(titleOf(text, headers)));
  // a test still pending when AVA timed out did not pass
  const failed = [...failedTests, ...pending, ...files];
  const uniqueFiles = new Set(files).size;
  const executed = passed.length + failedTests.length + pending.length;
  const counts: TestCounts | null = nothing
    ? null
    : { passed: passed.length, failed: failedTests.length + pending.length + uniqueFiles, skipped: skipped.length };
  const collectionError = uniqueFiles > 0 && executed === 0;
  return makeRun('ava', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: executed > 0,
    noTestsRan: !collectionError && executed === 0 && failed.length === 0,
    collectionError,
  });
}

/** The longest failure header that starts the "✘ [fail]:" text: what follows it is the assertion message. */
function titleOf(text: string, headers: string[]): string {
  let best = '';
  for (const header of headers) {
    if (header.length > best.length && (text === header || text.startsWith(`${header} `))) best = header;
  }
  return best || text;
}

function toId(title: string): string {
  return title.trim().split(' › ').join(' > ');
}
