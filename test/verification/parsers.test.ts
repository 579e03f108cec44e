// The parsers on outputs captured from the fixture projects (GAFFER_CAPTURE_OUTPUTS=1 npx vitest run
// test/verification/corpus.test.ts rewrites them): exact ids, counts and signals for every framework.
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  capId,
  findJUnitReports,
  packageOf,
  parseJUnitXml,
  parseTestOutput,
  stripAnsi,
  summarizeCounts,
} from '../../src/verification/parsers/index.js';
import type { ParsedRun } from '../../src/verification/parsers/index.js';
import { relativeTestPath } from '../../src/verification/parsers/shared.js';

const OUTPUTS = resolve(import.meta.dirname, '..', 'fixtures', 'outputs');
const read = (path: string) => readFileSync(join(OUTPUTS, path), 'utf8');

const run = (parts: Partial<ParsedRun>): ParsedRun => ({
  framework: null,
  failed: [],
  passed: [],
  skipped: [],
  counts: null,
  ranSignal: false,
  noTestsRan: false,
  collectionError: false,
  ...parts,
});
const counts = (passed: number, failed: number, skipped: number) => ({ passed, failed, skipped });
const ran = { ranSignal: true };
const nothingRan = { ranSignal: false, noTestsRan: true };
const brokenSuite = { ranSignal: false, collectionError: true };

const GO = 'example.com/gafferfixture';

