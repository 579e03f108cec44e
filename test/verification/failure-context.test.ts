import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failureExcerpts } from '../../src/verification/failure-context.js';
import { judgeVerification, readRun } from '../../src/verification/judge.js';
import { parseTestOutput } from '../../src/verification/parsers/index.js';
import type { SuiteRun } from '../../src/verification/run-suite.js';
import { tempDir } from '../helpers/temp.js';

// issue 33: a fixer and a climbing rung read the assertion of each failing test, not only its id —
// checked on the real outputs of each framework the corpus runs
const output = (path: string) => readFileSync(`test/fixtures/outputs/${path}`, 'utf8');
const excerptsOf = (path: string, command: string) => {
  const text = output(path);
  const failed = parseTestOutput(text, { kind: null, command, workspace: null }).failed;
  return { failed, excerpts: failureExcerpts(text, failed) };
};

describe('failureExcerpts', () => {
  // [fixture, command, the divide test's excerpt holds, the flaky test's excerpt holds]
  const cases: [string, string, RegExp[], RegExp[]][] = [
    [
      'tape/first-run.txt',
      'npx tape',
      [/^# divide rounds down/, /not ok 4 should be strictly equal/, /expected: 3/, /actual: {3}4/],
      [/not ok 1 first run of the flaky test/],
    ],
    [
      'mocha/first-run.txt',
      'npx mocha',
      [/divide rounds down:/, /AssertionError \[ERR_ASSERTION\]: Expected values to be strictly equal/, /4 !== 3/],
      [/first run of the flaky test/],
    ],
    [
      'jest/first-run.txt',
      'npx jest',
      [/● divide rounds down/, /Expected: 3/, /Received: 4/],
      [/● flaky passes on rerun/, /Received: false/],
    ],
    [
      'vitest/first-run.txt',
      'npx vitest run',
      [/FAIL {2}test\/math\.test\.js > divide rounds down/, /AssertionError: expected 4 to be 3/],
      [/expected false to be true/],
    ],
    [
      'pytest/first-run.txt',
      'pytest',
      [/test_divide_rounds_down/, /E {7}assert 4 == 3/, /AssertionError/],
      [/E {7}AssertionError: first run of the flaky test/],
    ],
    [
      'node-test/first-run.txt',
      'node --test',
      [/not ok 2 - divide rounds down/, /Expected values to be strictly equal/, /expected: 3/, /actual: 4/],
      [/error: 'first run of the flaky test'/],
    ],
    [
      'node-test/spec-reporter.txt',
      'node --test',
      [/✖ divide rounds down/, /AssertionError/, /4 !== 3/],
      [/first run of the flaky test/],
    ],
    [
      'go/first-run.txt',
      'go test -json ./...',
      [/--- FAIL: TestDivideRoundsDown/, /calc_test\.go:31: round\(7\/2\) = 4, want 3/],
      [/first run of the flaky test/],
    ],
    ['go/plain.txt', 'go test ./...', [/--- FAIL: TestDivideRoundsDown/, /want 3/], [/first run of the flaky test/]],
    [
      'unittest/first-run.txt',
      'python -m unittest',
      [/FAIL: test_divide_rounds_down/, /AssertionError: 4 != 3/],
      [/False is not true/],
    ],
    [
      'cargo/first-run.txt',
      'cargo test',
      [/panicked at src\/lib\.rs:51:9/, /assertion `left == right` failed/, /left: 4\.0/],
      [/first run of the flaky test/],
    ],
    [
      'jasmine/first-run.txt',
      'npx jasmine',
      [/math divide rounds down/, /Expected 4 to be 3\./],
      [/Expected false to be true/],
    ],
    [
      'ava/first-run.txt',
      'npx ava',
      [/math › divide rounds down/, /Difference \(- actual, \+ expected\)/],
      [/Value is not `true`/],
    ],
    [
      'bun/first-run.txt',
      'bun test',
      [/Expected: 3/, /Received: 4/, /\(fail\) divide rounds down/],
      [/Received: false/],
    ],
    [
      'deno/first-run.txt',
      'deno test',
      [/AssertionError: Expected values to be strictly equal/, /4 !== 3/],
      [/first run of the flaky test/],
    ],
    [
      'tap/first-run.txt',
      'npx tap',
      [/# Subtest: divide rounds down/, /not ok 1 - should be equal/],
      [/not ok 1 - first run of the flaky test/],
    ],
  ];
  it.each(cases)(
    '%s: each failing test gets the block that reports it, with its assertion',
    (path, command, divide, flaky) => {
      const { failed, excerpts } = excerptsOf(path, command);
      expect(failed).toHaveLength(2);
      expect(excerpts.map((e) => e.id)).toEqual(failed);
      const d = excerpts.find((e) => /divide/i.test(e.id))?.excerpt ?? '';
      const f = excerpts.find((e) => /flaky/i.test(e.id))?.excerpt ?? '';
      for (const re of divide) expect(d).toMatch(re);
      for (const re of flaky) expect(f).toMatch(re);
      // each block is its own test's: the other test's assertion is not in it
      expect(d).not.toMatch(/first run of the flaky test/);
      expect(d.split('\n').length).toBeLessThanOrEqual(12);
    },
  );

  it('collection errors and build failures get the error that stopped the file', () => {
    expect(excerptsOf('pytest/collection-error.txt', 'pytest').excerpts[0]?.excerpt).toMatch(
      /ImportError: cannot import name 'divide'/,
    );
    expect(excerptsOf('go/build-failed-one-package.txt', 'go test ./...').excerpts[0]?.excerpt).toMatch(
      /cannot use "half"/,
    );
    expect(excerptsOf('vitest/collection-error.txt', 'npx vitest run').excerpts[0]?.excerpt).toMatch(
      /Cannot find module '\.\.\/src\/divide\.js'/,
    );
  });

  it('escapes are stripped, long stacks cut to their head, and every bound holds', () => {
    const { excerpts } = excerptsOf('jest/first-run.txt', 'npx jest');
    expect(excerpts.map((e) => e.excerpt).join('')).not.toContain('\x1b');
    const tape = excerptsOf('tape/first-run.txt', 'npx tape').excerpts[0]?.excerpt ?? '';
    expect(tape.split('\n').filter((l) => /^\s*at /.test(l))).toHaveLength(2);

    const names = Array.from({ length: 10 }, (_, i) => `case number ${i}`);
    const long = names
      .map((n) =>
        [`not ok - ${n}`, ...Array.from({ length: 30 }, (_, j) => `  expected line ${j} ${'x'.repeat(200)}`)].join(
          '\n',
        ),
      )
      .join('\n');
    const out = failureExcerpts(
      long,
      names.map((n) => `test/big.test.js > ${n}`),
    );
    // 800 characters each, 3,000 in all: the fourth is cut short, the fifth has no room
    expect(out.map((e) => e.excerpt.length)).toEqual([800, 800, 800, 600]);
    for (const e of out) {
      expect(e.excerpt.length).toBeLessThanOrEqual(800);
      expect(e.excerpt.split('\n').length).toBeLessThanOrEqual(12);
      expect(e.excerpt).toMatch(/^not ok - case number \d/);
    }
    expect(out.reduce((n, e) => n + e.excerpt.length, 0)).toBeLessThanOrEqual(3_000);
    expect(failureExcerpts(long, names, { ids: 2, chars: 100 }).map((e) => e.excerpt.length)).toEqual([100, 100]);
    const short = names.map((n) => `not ok - ${n}\n  expected 1, got 2`).join('\n');
    expect(failureExcerpts(short, names).map((e) => e.id)).toEqual(names.slice(0, 6));
  });

  it("gaffer's own markers and ids the output never names get no excerpt", () => {
    expect(
      failureExcerpts(output('tape/first-run.txt'), ['<suite did not complete>', 'test/x.js > never printed anywhere']),
    ).toEqual([]);
  });
});

describe('the verification names what each failing test reported', () => {
  const judge = (text: string, logFile: string | undefined, flaky: string[] = []) => {
    const after: SuiteRun = {
      command: 'npx jest',
      exitCode: 1,
      signal: null,
      timedOut: false,
      isCancelled: false,
      cause: null,
      durationMs: 1300,
      // the tail alone holds no assertion: the details come from the whole log
      tail: text.slice(-120),
      ...(logFile ? { logFile } : {}),
      parsed: parseTestOutput(text, { kind: 'node', command: 'npx jest', workspace: null }),
      landmarkSeen: undefined,
    };
    const reading = readRun(after, { kind: 'node', timeoutS: 60, expectedOutput: null });
    return judgeVerification({
      mode: 'auto',
      kind: 'node',
      command: 'npx jest',
      scope: 'all',
      after,
      reading,
      baseline: null,
      flaky,
      testsTouched: [],
      testsWeakened: [],
      original: null,
      testsMayChange: false,
      knownFailures: [],
      ownsCheckpointFailures: true,
    });
  };

  it('failure_details holds each non-flaky failing test with its assertion, read from the run log', () => {
    const text = output('jest/first-run.txt');
    const log = join(tempDir('gaffer-log-'), 'verification.log');
    writeFileSync(log, text);
    const v = judge(text, log, ['test/math.test.js > flaky passes on rerun']);
    expect(v.ok).toBe(false);
    expect(v.failure_details?.map((d) => d.id)).toEqual(['test/math.test.js > divide rounds down']);
    expect(v.failure_details?.[0]?.excerpt).toMatch(/Expected: 3\n\s*Received: 4/);
    // without the log, only the tail is there to read
    expect(judge(text, undefined).failure_details).toBeUndefined();
  });
});
