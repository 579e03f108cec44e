import { hintNames, makeRun } from './shared.js';
import { isTapeOutput, splitDirective, tapIncomplete } from './tap.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// tape prints each test (nested ones too, flat) as a "# name" comment, then that test's assertions as
// "ok N message" / "not ok N message". Ids are the test names: the output names no file and no parent. A
// test fails when any of its assertions fails; one with no assertion (a parent of subtests) is no result.
// Counts are of tests, not of the assertions tape's "# tests 5" counts.

const COMMENT = /^# (.+)$/;
const ASSERTION = /^(not ok|ok) \d+(?: (.*))?$/;
const SUMMARY = /^# (tests|pass|fail|todo|skip)\s+(\d+)$/;
const SKIPPED_TEST = /^# (SKIP|TODO) (.+)$/;
const NOT_ENDED = /^test exited without ending: (.+)$/;
// tape plans its assertions at the end: "1..5" after the last one
const PLAN = /^1\.\.(\d+)$/;

/** Parses tape's TAP. */
export function parseTapeOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  // told it is tape's, a stream cut short before any assertion is tape's too (issue 33)
  const cutShort =
    hintNames(hint, 'tape') && lines.includes('TAP version 13') && !lines.some((l) => /^\s*(?:not )?ok\b/.test(l));
  if (!isTapeOutput(lines) && !cutShort) return null;
  const outcomes = new Map<string, 'pass' | 'fail'>();
  const skipped: string[] = [];
  const todo = new Set<string>();
  const order: string[] = [];
  const summary = new Map<string, number>();
  let assertions = 0;
  let results = 0;
  let plan: number | null = null;
  let bailedOut = false;
  let current: string | null = null;
  const mark = (name: string, outcome: 'pass' | 'fail') => {
    if (!outcomes.has(name)) order.push(name);
    if (outcomes.get(name) !== 'fail') outcomes.set(name, outcome);
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const planned = PLAN.exec(line);
    if (planned) {
      plan = Number(planned[1]);
      continue;
    }
    if (line.startsWith('Bail out!')) bailedOut = true;
    const total = SUMMARY.exec(line);
    if (total) {
      summary.set(total[1] ?? '', Number(total[2]));
      continue;
    }
    const skip = SKIPPED_TEST.exec(line);
    if (skip) {
      // a skipped test prints no assertions; a todo test's failures do not count
      const name = (skip[2] ?? '').trim();
      if (skip[1] === 'SKIP') skipped.push(name);
      else todo.add(name);
      current = skip[1] === 'TODO' ? name : null;
      continue;
    }
    const comment = COMMENT.exec(line);
    if (comment) {
      if (line !== '# ok') current = (comment[1] ?? '').trim();
      continue;
    }
    const assertion = ASSERTION.exec(line);
    if (!assertion) continue;
    results++;
    // the YAML block after a failed assertion says why
    if (lines[i + 1] === '  ---') for (i += 2; i < lines.length && lines[i] !== '  ...'; i++);
    const { name: message, directive } = splitDirective(assertion[2] ?? '');
    if (directive === 'SKIP') continue;
    assertions++;
    const failed = assertion[1] === 'not ok' && directive !== 'TODO';
    // a test that never called end() is failed at exit, under whichever test printed last
    const owner = NOT_ENDED.exec(message)?.[1]?.trim() ?? current;
    if (owner === null || todo.has(owner)) continue;
    mark(owner, failed ? 'fail' : 'pass');
  }
  const failed = order.filter((name) => outcomes.get(name) === 'fail');
  const passed = order.filter((name) => outcomes.get(name) === 'pass');
  const skippedAll = [...skipped, ...todo];
  const counts: TestCounts | null =
    summary.size > 0 || order.length > 0
      ? { passed: passed.length, failed: failed.length, skipped: skippedAll.length }
      : null;
  const ran = assertions > 0 || (summary.get('pass') ?? 0) + (summary.get('fail') ?? 0) > 0;
  return makeRun('tape', {
    failed,
    passed,
    skipped: skippedAll,
    counts,
    ranSignal: ran,
    // only the closing "# tests 0" says so; TAP that stops early is a run that broke
    noTestsRan: !ran && summary.has('tests'),
    collectionError: false,
    incomplete: tapIncomplete({ plan, topResults: results, bailedOut }),
  });
}
