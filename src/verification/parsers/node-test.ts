import { hintNames, makeRun, relativeTestPath, sumOf, TEST_FILE } from './shared.js';
import { isNodeTestTap, tapIncomplete } from './tap.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// node:test prints the file only as the name of a file-level entry (a file with no tests, a file that
// crashed, or the per-file wrapper of older Node versions). Ids are the nested test names joined by " > ",
// prefixed with the file when the output gives it for the test.

const TAP_SUBTEST = /^( *)# Subtest: (.*)$/;
const TAP_RESULT = /^( *)(not ok|ok) \d+(?: - (.*))?$/;
const TAP_SUMMARY = /^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/;
const SPEC_SUMMARY = /^ℹ (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/;
const SPEC_LINE = /^( *)(✔|✖|﹣|⚠|▶) (.*?)(?: \((\d[\d.]*m?s)\))?((?: # (?:SKIP|TODO)\b.*)?)$/;

interface Frame {
  name: string;
  hasChildren: boolean;
  childFailed: boolean;
}

class Collector {
  readonly failed: string[] = [];
  readonly passed: string[] = [];
  readonly skipped: string[] = [];
  fileLevelFailures = 0;
  testResults = 0;
  constructor(private readonly workspace: string | null | undefined) {}

  /** Records one result; `path` is the names from the top-level entry down to this test. */
  record(path: string[], outcome: 'pass' | 'fail' | 'skip', hasChildren: boolean, ownFailure: boolean): void {
    const [top, ...rest] = path;
    if (top === undefined) return;
    const topIsFile = TEST_FILE.test(top) && top.includes('/');
    if (path.length === 1 && topIsFile && !hasChildren) {
      // a file with no tests (passes) or a file that crashed before or while running its tests
      const id = relativeTestPath(top, this.workspace);
      if (outcome === 'fail') {
        this.failed.push(id);
        this.fileLevelFailures++;
      } else if (outcome === 'pass') this.passed.push(id);
      return;
    }
    const id = topIsFile ? [relativeTestPath(top, this.workspace), ...rest].join(' > ') : path.join(' > ');
    if (hasChildren) {
      // a suite passes or fails through its tests; only its own failure (a hook, a crash) is an id
      if (outcome === 'fail' && ownFailure) this.failed.push(id);
      return;
    }
    this.testResults++;
    if (outcome === 'fail') this.failed.push(id);
    else if (outcome === 'pass') this.passed.push(id);
    else this.skipped.push(id);
  }
}

/** Parses node:test output: the TAP reporter (the default when piped on Node 20) or the spec reporter. */
export function parseNodeTestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  // node-tap and tape print TAP too: theirs is read by tap.ts and tape.ts
  // told it is node:test's, a stream cut short before any result is node:test's too (issue 33); its results
  // carry `duration_ms`, so a stream with results of another dialect stays that dialect's
  const hinted = hintNames(hint, 'node-test') && !lines.some((l) => /^\s*(?:not )?ok\b/.test(l));
  const isTap =
    lines.some((l) => l === 'TAP version 13' || TAP_SUBTEST.test(l)) &&
    ((lines.some((l) => TAP_SUMMARY.test(l) || TAP_RESULT.test(l)) && isNodeTestTap(lines)) || hinted);
  const isSpec =
    lines.filter((l) => SPEC_SUMMARY.test(l)).length >= 2 || (hinted && !isTap && lines.some((l) => SPEC_LINE.test(l)));
  if (!isTap && !isSpec) return null;
  const collector = new Collector(hint.workspace);
  const summary = isTap ? readTap(lines, collector) : readSpec(lines, collector);
  const counts: TestCounts | null =
    summary.size === 0
      ? null
      : {
          passed: sumOf(summary, 'pass'),
          failed: sumOf(summary, 'fail', 'cancelled'),
          skipped: sumOf(summary, 'skipped', 'todo'),
        };
  const collectionError = collector.fileLevelFailures > 0 && collector.testResults === 0;
  const executed = counts ? counts.passed + counts.failed : collector.passed.length + collector.failed.length;
  return makeRun('node-test', {
    failed: collector.failed,
    passed: collector.passed,
    skipped: collector.skipped,
    counts,
    ranSignal: !collectionError && executed > 0,
    noTestsRan: !collectionError && counts !== null && executed === 0,
    collectionError,
    incomplete: isTap
      ? tapIncomplete(topLevelPlan(lines))
      : summary.has('tests')
        ? null
        : "node --test printed no 'ℹ tests N' summary",
  });
}

/** The top level's "1..N" and its result lines: nested ones are indented, YAML blocks too. */
function topLevelPlan(lines: string[]): { plan: number | null; topResults: number; bailedOut: boolean } {
  let plan: number | null = null;
  let topResults = 0;
  for (const line of lines) {
    const m = /^1\.\.(\d+)$/.exec(line);
    if (m) plan = Number(m[1]);
    else if (/^(?:not )?ok \d+\b/.test(line)) topResults++;
  }
  return { plan, topResults, bailedOut: lines.some((l) => l.startsWith('Bail out!')) };
}

function readTap(lines: string[], collector: Collector): Map<string, number> {
  const summary = new Map<string, number>();
  const stack: Frame[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const sub = TAP_SUBTEST.exec(line);
    if (sub) {
      const depth = Math.floor((sub[1] ?? '').length / 4);
      stack.length = Math.min(stack.length, depth);
      const parent = stack[depth - 1];
      if (parent) parent.hasChildren = true;
      stack[depth] = { name: unescapeTap(sub[2] ?? ''), hasChildren: false, childFailed: false };
      continue;
    }
    const total = TAP_SUMMARY.exec(line);
    if (total) {
      summary.set(total[1] ?? '', Number(total[2]));
      continue;
    }
    const result = TAP_RESULT.exec(line);
    if (!result) continue;
    const depth = Math.floor((result[1] ?? '').length / 4);
    const { name, directive } = splitDirective(result[3] ?? '');
    // the YAML block after a result says why it failed
    let failureType = '';
    if (lines[i + 1]?.trim() === '---') {
      for (i += 2; i < lines.length && lines[i]?.trim() !== '...'; i++) {
        const m = /^\s*failureType: '?([\w]+)'?/.exec(lines[i] ?? '');
        if (m) failureType = m[1] ?? '';
      }
    }
    let frame = stack[depth];
    if (!frame || frame.name !== name) {
      frame = { name, hasChildren: false, childFailed: false };
      stack.length = depth;
      stack[depth] = frame;
    }
    const failed = result[2] === 'not ok' && directive !== 'TODO';
    const outcome = directive ? 'skip' : failed ? 'fail' : 'pass';
    const parent = stack[depth - 1];
    if (parent) parent.hasChildren = true;
    if (parent && outcome === 'fail') parent.childFailed = true;
    const path = stack.slice(0, depth + 1).map((f) => f.name);
    collector.record(path, outcome, frame.hasChildren, failureType !== 'subtestsFailed');
    stack.length = depth;
  }
  return summary;
}

function readSpec(lines: string[], collector: Collector): Map<string, number> {
  const summary = new Map<string, number>();
  const stack: (Frame & { open: boolean })[] = [];
  let inFailureRecap = false;
  for (const line of lines) {
    const total = SPEC_SUMMARY.exec(line);
    if (total) {
      summary.set(total[1] ?? '', Number(total[2]));
      continue;
    }
    // the recap repeats each failure without its suites: the tree above already has them
    if (/^✖ failing tests:/.test(line)) inFailureRecap = true;
    if (inFailureRecap) continue;
    const m = SPEC_LINE.exec(line);
    if (!m) continue;
    const depth = Math.floor((m[1] ?? '').length / 2);
    const mark = m[2];
    const name = m[3] ?? '';
    if (mark === '▶' && m[4] === undefined) {
      stack.length = Math.min(stack.length, depth);
      const parent = stack[depth - 1];
      if (parent) parent.hasChildren = true;
      stack[depth] = { name, hasChildren: false, childFailed: false, open: true };
      continue;
    }
    const directive = /# (SKIP|TODO)\b/.exec(m[5] ?? '')?.[1];
    const outcome = mark === '﹣' || directive ? 'skip' : mark === '✖' ? 'fail' : 'pass';
    let frame = stack[depth];
    if (!(frame?.open && frame.name === name)) {
      stack.length = Math.min(stack.length, depth);
      frame = { name, hasChildren: false, childFailed: false, open: false };
      stack[depth] = frame;
    }
    const parent = stack[depth - 1];
    if (parent) parent.hasChildren = true;
    if (parent && outcome === 'fail') parent.childFailed = true;
    const path = stack.slice(0, depth + 1).map((f) => f.name);
    collector.record(path, outcome, frame.hasChildren, !frame.childFailed);
    stack.length = depth;
  }
  return summary;
}

/** Splits "name # SKIP reason" at the first unescaped directive. */
function splitDirective(text: string): { name: string; directive: 'SKIP' | 'TODO' | null } {
  const m = /(?<!\\) # (SKIP|TODO)\b/i.exec(text);
  if (!m) return { name: unescapeTap(text), directive: null };
  return { name: unescapeTap(text.slice(0, m.index)), directive: (m[1] ?? '').toUpperCase() as 'SKIP' | 'TODO' };
}

function unescapeTap(text: string): string {
  return text
    .replace(/\\([#\\])/g, '$1')
    .replace(/\\n/g, ' ')
    .trim();
}
