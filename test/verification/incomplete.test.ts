// Issue 33: a suite that did not run to its end is not a pass. Each parser says, in `incomplete`, why the
// output shows no end (a TAP plan, a closing summary); readRun makes an exit-0 run of that kind inconclusive.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRun } from '../../src/verification/judge.js';
import { parseTestOutput } from '../../src/verification/parsers/index.js';
import type { ParsedRun, ParseHint } from '../../src/verification/parsers/index.js';
import type { SuiteRun } from '../../src/verification/run-suite.js';

const OUTPUTS = resolve(import.meta.dirname, '..', 'fixtures', 'outputs');
const read = (path: string) => readFileSync(join(OUTPUTS, path), 'utf8');
const lines = (...text: string[]) => `${text.join('\n')}\n`;
/** A captured output cut just before its first line matching `at`: the runner was stopped there. */
const cutBefore = (path: string, at: RegExp) => {
  const all = read(path).split('\n');
  const end = all.findIndex((l) => at.test(l.replace(/\x1b\[[0-9;]*m/g, '')));
  expect(end, `${path} has no line matching ${at}`).toBeGreaterThan(0);
  return all.slice(0, end).join('\n');
};

describe('a TAP stream that stops before its plan is done', () => {
  it('TAP cut short after one ok with no plan', () => {
    const run = parseTestOutput(lines('TAP version 13', 'ok 1 - loads'), { kind: 'node', command: 'npm test' });
    expect(run).toMatchObject({
      framework: 'tap',
      passed: ['loads'],
      ranSignal: true,
      incomplete: 'TAP output has no plan line (1..N)',
    });
  });

  it('a plan whose count was not reached', () => {
    const run = parseTestOutput(lines('TAP version 14', '1..3', 'ok 1 - a', 'not ok 2 - b'));
    expect(run.incomplete).toBe('TAP output planned 3 results (1..3) but printed 2');
    expect(parseTestOutput(lines('TAP version 14', '1..2', 'ok 1 - a', 'ok 2 - b')).incomplete).toBeNull();
    // a plan printed at the end, after its results, is reached too
    expect(parseTestOutput(lines('TAP version 13', 'ok 1 - a', 'ok 2 - b', '1..2')).incomplete).toBeNull();
  });

  it("node-tap's captured run reaches its plan; cut after its first file it does not", () => {
    expect(parseTestOutput(read('tap/first-run.txt'), { kind: 'node', command: 'npx tap' }).incomplete).toBeNull();
    const cut = cutBefore('tap/first-run.txt', /^# Subtest: test\/slug/);
    expect(parseTestOutput(cut, { kind: 'node', command: 'npx tap' }).incomplete).toBe(
      'TAP output planned 2 results (1..2) but printed 1',
    );
  });

  it('tape: its plan closes the run; cut short after one ok it has none', () => {
    const run = parseTestOutput(lines('TAP version 13', '# adds', 'ok 1 should be strictly equal'), {
      kind: 'node',
      command: 'npm test',
    });
    expect(run).toMatchObject({
      framework: 'tape',
      passed: ['adds'],
      ranSignal: true,
      incomplete: 'TAP output has no plan line (1..N)',
    });
    expect(parseTestOutput(read('tape/first-run.txt')).incomplete).toBeNull();
    expect(parseTestOutput(cutBefore('tape/first-run.txt', /^1\.\.5$/)).incomplete).toBe(
      'TAP output has no plan line (1..N)',
    );
  });

  it('tape, told the runner: a stream that stopped before any assertion is still tape cut short', () => {
    const output = lines('TAP version 13', '# adds');
    expect(parseTestOutput(output, { command: 'npm test', framework: 'tape' })).toMatchObject({
      framework: 'tape',
      ranSignal: false,
      incomplete: 'TAP output has no plan line (1..N)',
    });
  });

  it('node:test: the top-level plan closes the run', () => {
    expect(parseTestOutput(read('node-test/first-run.txt')).incomplete).toBeNull();
    const cut = cutBefore('node-test/first-run.txt', /^# Subtest: divide rounds down/);
    expect(parseTestOutput(cut, { kind: 'node', command: 'node --test' })).toMatchObject({
      framework: 'node-test',
      passed: ['math > add adds', 'math > multiply multiplies'],
      incomplete: 'TAP output has no plan line (1..N)',
    });
    // the spec reporter closes with its "ℹ tests N" summary
    expect(parseTestOutput(read('node-test/spec-reporter.txt')).incomplete).toBeNull();
    const spec = cutBefore('node-test/spec-reporter.txt', /^ℹ tests/);
    expect(parseTestOutput(spec, { command: 'node --test --test-reporter=spec' }).incomplete).toBe(
      "node --test printed no 'ℹ tests N' summary",
    );
  });
});

describe('a runner that stops before its closing summary', () => {
  const hinted: [string, string, RegExp, ParseHint, Partial<ParsedRun>][] = [
    [
      'mocha',
      'mocha/first-run.txt',
      /passing \(/,
      { command: 'npm test', framework: 'mocha' },
      {
        failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
        incomplete: "mocha printed no 'N passing' summary",
      },
    ],
    [
      'jest',
      'jest/first-run.txt',
      /^Test Suites:/,
      { command: 'npx jest' },
      { incomplete: "jest printed no 'Tests:' summary" },
    ],
    [
      'vitest',
      'vitest/first-run.txt',
      /Test Files/,
      { command: 'npx vitest run' },
      { incomplete: "vitest printed no 'Tests' summary" },
    ],
    [
      'pytest',
      'pytest/verbose.txt',
      /=+ .*(passed|failed).* in [\d.]+s/,
      { command: 'python3 -m pytest -v' },
      { incomplete: 'pytest printed no final summary line' },
    ],
    [
      'unittest',
      'unittest/verbose.txt',
      /^Ran \d+ tests/,
      { command: 'python3 -m unittest -v' },
      { incomplete: "unittest printed no 'Ran N tests' line" },
    ],
  ];

  it.each(hinted)(
    '%s: the complete capture is complete, the cut one is not',
    (framework, path, end, hint, expected) => {
      expect(parseTestOutput(read(path), hint)).toMatchObject({ framework, incomplete: null });
      const cut = parseTestOutput(cutBefore(path, end), hint);
      expect(cut).toMatchObject({ framework, ...expected });
      expect(cut.counts).toBeNull();
    },
  );

  it('pytest -q cut short: only its progress dots, read as pytest when told the runner', () => {
    expect(parseTestOutput(lines('..F.'), { command: 'python3 -m pytest -q -rA' })).toMatchObject({
      framework: 'pytest',
      incomplete: 'pytest printed no final summary line',
    });
    // untold, a line of dots is nobody's
    expect(parseTestOutput(lines('..F.')).framework).toBeNull();
  });

  it('mocha without its summary is not read as mocha unless the runner is known', () => {
    const cut = cutBefore('mocha/first-run.txt', /passing \(/);
    expect(parseTestOutput(cut, { command: 'npm test' })).toMatchObject({ framework: null, incomplete: null });
    expect(parseTestOutput(cut, { command: 'npx mocha' })).toMatchObject({
      framework: 'mocha',
      passed: ['math > add adds', 'math > multiply multiplies', 'slugify > lowercases and dashes'],
    });
  });

  it('a known runner that printed nothing of its own did not reach its end; an unknown one says nothing', () => {
    const crash = lines('Error: the library called process.exit(0) as it loaded');
    expect(parseTestOutput(crash, { command: 'npm test', framework: 'ava' })).toMatchObject({
      framework: 'ava',
      ranSignal: false,
      incomplete: "ava printed no 'N tests passed' summary",
    });
    expect(parseTestOutput(crash, { command: 'npx jasmine' })).toMatchObject({
      framework: 'jasmine',
      incomplete: "jasmine printed no 'N specs' summary",
    });
    expect(parseTestOutput(crash, { command: 'npm test' })).toMatchObject({ framework: null, incomplete: null });
  });

  it('every output that reached its end, or said it ran nothing, is complete', () => {
    for (const path of [
      'mocha/no-tests.txt',
      'jest/no-tests.txt',
      'vitest/no-tests.txt',
      'pytest/no-tests.txt',
      'unittest/no-tests.txt',
      'tape/no-tests.txt',
      'tap/no-tests.txt',
      'node-test/no-tests.txt',
    ]) {
      expect(parseTestOutput(read(path)).incomplete, path).toBeNull();
    }
  });
});

const suiteRun = (parsed: ParsedRun, exitCode: number | null = 0, command = 'npm test'): SuiteRun => ({
  command,
  exitCode,
  signal: null,
  timedOut: false,
  isCancelled: false,
  cause: null,
  durationMs: 10,
  tail: '',
  parsed,
  landmarkSeen: undefined,
});
const opts = { kind: 'configured', timeoutS: 60, expectedOutput: null };

describe('readRun: a suite that did not run to its end is not a pass', () => {
  it('exit 0 after TAP cut short after one ok: inconclusive, saying why', () => {
    const parsed = parseTestOutput(lines('TAP version 13', '# adds', 'ok 1 should be strictly equal'), {
      command: 'npm test',
      framework: 'tape',
    });
    expect(readRun(suiteRun(parsed), opts)).toEqual({
      ok: null,
      inconclusive: true,
      failures: [],
      summary: 'the suite did not run to its end: TAP output has no plan line (1..N)',
      runnerError: false,
    });
  });

  it('exit 0 with mocha stopped before its summary: inconclusive, with the failures seen before it stopped', () => {
    const parsed = parseTestOutput(cutBefore('mocha/first-run.txt', /passing \(/), {
      command: 'npm test',
      framework: 'mocha',
    });
    expect(readRun(suiteRun(parsed), opts)).toMatchObject({
      ok: null,
      inconclusive: true,
      summary: "the suite did not run to its end: mocha printed no 'N passing' summary; 2 failed before it stopped",
    });
  });

  it('the complete run still reads as it did', () => {
    const parsed = parseTestOutput(read('tape/first-run.txt'), { command: 'npm test', framework: 'tape' });
    expect(readRun(suiteRun(parsed, 1), opts)).toMatchObject({
      ok: false,
      inconclusive: false,
      failures: parsed.failed,
    });
    const passing = parseTestOutput(
      lines(
        'TAP version 13',
        '# adds',
        'ok 1 should be strictly equal',
        '',
        '1..1',
        '# tests 1',
        '# pass  1',
        '',
        '# ok',
      ),
    );
    expect(readRun(suiteRun(passing), opts)).toMatchObject({ ok: true, inconclusive: false, summary: '1 passed' });
  });

  it('keeps "exit 0 but no sign that any test ran" for a known runner that printed nothing', () => {
    const parsed = parseTestOutput(lines('the library exited as it loaded'), {
      command: 'npm test',
      framework: 'mocha',
    });
    expect(readRun(suiteRun(parsed), opts)).toMatchObject({
      ok: null,
      inconclusive: true,
      summary: 'exit 0 but no sign that any test ran',
    });
  });

  it('a non-zero exit of a run cut short stays a runner error (decided against the baseline)', () => {
    const parsed = parseTestOutput(lines('TAP version 13', 'ok 1 - loads'));
    expect(readRun(suiteRun(parsed, 1), opts)).toMatchObject({
      ok: false,
      runnerError: true,
      failures: ['<runner error>'],
    });
  });

  it('an output of no known runner is judged as before', () => {
    const parsed: ParsedRun = { ...parseTestOutput(lines('all good')), incomplete: 'ignored without a framework' };
    expect(readRun(suiteRun(parsed, 0, 'make check'), { ...opts, kind: 'make' })).toMatchObject({
      ok: true,
      summary: 'exit 0',
    });
  });
});