/** [captured output, the command that printed it, the detected kind, what it must parse to] */
const CASES: [string, string, string, ParsedRun][] = [
  // node:test, TAP (the default reporter when the output is piped)
  [
    'node-test/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'node-test',
      failed: ['divide rounds down', 'flaky passes on rerun'],
      passed: ['math > add adds', 'math > multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'node-test/spec-reporter.txt',
    'node --test --test-reporter=spec',
    'node',
    run({
      framework: 'node-test',
      failed: ['divide rounds down', 'flaky passes on rerun'],
      passed: ['math > add adds', 'math > multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'node-test/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'node-test',
      failed: ['math > add adds', 'divide rounds down', 'flaky passes on rerun'],
      passed: ['math > multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'node-test/flaky-rerun.txt',
    "node --test '--test-name-pattern=^flaky passes on rerun$'",
    'node',
    run({
      framework: 'node-test',
      passed: ['flaky passes on rerun'],
      // tests left out by the name pattern are reported as skipped
      skipped: ['math > add adds', 'math > multiply multiplies', 'divide rounds down', 'slugify lowercases and dashes', 'slugify keeps unicode'],
      counts: counts(1, 0, 5),
      ...ran,
    }),
  ],
  ['node-test/no-tests.txt', 'npm test', 'node', run({ framework: 'node-test', counts: counts(0, 0, 0), ...nothingRan })],
  ['node-test/collection-error.txt', 'npm test', 'node', run({ framework: 'node-test', failed: ['test/broken.test.js'], counts: counts(0, 1, 0), ...brokenSuite })],

  // vitest: the default reporter does not list every passing test; verbose does
  [
    'vitest/first-run.txt',
    'npm test',
    'node',
    run({ framework: 'vitest', failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'], counts: counts(3, 2, 1), ...ran }),
  ],
  [
    'vitest/verbose-reporter.txt',
    'npx vitest run --reporter=verbose',
    'node',
    run({
      framework: 'vitest',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: ['test/math.test.js > math > add adds', 'test/math.test.js > math > multiply multiplies', 'test/slug.test.js > slugify lowercases and dashes'],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'vitest/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'vitest',
      failed: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  ['vitest/flaky-rerun.txt', 'npx vitest run test/math.test.js -t x', 'node', run({ framework: 'vitest', counts: counts(1, 0, 3), ...ran })],
  ['vitest/no-tests.txt', 'npm test', 'node', run({ framework: 'vitest', ...nothingRan })],
  ['vitest/collection-error.txt', 'npm test', 'node', run({ framework: 'vitest', failed: ['test/broken.test.js'], counts: counts(0, 0, 0), ...brokenSuite })],

  // jest: several files print failures only; one file prints its whole tree
  [
    'jest/first-run.txt',
    'npm test',
    'node',
    run({ framework: 'jest', failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'], counts: counts(3, 2, 1), ...ran }),
  ],
  [
    'jest/single-file.txt',
    'npx jest test/math.test.js',
    'node',
    run({
      framework: 'jest',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: ['test/math.test.js > math > add adds', 'test/math.test.js > math > multiply multiplies'],
      counts: counts(2, 2, 0),
      ...ran,
    }),
  ],
  [
    'jest/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'jest',
      failed: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'jest/flaky-rerun.txt',
    'npx jest test/math.test.js -t x',
    'node',
    run({
      framework: 'jest',
      passed: ['test/math.test.js > flaky passes on rerun'],
      skipped: ['test/math.test.js > divide rounds down', 'test/math.test.js > math > add adds', 'test/math.test.js > math > multiply multiplies'],
      counts: counts(1, 0, 3),
      ...ran,
    }),
  ],
  ['jest/no-tests.txt', 'npm test', 'node', run({ framework: 'jest', ...nothingRan })],
  ['jest/collection-error.txt', 'npm test', 'node', run({ framework: 'jest', failed: ['test/broken.test.js'], counts: counts(0, 0, 0), ...brokenSuite })],

  // mocha spec reporter: no files, full suite paths
  [
    'mocha/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'mocha',
      failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
      passed: ['math > add adds', 'math > multiply multiplies', 'slugify > lowercases and dashes'],
      skipped: ['slugify > keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'mocha/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'mocha',
      failed: ['math > add adds', 'math > divide rounds down', 'math > flaky passes on rerun'],
      passed: ['math > multiply multiplies', 'slugify > lowercases and dashes'],
      skipped: ['slugify > keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  ['mocha/flaky-rerun.txt', 'npx mocha --grep x', 'node', run({ framework: 'mocha', passed: ['math > flaky passes on rerun'], counts: counts(1, 0, 0), ...ran })],
  ['mocha/no-tests.txt', 'npm test', 'node', run({ framework: 'mocha', ...nothingRan })],
  ['mocha/collection-error.txt', 'npm test', 'node', run({ framework: 'mocha', ...brokenSuite })],

  // pytest -q -rA and -v
  [
    'pytest/first-run.txt',
    'python3 -m pytest -q -rA',
    'pytest',
    run({
      framework: 'pytest',
      failed: ['tests/test_calc.py::test_divide_rounds_down', 'tests/test_calc.py::test_flaky_passes_on_rerun'],
      passed: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_multiply[4-5-20]', 'tests/test_calc.py::test_multiply[0-7-0]', 'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes'],
      // -rA names a skip by its location only
      skipped: ['tests/test_slug.py:10'],
      counts: counts(4, 2, 1),
      ...ran,
    }),
  ],
  [
    'pytest/verbose.txt',
    'python3 -m pytest -v',
    'pytest',
    run({
      framework: 'pytest',
      failed: ['tests/test_calc.py::test_divide_rounds_down', 'tests/test_calc.py::test_flaky_passes_on_rerun'],
      passed: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_multiply[4-5-20]', 'tests/test_calc.py::test_multiply[0-7-0]', 'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes'],
      skipped: ['tests/test_slug.py::TestSlugify::test_keeps_unicode'],
      counts: counts(4, 2, 1),
      ...ran,
    }),
  ],
  [
    'pytest/broken-source.txt',
    'python3 -m pytest -q -rA',
    'pytest',
    run({
      framework: 'pytest',
      failed: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_divide_rounds_down', 'tests/test_calc.py::test_flaky_passes_on_rerun'],
      passed: ['tests/test_calc.py::test_multiply[4-5-20]', 'tests/test_calc.py::test_multiply[0-7-0]', 'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes'],
      skipped: ['tests/test_slug.py:10'],
      counts: counts(3, 3, 1),
      ...ran,
    }),
  ],
  [
    'pytest/flaky-rerun.txt',
    'python3 -m pytest -q -rA tests/test_calc.py::test_flaky_passes_on_rerun',
    'pytest',
    run({ framework: 'pytest', passed: ['tests/test_calc.py::test_flaky_passes_on_rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
  ['pytest/no-tests.txt', 'python3 -m pytest -q -rA', 'pytest', run({ framework: 'pytest', counts: counts(0, 0, 0), ...nothingRan })],
  ['pytest/collection-error.txt', 'python3 -m pytest -q -rA', 'pytest', run({ framework: 'pytest', failed: ['tests/test_divide.py'], counts: counts(0, 1, 0), ...brokenSuite })],

  // go test -json, and plain go test
  [
    'go/first-run.txt',
    'go test -json -count=1 ./...',
    'go',
    run({
      framework: 'go',
      failed: [`${GO}/calc.TestDivideRoundsDown`, `${GO}/calc.TestFlakyPassesOnRerun`],
      passed: [`${GO}/calc.TestAdd`, `${GO}/calc.TestMultiply/small`, `${GO}/calc.TestMultiply/zero`, `${GO}/calc.TestMultiply`, `${GO}/slug.TestSlugifyLowercasesAndDashes`],
      skipped: [`${GO}/slug.TestSlugifyKeepsUnicode`],
      counts: counts(5, 2, 1),
      ...ran,
    }),
  ],
  ['go/plain.txt', 'go test -count=1 ./...', 'go', run({ framework: 'go', failed: [`${GO}/calc.TestDivideRoundsDown`, `${GO}/calc.TestFlakyPassesOnRerun`], ...ran })],
  [
    'go/broken-source.txt',
    'go test -json -count=1 ./...',
    'go',
    run({
      framework: 'go',
      failed: [`${GO}/calc.TestAdd`, `${GO}/calc.TestDivideRoundsDown`, `${GO}/calc.TestFlakyPassesOnRerun`],
      passed: [`${GO}/calc.TestMultiply/small`, `${GO}/calc.TestMultiply/zero`, `${GO}/calc.TestMultiply`, `${GO}/slug.TestSlugifyLowercasesAndDashes`],
      skipped: [`${GO}/slug.TestSlugifyKeepsUnicode`],
      counts: counts(4, 3, 1),
      ...ran,
    }),
  ],
  [
    'go/build-failed-one-package.txt',
    'go test -json -count=1 ./...',
    'go',
    run({
      framework: 'go',
      // the package that did not build is the failure; the other package still ran
      failed: [`${GO}/calc`],
      passed: [`${GO}/slug.TestSlugifyLowercasesAndDashes`],
      skipped: [`${GO}/slug.TestSlugifyKeepsUnicode`],
      counts: counts(1, 1, 1),
      ...ran,
    }),
  ],
  ['go/flaky-rerun.txt', 'go test -json -count=1 -run x', 'go', run({ framework: 'go', passed: [`${GO}/calc.TestFlakyPassesOnRerun`], counts: counts(1, 0, 0), ...ran })],
  ['go/no-tests.txt', 'go test -json -count=1 ./...', 'go', run({ framework: 'go', counts: counts(0, 0, 0), ...nothingRan })],
  ['go/collection-error.txt', 'go test -json -count=1 ./...', 'go', run({ framework: 'go', failed: [`${GO}/calc`, `${GO}/slug`], counts: counts(0, 2, 0), ...brokenSuite })],

  // cargo test
  ['cargo/flaky-rerun.txt', 'cargo test tests::flaky_passes_on_rerun -- --exact', 'cargo', run({ framework: 'cargo', passed: ['tests::flaky_passes_on_rerun'], counts: counts(1, 0, 0), ...ran })],
  ['cargo/no-tests.txt', 'cargo test', 'cargo', run({ framework: 'cargo', counts: counts(0, 0, 0), ...nothingRan })],
];

describe('parseTestOutput on captured fixture output', () => {
  it.each(CASES)('%s', (file, command, kind, expected) => {
    const output = read(file);
    expect(parseTestOutput(output, { kind, command })).toEqual(expected);
    // the hint only orders the parsers: the output alone names its framework
    expect(parseTestOutput(output)).toEqual(expected);
  });

  it('reads cargo failures in the sorted order of its closing list, whatever order the tests finished in', () => {
    const parsed = parseTestOutput(read('cargo/first-run.txt'), { kind: 'cargo' });
    expect(parsed.failed).toEqual(['tests::divide_rounds_down', 'tests::flaky_passes_on_rerun']);
    expect([...parsed.passed].sort()).toEqual(['slug::tests::lowercases_and_dashes', 'tests::add_adds', 'tests::multiply_multiplies']);
    expect(parsed.skipped).toEqual(['slug::tests::keeps_unicode']);
    expect(parsed.counts).toEqual(counts(3, 2, 1));
    expect(parsed.ranSignal).toBe(true);

    const broken = parseTestOutput(read('cargo/broken-source.txt'));
    expect(broken.failed).toEqual(['tests::add_adds', 'tests::divide_rounds_down', 'tests::flaky_passes_on_rerun']);
    expect(broken.counts).toEqual(counts(2, 3, 1));
  });

  it('names each cargo target that did not compile and reports a collection error', () => {
    const parsed = parseTestOutput(read('cargo/collection-error.txt'), { kind: 'cargo', command: 'cargo test' });
    expect([...parsed.failed].sort()).toEqual(['gaffer_fixture (lib test)', 'gaffer_fixture (lib)']);
    expect(parsed).toMatchObject({ framework: 'cargo', passed: [], counts: null, ranSignal: false, noTestsRan: false, collectionError: true });
  });

  it('makes an absolute test path relative to the workspace the command ran in', () => {
    const output = read('node-test/collection-error.txt');
    const workspace = /# Subtest: (\/.*)\/test\/broken\.test\.js/.exec(output)?.[1];
    expect(workspace).toBeDefined();
    expect(parseTestOutput(output, { kind: 'node', workspace: workspace ?? null }).failed).toEqual(['test/broken.test.js']);
  });

  it('strips the colors vitest prints even when piped', () => {
    const output = read('vitest/first-run.txt');
    expect(output).toContain('\x1b[');
    expect(stripAnsi(output)).not.toContain('\x1b');
  });

  it('recognizes nothing in output that is not a test run', () => {
    const npmError = 'npm error Missing script: "test"\nnpm error\nnpm error To see a list of scripts, run:\nnpm error   npm run\n';
    expect(parseTestOutput(npmError, { kind: 'node', command: 'npm test' })).toEqual(run({}));
    expect(parseTestOutput('')).toEqual(run({}));
  });

  it('prefers the framework the hint names when an output could be read by two parsers', () => {
    // a JUnit report is not console output: no console parser claims it
    expect(parseTestOutput(read('mocha/junit-report.xml')).framework).toBeNull();
    const goOutput = read('go/first-run.txt');
    expect(parseTestOutput(goOutput, { kind: 'node', command: 'npm test' }).framework).toBe('go');
  });
});

describe('parseJUnitXml', () => {
  it('reads jest-junit, mocha xunit and pytest --junitxml reports', () => {
    expect(parseJUnitXml(read('jest/junit-report.xml'))).toEqual(
      run({
        framework: 'junit',
        failed: ['divide rounds down', 'flaky passes on rerun'],
        passed: ['math add adds', 'math multiply multiplies', 'slugify lowercases and dashes'],
        skipped: ['slugify keeps unicode'],
        counts: counts(3, 2, 1),
        ...ran,
      }),
    );
    expect(parseJUnitXml(read('mocha/junit-report.xml'))).toEqual(
      run({
        framework: 'junit',
        failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
        passed: ['math > add adds', 'math > multiply multiplies', 'slugify > lowercases and dashes'],
        skipped: ['slugify > keeps unicode'],
        counts: counts(3, 2, 1),
        ...ran,
      }),
    );
    expect(parseJUnitXml(read('pytest/junit-report.xml'))).toEqual(
      run({
        framework: 'junit',
        failed: ['tests.test_calc > test_divide_rounds_down', 'tests.test_calc > test_flaky_passes_on_rerun'],
        passed: ['tests.test_calc > test_add', 'tests.test_calc > test_multiply[4-5-20]', 'tests.test_calc > test_multiply[0-7-0]', 'tests.test_slug.TestSlugify > test_lowercases_and_dashes'],
        skipped: ['tests.test_slug.TestSlugify > test_keeps_unicode'],
        counts: counts(4, 2, 1),
        ...ran,
      }),
    );
  });

  it('recognizes nothing in a file that is not a JUnit report', () => {
    expect(parseJUnitXml('<?xml version="1.0"?><project><name>x</name></project>')).toEqual(run({}));
  });
});

describe('findJUnitReports', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('finds the reports written after the run started in the usual places, and nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gaffer-junit-'));
    dirs.push(dir);
    const report = read('jest/junit-report.xml');
    const place = (path: string, text: string, mtimeS: number) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
      utimesSync(join(dir, path), mtimeS, mtimeS);
    };
    const now = Math.floor(Date.now() / 1000);
    place('junit.xml', report, now);
    place('reports/mocha.xml', read('mocha/junit-report.xml'), now);
    place('test-results/unit/TEST-api.xml', report, now);
    place('target/surefire-reports/TEST-com.example.AppTest.xml', report, now);
    place('reports/old.xml', report, now - 3600);
    place('reports/coverage.xml', '<?xml version="1.0"?><coverage line-rate="1"/>', now);
    place('node_modules/pkg/junit.xml', report, now);
    place('src/junit.xml', report, now);

    expect(findJUnitReports(dir, (now - 60) * 1000)).toEqual(
      ['junit.xml', 'reports/mocha.xml', 'target/surefire-reports/TEST-com.example.AppTest.xml', 'test-results/unit/TEST-api.xml'].map((p) => join(dir, p)),
    );
    expect(findJUnitReports(join(dir, 'missing'), 0)).toEqual([]);
  });
});

describe('ids and summaries', () => {
  it('caps an id at 200 chars with an ellipsis', () => {
    const long = `tests/test_long.py::test_${'x'.repeat(300)}`;
    const capped = capId(long);
    expect(capped).toHaveLength(200);
    expect(capped.endsWith('…')).toBe(true);
    expect(long.startsWith(capped.slice(0, -1))).toBe(true);
    expect(capId('  short id ')).toBe('short id');
  });

  it('cuts an absolute test path at its test directory when the workspace is unknown, so copies agree', () => {
    expect(relativeTestPath('/tmp/gaffer-baseline-1/test/unit/a.test.js')).toBe('test/unit/a.test.js');
    expect(relativeTestPath('/home/me/project/test/unit/a.test.js')).toBe('test/unit/a.test.js');
    expect(relativeTestPath('/home/me/project/test/a.test.js', '/home/me/project')).toBe('test/a.test.js');
    expect(relativeTestPath('file:///w/p/spec/b.spec.js', '/w/p/')).toBe('spec/b.spec.js');
    expect(relativeTestPath('./test/c.test.js')).toBe('test/c.test.js');
    expect(relativeTestPath('/w/p/c.test.js')).toBe('c.test.js');
  });

  it('names the package of a go test id', () => {
    expect(packageOf(`${GO}/calc.TestMultiply/small`)).toBe(`${GO}/calc`);
    expect(packageOf('example.com/m.TestA')).toBe('example.com/m');
    expect(packageOf(`${GO}/calc`)).toBe(`${GO}/calc`);
  });

  it('summarizes the counts as "N failed, N passed" with skips when any', () => {
    expect(summarizeCounts(parseTestOutput(read('pytest/first-run.txt')))).toBe('2 failed, 4 passed, 1 skipped');
    expect(summarizeCounts(parseTestOutput(read('pytest/flaky-rerun.txt')))).toBe('1 passed');
    expect(summarizeCounts(parseTestOutput(read('go/plain.txt')))).toBeNull();
  });
});
