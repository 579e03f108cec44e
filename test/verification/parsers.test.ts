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
  incomplete: null,
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
      skipped: [
        'math > add adds',
        'math > multiply multiplies',
        'divide rounds down',
        'slugify lowercases and dashes',
        'slugify keeps unicode',
      ],
      counts: counts(1, 0, 5),
      ...ran,
    }),
  ],
  [
    'node-test/no-tests.txt',
    'npm test',
    'node',
    run({ framework: 'node-test', counts: counts(0, 0, 0), ...nothingRan }),
  ],
  [
    'node-test/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'node-test', failed: ['test/broken.test.js'], counts: counts(0, 1, 0), ...brokenSuite }),
  ],

  // vitest: the default reporter does not list every passing test; verbose does
  [
    'vitest/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'vitest',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'vitest/verbose-reporter.txt',
    'npx vitest run --reporter=verbose',
    'node',
    run({
      framework: 'vitest',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
        'test/slug.test.js > slugify lowercases and dashes',
      ],
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
      failed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > divide rounds down',
        'test/math.test.js > flaky passes on rerun',
      ],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'vitest/flaky-rerun.txt',
    'npx vitest run test/math.test.js -t x',
    'node',
    run({ framework: 'vitest', counts: counts(1, 0, 3), ...ran }),
  ],
  ['vitest/no-tests.txt', 'npm test', 'node', run({ framework: 'vitest', ...nothingRan })],
  [
    'vitest/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'vitest', failed: ['test/broken.test.js'], counts: counts(0, 0, 0), ...brokenSuite }),
  ],

  // jest: several files print failures only; one file prints its whole tree
  [
    'jest/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'jest',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
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
      failed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > divide rounds down',
        'test/math.test.js > flaky passes on rerun',
      ],
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
      skipped: [
        'test/math.test.js > divide rounds down',
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
      ],
      counts: counts(1, 0, 3),
      ...ran,
    }),
  ],
  ['jest/no-tests.txt', 'npm test', 'node', run({ framework: 'jest', ...nothingRan })],
  [
    'jest/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'jest', failed: ['test/broken.test.js'], counts: counts(0, 0, 0), ...brokenSuite }),
  ],

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
  [
    'mocha/flaky-rerun.txt',
    'npx mocha --grep x',
    'node',
    run({ framework: 'mocha', passed: ['math > flaky passes on rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
  ['mocha/no-tests.txt', 'npm test', 'node', run({ framework: 'mocha', ...nothingRan })],
  [
    'mocha/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'mocha', ...brokenSuite, incomplete: "mocha stopped with 'Exception during run'" }),
  ],

  // pytest -q -rA and -v
  [
    'pytest/first-run.txt',
    'python3 -m pytest -q -rA',
    'pytest',
    run({
      framework: 'pytest',
      failed: ['tests/test_calc.py::test_divide_rounds_down', 'tests/test_calc.py::test_flaky_passes_on_rerun'],
      passed: [
        'tests/test_calc.py::test_add',
        'tests/test_calc.py::test_multiply[4-5-20]',
        'tests/test_calc.py::test_multiply[0-7-0]',
        'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes',
      ],
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
      passed: [
        'tests/test_calc.py::test_add',
        'tests/test_calc.py::test_multiply[4-5-20]',
        'tests/test_calc.py::test_multiply[0-7-0]',
        'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes',
      ],
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
      failed: [
        'tests/test_calc.py::test_add',
        'tests/test_calc.py::test_divide_rounds_down',
        'tests/test_calc.py::test_flaky_passes_on_rerun',
      ],
      passed: [
        'tests/test_calc.py::test_multiply[4-5-20]',
        'tests/test_calc.py::test_multiply[0-7-0]',
        'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes',
      ],
      skipped: ['tests/test_slug.py:10'],
      counts: counts(3, 3, 1),
      ...ran,
    }),
  ],
  [
    'pytest/flaky-rerun.txt',
    'python3 -m pytest -q -rA tests/test_calc.py::test_flaky_passes_on_rerun',
    'pytest',
    run({
      framework: 'pytest',
      passed: ['tests/test_calc.py::test_flaky_passes_on_rerun'],
      counts: counts(1, 0, 0),
      ...ran,
    }),
  ],
  [
    'pytest/no-tests.txt',
    'python3 -m pytest -q -rA',
    'pytest',
    run({ framework: 'pytest', counts: counts(0, 0, 0), ...nothingRan }),
  ],
  [
    'pytest/collection-error.txt',
    'python3 -m pytest -q -rA',
    'pytest',
    run({ framework: 'pytest', failed: ['tests/test_divide.py'], counts: counts(0, 1, 0), ...brokenSuite }),
  ],

  // go test -json, and plain go test
  [
    'go/first-run.txt',
    'go test -json -count=1 ./...',
    'go',
    run({
      framework: 'go',
      failed: [`${GO}/calc.TestDivideRoundsDown`, `${GO}/calc.TestFlakyPassesOnRerun`],
      passed: [
        `${GO}/calc.TestAdd`,
        `${GO}/calc.TestMultiply/small`,
        `${GO}/calc.TestMultiply/zero`,
        `${GO}/calc.TestMultiply`,
        `${GO}/slug.TestSlugifyLowercasesAndDashes`,
      ],
      skipped: [`${GO}/slug.TestSlugifyKeepsUnicode`],
      counts: counts(5, 2, 1),
      ...ran,
    }),
  ],
  [
    'go/plain.txt',
    'go test -count=1 ./...',
    'go',
    run({ framework: 'go', failed: [`${GO}/calc.TestDivideRoundsDown`, `${GO}/calc.TestFlakyPassesOnRerun`], ...ran }),
  ],
  [
    'go/broken-source.txt',
    'go test -json -count=1 ./...',
    'go',
    run({
      framework: 'go',
      failed: [`${GO}/calc.TestAdd`, `${GO}/calc.TestDivideRoundsDown`, `${GO}/calc.TestFlakyPassesOnRerun`],
      passed: [
        `${GO}/calc.TestMultiply/small`,
        `${GO}/calc.TestMultiply/zero`,
        `${GO}/calc.TestMultiply`,
        `${GO}/slug.TestSlugifyLowercasesAndDashes`,
      ],
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
  [
    'go/flaky-rerun.txt',
    'go test -json -count=1 -run x',
    'go',
    run({ framework: 'go', passed: [`${GO}/calc.TestFlakyPassesOnRerun`], counts: counts(1, 0, 0), ...ran }),
  ],
  [
    'go/no-tests.txt',
    'go test -json -count=1 ./...',
    'go',
    run({ framework: 'go', counts: counts(0, 0, 0), ...nothingRan }),
  ],
  [
    'go/collection-error.txt',
    'go test -json -count=1 ./...',
    'go',
    run({ framework: 'go', failed: [`${GO}/calc`, `${GO}/slug`], counts: counts(0, 2, 0), ...brokenSuite }),
  ],

  // node:test's TAP reporter asked for by name
  [
    'node-test/tap-reporter.txt',
    'node --test --test-reporter=tap',
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

  // tape: "# name" comments over flat assertions ("not ok 3 should be strictly equal"), "# pass  3"
  [
    'tape/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'tape',
      failed: ['flaky passes on rerun', 'divide rounds down'],
      passed: ['add adds', 'multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'tape/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'tape',
      failed: ['flaky passes on rerun', 'add adds', 'divide rounds down'],
      passed: ['multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'tape/flaky-rerun.txt',
    'npx tape test/flaky.test.js',
    'node',
    run({ framework: 'tape', passed: ['flaky passes on rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
  ['tape/no-tests.txt', 'npm test', 'node', run({ framework: 'tape', counts: counts(0, 0, 0), ...nothingRan })],
  // node died on an import before tape printed anything: nothing to read (the verification calls it a runner error)
  ['tape/collection-error.txt', 'npm test', 'node', run({})],

  // node-tap (TAP 14, what `tap` prints with CI set): the file is the top level, assertions are not tests
  [
    'tap/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'tap',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
        'test/slug.test.js > slugify lowercases and dashes',
      ],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'tap/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'tap',
      failed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > divide rounds down',
        'test/math.test.js > flaky passes on rerun',
      ],
      passed: ['test/math.test.js > math > multiply multiplies', 'test/slug.test.js > slugify lowercases and dashes'],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'tap/flaky-rerun.txt',
    "npx tap test/math.test.js '--grep=^flaky passes on rerun$'",
    'node',
    run({
      framework: 'tap',
      passed: ['test/math.test.js > flaky passes on rerun'],
      // tests left out by --grep are skipped ("# SKIP filter: …")
      skipped: ['test/math.test.js > math', 'test/math.test.js > divide rounds down'],
      counts: counts(1, 0, 2),
      ...ran,
    }),
  ],
  ['tap/no-tests.txt', 'npm test', 'node', run({ framework: 'tap', ...nothingRan })],
  [
    'tap/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'tap', failed: ['test/broken.test.js'], counts: counts(0, 1, 0), ...brokenSuite }),
  ],

  // AVA: titles prefixed with their file; a failure's title apart from its message
  [
    'ava/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'ava',
      failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
      passed: ['slug > slugify lowercases and dashes', 'math > add adds', 'math > multiply multiplies'],
      skipped: ['slug > slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'ava/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'ava',
      failed: ['math > add adds', 'math > divide rounds down', 'math > flaky passes on rerun'],
      passed: ['math > multiply multiplies', 'slug > slugify lowercases and dashes'],
      skipped: ['slug > slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'ava/flaky-rerun.txt',
    "npx ava --match 'flaky passes on rerun'",
    'node',
    run({ framework: 'ava', passed: ['math > flaky passes on rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
  ['ava/no-tests.txt', 'npm test', 'node', run({ framework: 'ava', ...nothingRan })],
  [
    'ava/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'ava', failed: ['test/broken.test.js'], counts: counts(0, 1, 0), ...brokenSuite }),
  ],

  // Jasmine: failing and pending specs by full name; passing ones are never named
  [
    'jasmine/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'jasmine',
      failed: ['math divide rounds down', 'math flaky passes on rerun'],
      skipped: ['slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'jasmine/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'jasmine',
      failed: ['math add adds', 'math divide rounds down', 'math flaky passes on rerun'],
      skipped: ['slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  ['jasmine/no-tests.txt', 'npm test', 'node', run({ framework: 'jasmine', ...nothingRan })],
  ['jasmine/collection-error.txt', 'npm test', 'node', run({})],

  // bun test
  [
    'bun/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'bun',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/slug.test.js > slugify lowercases and dashes',
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
      ],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'bun/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'bun',
      failed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > divide rounds down',
        'test/math.test.js > flaky passes on rerun',
      ],
      passed: ['test/slug.test.js > slugify lowercases and dashes', 'test/math.test.js > math > multiply multiplies'],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'bun/flaky-rerun.txt',
    "npx bun test test/math.test.js -t '^flaky passes on rerun$'",
    'node',
    run({ framework: 'bun', passed: ['test/math.test.js > flaky passes on rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
  ['bun/no-tests.txt', 'npm test', 'node', run({ framework: 'bun', ...nothingRan })],
  [
    'bun/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'bun', failed: ['test/broken.test.js'], counts: counts(0, 1, 0), ...brokenSuite }),
  ],

  // deno test: steps nested under their test
  [
    'deno/first-run.txt',
    'npm test',
    'node',
    run({
      framework: 'deno',
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
        'test/slug.test.js > slugify lowercases and dashes',
      ],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'deno/broken-source.txt',
    'npm test',
    'node',
    run({
      framework: 'deno',
      // the failing step, not the test that holds it ("math ... FAILED (due to 1 failed step)")
      failed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > divide rounds down',
        'test/math.test.js > flaky passes on rerun',
      ],
      passed: ['test/math.test.js > math > multiply multiplies', 'test/slug.test.js > slugify lowercases and dashes'],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'deno/flaky-rerun.txt',
    "npx deno test --allow-read test/math.test.js --filter '/^flaky passes on rerun$/'",
    'node',
    run({ framework: 'deno', passed: ['test/math.test.js > flaky passes on rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
  ['deno/no-tests.txt', 'npm test', 'node', run({ framework: 'deno', ...nothingRan })],
  // the module did not type-check: the run never started
  [
    'deno/collection-error.txt',
    'npm test',
    'node',
    run({ framework: 'deno', failed: ['test/broken.test.js'], ...brokenSuite }),
  ],

  // Python unittest, plain (failures only) and -v (every test)
  [
    'unittest/first-run.txt',
    'python3 -m unittest',
    'command',
    run({
      framework: 'unittest',
      failed: [
        'tests.test_calc.TestCalc.test_divide_rounds_down',
        'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
      ],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'unittest/verbose.txt',
    'python3 -m unittest -v',
    'command',
    run({
      framework: 'unittest',
      failed: [
        'tests.test_calc.TestCalc.test_divide_rounds_down',
        'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
      ],
      passed: [
        'tests.test_calc.TestCalc.test_add',
        'tests.test_calc.TestCalc.test_multiply',
        'tests.test_slug.TestSlugify.test_lowercases_and_dashes',
      ],
      skipped: ['tests.test_slug.TestSlugify.test_keeps_unicode'],
      counts: counts(3, 2, 1),
      ...ran,
    }),
  ],
  [
    'unittest/verbose-subtest-failure.txt',
    'python3 -m unittest -v',
    'command',
    run({
      framework: 'unittest',
      failed: [
        'tests.test_calc.TestCalc.test_divide_rounds_down',
        'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
        'tests.test_calc.TestCalc.test_multiply',
      ],
      passed: ['tests.test_calc.TestCalc.test_add', 'tests.test_slug.TestSlugify.test_lowercases_and_dashes'],
      skipped: ['tests.test_slug.TestSlugify.test_keeps_unicode'],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'unittest/broken-source.txt',
    'python3 -m unittest',
    'command',
    run({
      framework: 'unittest',
      failed: [
        'tests.test_calc.TestCalc.test_add',
        'tests.test_calc.TestCalc.test_divide_rounds_down',
        'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
      ],
      counts: counts(2, 3, 1),
      ...ran,
    }),
  ],
  [
    'unittest/flaky-rerun.txt',
    'python3 -m unittest -v tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
    'command',
    run({
      framework: 'unittest',
      passed: ['tests.test_calc.TestCalc.test_flaky_passes_on_rerun'],
      counts: counts(1, 0, 0),
      ...ran,
    }),
  ],
  [
    'unittest/no-tests.txt',
    'python3 -m unittest',
    'command',
    run({ framework: 'unittest', counts: counts(0, 0, 0), ...nothingRan }),
  ],
  [
    'unittest/collection-error.txt',
    'python3 -m unittest',
    'command',
    run({ framework: 'unittest', failed: ['tests.test_divide'], counts: counts(0, 1, 0), ...brokenSuite }),
  ],

  // cargo test
  [
    'cargo/flaky-rerun.txt',
    'cargo test tests::flaky_passes_on_rerun -- --exact',
    'cargo',
    run({ framework: 'cargo', passed: ['tests::flaky_passes_on_rerun'], counts: counts(1, 0, 0), ...ran }),
  ],
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
    expect([...parsed.passed].sort()).toEqual([
      'slug::tests::lowercases_and_dashes',
      'tests::add_adds',
      'tests::multiply_multiplies',
    ]);
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
    expect(parsed).toMatchObject({
      framework: 'cargo',
      passed: [],
      counts: null,
      ranSignal: false,
      noTestsRan: false,
      collectionError: true,
    });
  });

  it('makes an absolute test path relative to the workspace the command ran in', () => {
    const output = read('node-test/collection-error.txt');
    const workspace = /# Subtest: (\/.*)\/test\/broken\.test\.js/.exec(output)?.[1];
    expect(workspace).toBeDefined();
    expect(parseTestOutput(output, { kind: 'node', workspace: workspace ?? null }).failed).toEqual([
      'test/broken.test.js',
    ]);
  });

  it('strips the colors vitest prints even when piped', () => {
    const output = read('vitest/first-run.txt');
    expect(output).toContain('\x1b[');
    expect(stripAnsi(output)).not.toContain('\x1b');
  });

  it('recognizes nothing in output that is not a test run', () => {
    const npmError =
      'npm error Missing script: "test"\nnpm error\nnpm error To see a list of scripts, run:\nnpm error   npm run\n';
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

// Shapes the fixture projects do not print, written as the runners print them.
const lines = (...text: string[]) => `${text.join('\n')}\n`;

describe('TAP 13/14 in general', () => {
  it('reads nested subtests, a test that fails by its own assertion, TODO and SKIP, and skips YAML blocks whole', () => {
    const output = lines(
      'TAP version 14',
      '# Subtest: test/a.test.js',
      '    # Subtest: outer',
      '        # Subtest: inner',
      '            # Subtest: deepest',
      '                ok 1 - should be equal',
      '                1..1',
      '            ok 1 - deepest # time=1.2ms',
      '            not ok 2 - should be equal',
      '              ---',
      '              source: |',
      '                not ok 9 - a line of source, not a result',
      '                # Subtest: nor is this',
      '              ...',
      '            1..2',
      '        not ok 1 - inner # time=2ms',
      '        1..1',
      '    not ok 1 - outer # time=3ms',
      '    ok 2 - later # TODO not done yet',
      '    not ok 3 - known bug # TODO fix it',
      '    ok 4 - not now # SKIP no network',
      '    1..4',
      'not ok 1 - test/a.test.js # time=5ms',
      '1..1',
      '# { total: 5, pass: 1, fail: 1, todo: 2, skip: 1 }',
    );
    expect(parseTestOutput(output)).toEqual(
      run({
        framework: 'tap',
        // "outer" and the file failed only through "inner": no ids of their own
        failed: ['test/a.test.js > outer > inner'],
        passed: ['test/a.test.js > outer > inner > deepest'],
        skipped: ['test/a.test.js > later', 'test/a.test.js > known bug', 'test/a.test.js > not now'],
        counts: counts(1, 1, 3),
        ...ran,
      }),
    );
  });

  it('reads flat TAP from any producer: a plan, escaped names, YAML diagnostics, a bail-out after a failure', () => {
    const output = lines(
      'TAP version 13',
      '1..4',
      'ok 1 - parses numbers',
      'not ok 2 - parses dates',
      '  ---',
      '  message: expected 2024',
      '  ...',
      'ok 3 - reads a \\# sign and a #todo-list',
      'ok 4 - skips files # SKIP no fs',
      'Bail out! database went away',
    );
    expect(parseTestOutput(output, { kind: 'node', command: 'node test/run.js' })).toEqual(
      run({
        framework: 'tap',
        failed: ['parses dates'],
        passed: ['parses numbers', 'reads a # sign and a #todo-list'],
        skipped: ['skips files'],
        counts: counts(2, 1, 1),
        ...ran,
      }),
    );
  });

  it('unheaded TAP 14 subtests: an indented block closed by its parent line', () => {
    const output = lines(
      'TAP version 14',
      '    ok 1 - child one',
      '    not ok 2 - child two',
      '    1..2',
      'not ok 1 - parent',
      '1..1',
    );
    // without "# Subtest:" headers the block holds the parent's assertions: the parent is the test
    expect(parseTestOutput(output)).toMatchObject({
      framework: 'tap',
      failed: ['parent'],
      passed: [],
      counts: counts(0, 1, 0),
      ranSignal: true,
    });
  });

  it('a bail-out before any test is a suite that did not run; "1..0" is a run with no tests', () => {
    expect(parseTestOutput(lines('TAP version 13', '1..3', 'Bail out! Could not connect to the database'))).toEqual(
      run({
        framework: 'tap',
        counts: counts(0, 0, 0),
        ...brokenSuite,
        incomplete: 'TAP output bailed out ("Bail out!") before its plan was done',
      }),
    );
    expect(parseTestOutput(lines('TAP version 14', '1..0 # no tests found'))).toEqual(
      run({ framework: 'tap', counts: counts(0, 0, 0), ...nothingRan }),
    );
  });

  it('TAP cut short before its plan is done is not "no tests ran" (the verification calls it a runner error)', () => {
    for (const cut of [
      lines('TAP version 13', '# a test that crashed'),
      lines('TAP version 14', '1..3', '# Subtest: test/a.test.js', '    1..2'),
    ]) {
      expect(parseTestOutput(cut)).toMatchObject({
        framework: 'tap',
        failed: [],
        ranSignal: false,
        noTestsRan: false,
        collectionError: false,
      });
    }
    // every test skipped is a run with nothing executed
    expect(parseTestOutput(lines('TAP version 13', '1..2', 'ok 1 - a # SKIP', 'ok 2 - b # SKIP'))).toMatchObject({
      skipped: ['a', 'b'],
      ...nothingRan,
    });
  });

  it("node:test's TAP stays node-test's, node-tap's and tape's do not", () => {
    expect(parseTestOutput(read('node-test/first-run.txt'), { kind: 'node', command: 'npx tap' }).framework).toBe(
      'node-test',
    );
    expect(parseTestOutput(read('tap/first-run.txt'), { kind: 'node', command: 'node --test' }).framework).toBe('tap');
    expect(parseTestOutput(read('tape/first-run.txt'), { kind: 'node', command: 'node --test' }).framework).toBe(
      'tape',
    );
  });
});

describe('tape', () => {
  it('a test that never ended, a todo test, a skipped assertion, and two tests of one name', () => {
    const output = lines(
      'TAP version 13',
      '# parses',
      'ok 1 should be equal',
      '# parses',
      'not ok 2 should be equal',
      '  ---',
      '    operator: equal',
      '    expected: 3',
      '    actual:   4',
      '  ...',
      '# skips',
      'ok 3 not here # SKIP',
      'ok 4 should be truthy',
      '# a parent with no assertion of its own',
      '# TODO a todo test',
      'not ok 5 should be truthy # TODO',
      '# ends not',
      'ok 6 should be truthy',
      'not ok 7 test exited without ending: ends not',
      '  ---',
      '    operator: fail',
      '  ...',
      '',
      '1..7',
      '# tests 7',
      '# pass  3',
      '# fail  2',
      '# todo  1',
    );
    // "parses" failed once: a rerun listing "parses" as passed must not excuse it, so it is not passed
    expect(parseTestOutput(output)).toEqual(
      run({
        framework: 'tape',
        failed: ['parses', 'ends not'],
        passed: ['skips'],
        skipped: ['a todo test'],
        counts: counts(1, 2, 1),
        ...ran,
      }),
    );
  });
});

describe('AVA, Jasmine, bun, deno, unittest: shapes beyond the fixtures', () => {
  it('AVA: tests still pending at a timeout failed', () => {
    const output = lines(
      '  ✔ fast one',
      '',
      '  ✘ Timed out while running tests',
      '',
      '  2 tests were pending in test/slow.test.js',
      '',
      '  ◌ slow › waits forever',
      '  ◌ slow › waits too',
      '',
      '  ─',
      '',
      '  1 test passed',
      '  2 tests remained pending after a timeout',
    );
    expect(parseTestOutput(output)).toEqual(
      run({
        framework: 'ava',
        failed: ['slow > waits forever', 'slow > waits too'],
        passed: ['fast one'],
        counts: counts(1, 2, 0),
        ...ran,
      }),
    );
  });

  it('Jasmine names no passing spec, except the one spec a rerun filtered to by its exact full name', () => {
    const output = read('jasmine/flaky-rerun.txt');
    const rerun = "npx jasmine '--filter=^math flaky passes on rerun$'";
    expect(parseTestOutput(output, { kind: 'node', command: rerun })).toEqual(
      run({ framework: 'jasmine', passed: ['math flaky passes on rerun'], counts: counts(1, 0, 0), ...ran }),
    );
    // without that command, or with a filter that is a pattern, nothing says which spec ran
    for (const command of [
      undefined,
      'npm test',
      "npx jasmine '--filter=^math flaky.*$'",
      "npx jasmine '--filter=^(?:a|math flaky passes on rerun)$'",
    ]) {
      expect(parseTestOutput(output, { kind: 'node', command }).passed).toEqual([]);
    }
    expect(
      parseTestOutput(read('jasmine/first-run.txt'), { command: "npx jasmine '--filter=^math divide rounds down$'" })
        .passed,
    ).toEqual([]);
  });

  it('Jasmine: an afterAll that throws is a failure of its suite', () => {
    const output = lines(
      'Started',
      '.F',
      '',
      'Failures:',
      '1) outer inner fails',
      '  Message:',
      '    Expected 1 to be 2.',
      '',
      'Suite error: outer',
      '  Message:',
      '    Error: after all broke',
      '',
      '2 specs, 2 failures',
      'Finished in 0.004 seconds',
    );
    expect(parseTestOutput(output)).toEqual(
      run({ framework: 'jasmine', failed: ['outer inner fails', 'outer'], counts: counts(1, 2, 0), ...ran }),
    );
  });

  it('bun: a recap of the failures after the run is not read as more tests of the last file', () => {
    const output = lines(
      'bun test v1.4.5 (a7733435c)',
      '',
      'test/a.test.js:',
      '(pass) adds [0.10ms]',
      '(fail) subtracts [0.20ms]',
      '(todo) divides',
      '',
      '1 tests failed:',
      '(fail) subtracts [0.20ms]',
      '',
      ' 1 pass',
      ' 1 todo',
      ' 1 fail',
      'Ran 3 tests across 1 file. [5.00ms]',
    );
    expect(parseTestOutput(output)).toEqual(
      run({
        framework: 'bun',
        failed: ['test/a.test.js > subtracts'],
        passed: ['test/a.test.js > adds'],
        skipped: ['test/a.test.js > divides'],
        counts: counts(1, 1, 1),
        ...ran,
      }),
    );
  });

  it("deno: a test's own failure after its steps, its console output, and a module that failed outside its tests", () => {
    const output = lines(
      'running 1 test from ./test/a.test.js',
      'outer ...',
      '  inner ... ok (1ms)',
      '------- output -------',
      'fake ... FAILED (1ms)',
      '----- output end -----',
      'outer ... FAILED (2ms)',
      'running 0 tests from ./test/b.test.js',
      'Uncaught error from ./test/b.test.js FAILED',
      '',
      ' ERRORS ',
      '',
      'outer => ./test/a.test.js:1:6',
      'error: Error: after the steps',
      '',
      ' FAILURES ',
      '',
      'outer => ./test/a.test.js:1:6',
      './test/b.test.js (uncaught error)',
      '',
      'FAILED | 0 passed (1 step) | 2 failed (3ms)',
    );
    expect(parseTestOutput(output)).toEqual(
      run({
        framework: 'deno',
        failed: ['test/a.test.js > outer', 'test/b.test.js'],
        passed: ['test/a.test.js > outer > inner'],
        counts: counts(1, 2, 0),
        ...ran,
      }),
    );
  });

  it('bun and deno output cut short (a crash) is not "no tests ran"', () => {
    const bun = parseTestOutput(lines('bun test v1.4.5 (a7733435c)', '', 'test/a.test.js:'));
    const deno = parseTestOutput(lines('running 2 tests from ./test/a.test.js', 'adds ...'));
    for (const [framework, parsed] of [
      ['bun', bun],
      ['deno', deno],
    ] as const) {
      expect(parsed).toMatchObject({
        framework,
        failed: [],
        ranSignal: false,
        noTestsRan: false,
        collectionError: false,
      });
    }
  });

  it('unittest -v: a docstring line, output before the status, an error, expected failures and unexpected successes', () => {
    const output = lines(
      'test_add (tests.test_calc.TestCalc.test_add) ... ok',
      'test_doc (tests.test_calc.TestMore.test_doc)',
      'Adds two numbers. ... noise from the test',
      'ok',
      'test_errors (tests.test_calc.TestMore.test_errors) ... ERROR',
      'test_xfail (tests.test_calc.TestMore.test_xfail) ... expected failure',
      'test_xpass (tests.test_calc.TestMore.test_xpass) ... unexpected success',
      '',
      '======================================================================',
      'ERROR: test_errors (tests.test_calc.TestMore.test_errors)',
      '----------------------------------------------------------------------',
      'Traceback (most recent call last):',
      '  File "/w/tests/test_calc.py", line 33, in test_errors',
      '    raise ValueError("boom")',
      'ValueError: boom',
      '',
      '======================================================================',
      'UNEXPECTED SUCCESS: test_xpass (tests.test_calc.TestMore.test_xpass)',
      '----------------------------------------------------------------------',
      'Ran 5 tests in 0.001s',
      '',
      'FAILED (errors=1, expected failures=1, unexpected successes=1)',
    );
    expect(parseTestOutput(output)).toEqual(
      run({
        framework: 'unittest',
        failed: ['tests.test_calc.TestMore.test_errors', 'tests.test_calc.TestMore.test_xpass'],
        passed: ['tests.test_calc.TestCalc.test_add', 'tests.test_calc.TestMore.test_doc'],
        skipped: ['tests.test_calc.TestMore.test_xfail'],
        counts: counts(2, 2, 1),
        ...ran,
      }),
    );
  });

  it('unittest before Python 3.11 names the class only; a setUpClass error is its class; 3.12 says NO TESTS RAN', () => {
    const old = lines(
      'test_add (tests.test_calc.TestCalc) ... ok',
      'test_divide (tests.test_calc.TestCalc) ... FAIL',
      '',
      '======================================================================',
      'ERROR: setUpClass (tests.test_db.TestDb)',
      '----------------------------------------------------------------------',
      'OSError: no database',
      '',
      '======================================================================',
      'FAIL: test_divide (tests.test_calc.TestCalc)',
      '----------------------------------------------------------------------',
      'AssertionError: 4 != 3',
      '',
      '----------------------------------------------------------------------',
      'Ran 2 tests in 0.000s',
      '',
      'FAILED (failures=1, errors=1)',
    );
    expect(parseTestOutput(old)).toEqual(
      run({
        framework: 'unittest',
        failed: ['tests.test_calc.TestCalc.test_divide', 'tests.test_db.TestDb'],
        passed: ['tests.test_calc.TestCalc.test_add'],
        counts: counts(0, 2, 0),
        ...ran,
      }),
    );
    expect(
      parseTestOutput(
        lines(
          '',
          '----------------------------------------------------------------------',
          'Ran 0 tests in 0.000s',
          '',
          'NO TESTS RAN',
        ),
      ),
    ).toEqual(run({ framework: 'unittest', counts: counts(0, 0, 0), ...nothingRan }));
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
        passed: [
          'tests.test_calc > test_add',
          'tests.test_calc > test_multiply[4-5-20]',
          'tests.test_calc > test_multiply[0-7-0]',
          'tests.test_slug.TestSlugify > test_lowercases_and_dashes',
        ],
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
      [
        'junit.xml',
        'reports/mocha.xml',
        'target/surefire-reports/TEST-com.example.AppTest.xml',
        'test-results/unit/TEST-api.xml',
      ].map((p) => join(dir, p)),
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
