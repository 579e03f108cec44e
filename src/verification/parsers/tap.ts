import { makeRun, relativeTestPath, TEST_FILE } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// TAP 13/14 as node-tap (`tap` on npm) and most TAP producers print it: a subtest is an indented block
// (4 spaces a level, usually headed by "# Subtest: name") closed by its own "ok N - name" line one level
// up; YAML diagnostics sit between "---" and "..." under a result. A result line with neither a header,
// a block nor a directive inside a test is an assertion of that test, not a test: node-tap prints
// "ok 1 - should be equal" for each assertion. At the top level every result is a test. Ids are the
// test names from the top down, joined by " > "; the `tap` runner's top level is the test file.

const VERSION = /^TAP version (13|14)$/;
const SUBTEST = /^( *)# Subtest(?:: (.*))?$/;
const RESULT = /^( *)(not ok|ok)\b(?: +(\d+))?(?: +-)?(?: +(.*?))?\s*$/;
const PLAN = /^( *)1\.\.(\d+)(?:\s*#\s*(.*))?$/;
const BAIL = /^( *)Bail out!(.*)$/;
const YAML_START = /^( *)---$/;
// node-tap closes the run with "# { total: 6, pass: 3, fail: 2, skip: 1 }"
const TAP_TOTALS = /^# \{ (total: \d+.*)\}$/;
const NO_FILES = /^No test files found$/;

interface Frame {
  name: string;
  headed: boolean;
  /** Result, plan or subtest lines one level down. */
  hasBlock: boolean;
  hasChildTests: boolean;
  childFailed: boolean;
  assertionFailed: boolean;
  parent: Frame | null;
}

interface TapRecord {
  frame: Frame;
  outcome: 'pass' | 'fail' | 'skip';
  /** A test with child tests: its own failure only is an id. */
  isSuite: boolean;
  ownFailure: boolean;
}

/** One TAP stream read into test results (ids resolved once every name is known). */
export interface TapReading {
  failed: string[];
  passed: string[];
  skipped: string[];
  /** Leaf tests that ran (passed or failed). */
  executed: number;
  /** Top-level entries named by a file path that failed without a test of their own: the file did not load. */
  fileFailures: number;
  bailedOut: boolean;
  /** node-tap's closing totals, when printed. */
  totals: Map<string, number> | null;
  /** Any TAP at all: a version line, a plan or a result. */
  sawTap: boolean;
  /** The top level's plan ("1..N") and results both arrived: the stream was not cut short. */
  complete: boolean;
  /** The top level's plan ("1..N"): how many results it announced; null when none was printed. */
  plan: number | null;
  /** Result lines at the top level. */
  topResults: number;
}

/** Reads a TAP 13/14 stream: nested subtests, YAML blocks, SKIP/TODO directives, plans, "Bail out!". */
export function readTap(lines: string[], workspace?: string | null): TapReading {
  const records: TapRecord[] = [];
  const open: (Frame | undefined)[] = [];
  let bailedOut = false;
  let totals: Map<string, number> | null = null;
  let sawTap = false;
  let topPlan: number | null = null;
  let topResults = 0;

  // the frame of the test at `depth` that is still running; made on first sight (an unheaded subtest)
  const frameAt = (depth: number): Frame => {
    const existing = open[depth];
    if (existing) return existing;
    const parent = depth > 0 ? frameAt(depth - 1) : null;
    const frame: Frame = {
      name: '',
      headed: false,
      hasBlock: false,
      hasChildTests: false,
      childFailed: false,
      assertionFailed: false,
      parent,
    };
    open[depth] = frame;
    return frame;
  };
  const markBlock = (depth: number) => {
    if (depth > 0) frameAt(depth - 1).hasBlock = true;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (VERSION.test(line)) {
      sawTap = true;
      continue;
    }
    const totalsLine = TAP_TOTALS.exec(line);
    if (totalsLine) {
      totals = new Map([...(totalsLine[1] ?? '').matchAll(/(\w+): (\d+)/g)].map((m) => [m[1] ?? '', Number(m[2])]));
      continue;
    }
    const sub = SUBTEST.exec(line);
    if (sub) {
      const depth = depthOf(sub[1] ?? '');
      open.length = depth;
      const frame = frameAt(depth);
      frame.name = unescapeTap(sub[2] ?? '');
      frame.headed = true;
      markBlock(depth);
      continue;
    }
    const bail = BAIL.exec(line);
    if (bail) {
      bailedOut = true;
      sawTap = true;
      continue;
    }
    const plan = PLAN.exec(line);
    if (plan) {
      sawTap = true;
      const depth = depthOf(plan[1] ?? '');
      if (depth === 0) topPlan = Number(plan[2]);
      markBlock(depth);
      continue;
    }
    const result = RESULT.exec(line);
    if (!result) continue;
    sawTap = true;
    const depth = depthOf(result[1] ?? '');
    if (depth === 0) topResults++;
    // the YAML block under a result may hold anything, "ok" lines included
    const yaml = YAML_START.exec(lines[i + 1] ?? '');
    if (yaml && (yaml[1] ?? '').length >= (result[1] ?? '').length) {
      const end = `${yaml[1] ?? ''}...`;
      for (i += 2; i < lines.length && lines[i]?.trimEnd() !== end; i++);
    }
    const { name, directive } = splitDirective(result[4] ?? '');
    const frame = open[depth];
    const failed = result[2] === 'not ok' && directive !== 'TODO';
    const isTest = depth === 0 || directive !== null || frame?.headed === true || frame?.hasBlock === true;
    markBlock(depth);
    if (!isTest) {
      // an assertion of the test one level up
      if (failed) frameAt(depth - 1).assertionFailed = true;
      open.length = depth;
      continue;
    }
    const own = frameAt(depth);
    if (name) own.name = name;
    const parent = own.parent;
    if (parent) parent.hasChildTests = true;
    if (parent && failed) parent.childFailed = true;
    const outcome = directive ? 'skip' : failed ? 'fail' : 'pass';
    records.push({
      frame: own,
      outcome,
      isSuite: own.hasChildTests,
      ownFailure: own.assertionFailed || !own.childFailed,
    });
    open.length = depth;
  }

  const complete = topPlan !== null && topResults >= topPlan;
  const reading: TapReading = {
    failed: [],
    passed: [],
    skipped: [],
    executed: 0,
    fileFailures: 0,
    bailedOut,
    totals,
    sawTap,
    complete,
    plan: topPlan,
    topResults,
  };
  for (const record of records) {
    const path: string[] = [];
    for (let f: Frame | null = record.frame; f; f = f.parent) path.unshift(f.name);
    const [top = '', ...rest] = path;
    const topIsFile = TEST_FILE.test(top) && top.includes('/');
    const id = [topIsFile ? relativeTestPath(top, workspace) : top, ...rest].join(' > ');
    if (record.isSuite) {
      // a suite passes or fails through its tests; only its own failure (an assertion, a crash) is an id
      if (record.outcome === 'fail' && record.ownFailure) reading.failed.push(id);
      continue;
    }
    if (record.outcome === 'skip') {
      reading.skipped.push(id);
      continue;
    }
    if (path.length === 1 && topIsFile && record.outcome === 'fail') reading.fileFailures++;
    else reading.executed++;
    (record.outcome === 'fail' ? reading.failed : reading.passed).push(id);
  }
  return reading;
}

/** node:test's TAP: every result's YAML block carries its `duration_ms`, and so does the closing summary. */
export function isNodeTestTap(lines: string[]): boolean {
  return lines.some((l) => /^\s*duration_ms: /.test(l) || /^# duration_ms /.test(l));
}

/**
 * tape's dialect of TAP 13: tests are "# name" comments over flat assertion lines ("ok 3 should be equal",
 * no dash), closed by "# tests 5", "# pass  3" (two spaces). node:test and node-tap print "# Subtest:".
 */
export function isTapeOutput(lines: string[]): boolean {
  if (!lines.some((l) => l === 'TAP version 13') || lines.some((l) => SUBTEST.test(l)) || isNodeTestTap(lines))
    return false;
  if (lines.some((l) => /^# (?:pass|fail) {2}\d+$/.test(l))) return true;
  const results = lines.filter((l) => /^(?:not )?ok \d+\b/.test(l));
  return results.length > 0 && results.every((l) => !/^(?:not )?ok \d+ - /.test(l));
}

/** Parses node-tap's TAP (what `tap` prints with CI set) and TAP 13/14 from other producers. */
export function parseTapOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const noFiles = lines.some((l) => NO_FILES.test(l));
  const hasTap =
    lines.some((l) => VERSION.test(l)) ||
    (lines.some((l) => PLAN.test(l)) && lines.some((l) => /^(?:not )?ok\b/.test(l)));
  if (!hasTap && !noFiles) return null;
  if (hasTap && (isNodeTestTap(lines) || isTapeOutput(lines))) return null;
  const tap = readTap(lines, hint.workspace);
  let counts: TestCounts | null = null;
  if (tap.totals) {
    const get = (key: string) => tap.totals?.get(key) ?? 0;
    counts = { passed: get('pass'), failed: get('fail'), skipped: get('skip') + get('todo') };
  } else if (tap.sawTap) {
    counts = { passed: tap.passed.length, failed: tap.failed.length, skipped: tap.skipped.length };
  }
  // a file that did not load is a failure of the file; a bail-out before any test stopped the suite
  const collectionError = tap.executed === 0 && (tap.fileFailures > 0 || tap.bailedOut);
  const executed = Math.max(tap.executed, counts ? counts.passed + counts.failed - tap.fileFailures : 0);
  return makeRun('tap', {
    failed: tap.failed,
    passed: tap.passed,
    skipped: tap.skipped,
    counts,
    ranSignal: executed > 0,
    // only a run that says so ran no tests: TAP cut short (a crash) is not that
    noTestsRan:
      !collectionError && executed === 0 && tap.failed.length === 0 && (noFiles || tap.complete || tap.totals !== null),
    collectionError,
    incomplete: hasTap ? tapIncomplete(tap) : null,
  });
}

/**
 * Issue 33: why a TAP stream did not reach its end (null when it did): a producer that stops early (the code
 * under test ended the process) leaves no plan, or fewer results than its plan announced.
 */
export function tapIncomplete(tap: Pick<TapReading, 'plan' | 'topResults' | 'bailedOut'>): string | null {
  if (tap.plan !== null && tap.topResults >= tap.plan) return null;
  if (tap.bailedOut) return 'TAP output bailed out ("Bail out!") before its plan was done';
  if (tap.plan === null) return 'TAP output has no plan line (1..N)';
  if (tap.topResults < tap.plan)
    return `TAP output planned ${tap.plan} results (1..${tap.plan}) but printed ${tap.topResults}`;
  return null;
}

function depthOf(indent: string): number {
  return Math.floor(indent.length / 4);
}

/** Splits "name # SKIP reason" at the first unescaped directive; node-tap's "# time=12ms" is no directive. */
export function splitDirective(text: string): { name: string; directive: 'SKIP' | 'TODO' | null } {
  const body = text.replace(/\s+# time=[\d.]+m?s$/, '').replace(/\s+\{$/, '');
  // "# SKIP why", "# skipped", "# TODO: later": after a space (or alone) and a word of its own; "\#" is a name's
  const m = /(?:^|\s)#\s*(SKIP\w*|TODO)(?=[\s:]|$)/i.exec(body);
  if (!m) return { name: unescapeTap(body), directive: null };
  const directive = (m[1] ?? '').toUpperCase().startsWith('SKIP') ? 'SKIP' : 'TODO';
  return { name: unescapeTap(body.slice(0, m.index)), directive };
}

/** TAP escapes "#" and "\" in descriptions. */
export function unescapeTap(text: string): string {
  return text
    .replace(/\\([#\\])/g, '$1')
    .replace(/\\n/g, ' ')
    .trim();
}
