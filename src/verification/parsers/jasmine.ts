import { makeRun } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// Jasmine's console reporter prints a dot per spec, then the numbered "Failures:" and "Pending:" lists and
// "6 specs, 2 failures, 1 pending spec". Ids are a spec's full name as Jasmine prints and `--filter` matches
// it: the suite names and the spec's, joined by spaces. Passing specs are never named, with one exception
// that is sound: a run filtered to one exact full name (`--filter='^name$'`, as a flaky rerun selects it)
// that ran one spec and no failure passed that very spec.

const SUMMARY = /^(\d+) specs?, (\d+) failures?(?:, (\d+) pending specs?)?$/;
const ENTRY = /^\d+\) (.+)$/;
const SUITE_ERROR = /^Suite error: (.+)$/;
const NO_SPECS = /^(?:No specs found|Incomplete: No specs found)$/;

/** Parses Jasmine's default console reporter. */
export function parseJasmineOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const noSpecs = lines.some((l) => NO_SPECS.test(l));
  const summaryLine = lines.map((l) => SUMMARY.exec(l)).findLast((m) => m !== null);
  if (!summaryLine && !noSpecs) return null;
  const failed: string[] = [];
  const skipped: string[] = [];
  let section: 'failures' | 'pending' | null = null;
  let suiteErrors = 0;
  for (const line of lines) {
    if (line === 'Failures:') section = 'failures';
    else if (line === 'Pending:') section = 'pending';
    const suiteError = SUITE_ERROR.exec(line);
    if (suiteError) {
      failed.push(suiteError[1] ?? '');
      suiteErrors++;
      continue;
    }
    const entry = ENTRY.exec(line);
    if (!entry || section === null) continue;
    (section === 'failures' ? failed : skipped).push(entry[1] ?? '');
  }
  let counts: TestCounts | null = null;
  if (summaryLine) {
    const specs = Number(summaryLine[1]);
    const failures = Number(summaryLine[2]);
    const pending = Number(summaryLine[3] ?? 0);
    // "N failures" counts suite errors too; the specs it counts did run
    const specFailures = Math.max(0, failures - suiteErrors);
    counts = { passed: Math.max(0, specs - specFailures - pending), failed: failures, skipped: pending };
  }
  const executed = counts ? counts.passed + counts.failed : 0;
  const only = exactFilterName(hint.command);
  const passed = only !== null && counts?.passed === 1 && counts.failed === 0 && counts.skipped === 0 ? [only] : [];
  return makeRun('jasmine', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: executed > 0,
    noTestsRan: executed === 0 && failed.length === 0,
    collectionError: false,
  });
}

/** The one full name a `--filter='^…$'` of escaped text selects; null for any other filter, or none. */
function exactFilterName(command: string | null | undefined): string | null {
  const m = /(?:^|\s)'?--filter=(?:'?)\^((?:[^\\'$.*+?^(){}|[\]]|\\[.*+?^${}()|[\]\\/])*)\$'?(?=\s|$)/.exec(
    command ?? '',
  );
  return m ? (m[1] ?? '').replace(/\\(.)/g, '$1') : null;
}
