// The parser corpus: runs each fixture project's real test command in a temp copy, parses what it printed,
// and reruns the flaky test alone. GAFFER_CAPTURE_OUTPUTS=1 also saves every output to
// test/fixtures/outputs/<framework>/<scenario>.txt for parsers.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  findJUnitReports,
  parseJUnitXml,
  parseTestOutput,
  summarizeCounts,
} from '../../src/verification/parsers/index.js';
import type { ParsedRun, TestFramework } from '../../src/verification/parsers/index.js';
import { readRun } from '../../src/verification/judge.js';
import type { SuiteRun } from '../../src/verification/run-suite.js';
import { buildSelectCommand } from '../../src/verification/select.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PROJECTS = join(ROOT, 'test', 'fixtures', 'projects');
const OUTPUTS = join(ROOT, 'test', 'fixtures', 'outputs');
const CAPTURE = process.env.GAFFER_CAPTURE_OUTPUTS === '1';
const NOT_COPIED = new Set([
  'node_modules',
  'target',
  '.venv',
  '__pycache__',
  '.pytest_cache',
  '.flaky-state',
  'junit.xml',
  'reports',
  '.tap',
]);

const temps: string[] = [];
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

/** A fresh copy of a fixture project: no flaky marker, dependencies linked from the fixture. */
function copyFixture(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `gaffer-corpus-${name}-`));
  temps.push(dir);
  const source = join(PROJECTS, name);
  cpSync(source, dir, {
    recursive: true,
    filter: (src) =>
      !NOT_COPIED.has(
        src
          .slice(source.length + 1)
          .split('/')
          .at(-1) ?? '',
      ),
  });
  if (existsSync(join(source, 'node_modules'))) symlinkSync(join(source, 'node_modules'), join(dir, 'node_modules'));
  if (existsSync(join(source, '.venv'))) symlinkSync(join(source, '.venv'), join(dir, '.venv'));
  return dir;
}

// spec 03: CI=true, TZ=UTC, PYTHONHASHSEED=0; nothing of this vitest run leaks into the child runner
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(VITEST|__VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|FLAKY_STATE_DIR$|JEST_)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, CI: 'true', TZ: 'UTC', PYTHONHASHSEED: '0' };
}

/** Runs a command through `sh -c` with stdout and stderr in one stream, as gaffer's runner reads it. */
function runShell(command: string, cwd: string): Promise<{ output: string; exitCode: number | null }> {
  return new Promise((done, fail) => {
    const child = spawn('sh', ['-c', `exec 2>&1; ${command}`], {
      cwd,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', fail);
    child.on('close', (exitCode) => done({ output: Buffer.concat(chunks).toString('utf8'), exitCode }));
  });
}

function capture(framework: string, file: string, output: string): void {
  if (!CAPTURE) return;
  mkdirSync(join(OUTPUTS, framework), { recursive: true });
  writeFileSync(join(OUTPUTS, framework, file), output);
}

const has = (command: string, args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;
const python = existsSync(join(PROJECTS, 'pytest', '.venv', 'bin', 'python')) ? '.venv/bin/python' : 'python3';
const AVAILABLE: Record<string, string | null> = {
  node: null,
  pytest:
    has(join(PROJECTS, 'pytest', python), ['-c', 'import pytest']) || has(python, ['-c', 'import pytest'])
      ? null
      : 'pytest is not importable (apt-get install python3-pytest python3-venv, then scripts/setup-fixtures.sh)',
  go: has('go', ['version']) ? null : 'go is not installed (apt-get install golang-go)',
  cargo: has('cargo', ['--version']) ? null : 'cargo is not installed',
  unittest: has('python3', ['--version']) ? null : 'python3 is not installed',
};
const npmReady = (name: string) =>
  existsSync(join(PROJECTS, name, 'node_modules'))
    ? null
    : `${name} fixture has no node_modules (run scripts/setup-fixtures.sh)`;

interface Scenario {
  name: string;
  command: string;
  /** Changes the fresh copy before the run (break a source file, remove the tests…). */
  prepare?: (dir: string) => void;
  /** 'any' where the runner's versions differ (unittest: "Ran 0 tests" exits 0 before Python 3.12, 5 after). */
  exitCode: 'zero' | 'nonzero' | 'any';
  expected: Partial<ParsedRun>;
  /**
   * How the verification reads the run on its own (spec 03, the SWE-bench guards): failing ids, inconclusive
   * (no tests ran, collection errors), or a runner error (a non-zero exit with no test named). Default:
   * "failed" when the scenario expects failing ids, else "inconclusive".
   */
  reads?: 'failed' | 'inconclusive' | 'runner error';
}

interface Fixture {
  framework: TestFramework;
  kind: string;
  skip: string | null;
  /** The command gaffer's detection runs for this project. */
  command: string;
  firstRun: Partial<ParsedRun>;
  flakyId: string;
  summary: string;
  scenarios: Scenario[];
  /** A report written by the run: the command and the parse of the XML it left. */
  junit?: { command: string; expected: Partial<ParsedRun> };
}

const write = (dir: string, path: string, text: string) => {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
};
const edit = (dir: string, path: string, from: string, to: string) => {
  const text = readFileSync(join(dir, path), 'utf8');
  if (!text.includes(from)) throw new Error(`${path} does not contain ${JSON.stringify(from)}`);
  writeFileSync(join(dir, path), text.replace(from, to));
};
const removeTests = (dir: string, path: string) => rmSync(join(dir, path), { recursive: true, force: true });

const NODE_COUNTS = { passed: 3, failed: 2, skipped: 1 };

const FIXTURES: Fixture[] = [
  {
    framework: 'node-test',
    kind: 'node',
    skip: null,
    command: 'npm test',
    firstRun: {
      failed: ['divide rounds down', 'flaky passes on rerun'],
      passed: ['math > add adds', 'math > multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'tap-reporter',
        command: 'node --test --test-reporter=tap',
        exitCode: 'nonzero',
        expected: {
          failed: ['divide rounds down', 'flaky passes on rerun'],
          passed: ['math > add adds', 'math > multiply multiplies', 'slugify lowercases and dashes'],
          skipped: ['slugify keeps unicode'],
          counts: NODE_COUNTS,
          ranSignal: true,
        },
      },
      {
        name: 'spec-reporter',
        command: 'node --test --test-reporter=spec',
        exitCode: 'nonzero',
        expected: {
          failed: ['divide rounds down', 'flaky passes on rerun'],
          passed: ['math > add adds', 'math > multiply multiplies', 'slugify lowercases and dashes'],
          skipped: ['slugify keeps unicode'],
          counts: NODE_COUNTS,
          ranSignal: true,
        },
      },
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: ['math > add adds', 'divide rounds down', 'flaky passes on rerun'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'zero',
        expected: {
          failed: [],
          counts: { passed: 0, failed: 0, skipped: 0 },
          ranSignal: false,
          noTestsRan: true,
          collectionError: false,
        },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(dir, 'test/broken.test.js', "import { divide } from '../src/divide.js';\n");
        },
        exitCode: 'nonzero',
        expected: { failed: ['test/broken.test.js'], ranSignal: false, noTestsRan: false, collectionError: true },
      },
    ],
  },
  {
    framework: 'vitest',
    kind: 'node',
    skip: npmReady('vitest'),
    command: 'npm test',
    firstRun: {
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      // the default reporter does not list every passing test
      passed: [],
      counts: NODE_COUNTS,
    },
    flakyId: 'test/math.test.js > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'verbose-reporter',
        command: 'npx vitest run --reporter=verbose',
        exitCode: 'nonzero',
        expected: {
          failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
          passed: [
            'test/math.test.js > math > add adds',
            'test/math.test.js > math > multiply multiplies',
            'test/slug.test.js > slugify lowercases and dashes',
          ],
          skipped: ['test/slug.test.js > slugify keeps unicode'],
          counts: NODE_COUNTS,
        },
      },
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'test/math.test.js > math > add adds',
            'test/math.test.js > divide rounds down',
            'test/math.test.js > flaky passes on rerun',
          ],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "import { divide } from '../src/divide.js';\nimport { test } from 'vitest';\ntest('divides', () => divide(1, 2));\n",
          );
        },
        exitCode: 'nonzero',
        expected: { failed: ['test/broken.test.js'], ranSignal: false, noTestsRan: false, collectionError: true },
      },
    ],
  },
  {
    framework: 'jest',
    kind: 'node',
    skip: npmReady('jest'),
    command: 'npm test',
    firstRun: {
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [],
      counts: NODE_COUNTS,
    },
    flakyId: 'test/math.test.js > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'single-file',
        command: 'npx jest test/math.test.js',
        exitCode: 'nonzero',
        expected: {
          failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
          // one file: jest prints the whole tree, so every passing test is listed
          passed: ['test/math.test.js > math > add adds', 'test/math.test.js > math > multiply multiplies'],
          counts: { passed: 2, failed: 2, skipped: 0 },
        },
      },
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'test/math.test.js > math > add adds',
            'test/math.test.js > divide rounds down',
            'test/math.test.js > flaky passes on rerun',
          ],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "const { divide } = require('../src/divide.js');\ntest('divides', () => divide(1, 2));\n",
          );
        },
        exitCode: 'nonzero',
        expected: { failed: ['test/broken.test.js'], ranSignal: false, noTestsRan: false, collectionError: true },
      },
    ],
    junit: {
      command: 'npx jest --reporters=default --reporters=jest-junit',
      expected: {
        framework: 'junit',
        failed: ['divide rounds down', 'flaky passes on rerun'],
        passed: ['math add adds', 'math multiply multiplies', 'slugify lowercases and dashes'],
        skipped: ['slugify keeps unicode'],
        counts: NODE_COUNTS,
      },
    },
  },
  {
    framework: 'mocha',
    kind: 'node',
    skip: npmReady('mocha'),
    command: 'npm test',
    firstRun: {
      failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
      passed: ['math > add adds', 'math > multiply multiplies', 'slugify > lowercases and dashes'],
      skipped: ['slugify > keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'math > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: ['math > add adds', 'math > divide rounds down', 'math > flaky passes on rerun'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.spec.js',
            "import { divide } from '../src/divide.js';\nit('divides', () => divide(1, 2));\n",
          );
        },
        exitCode: 'nonzero',
        expected: { failed: [], ranSignal: false, noTestsRan: false, collectionError: true },
      },
    ],
    junit: {
      command: 'npx mocha --reporter xunit --reporter-option output=reports/mocha.xml',
      expected: {
        framework: 'junit',
        failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
        passed: ['math > add adds', 'math > multiply multiplies', 'slugify > lowercases and dashes'],
        skipped: ['slugify > keeps unicode'],
        counts: NODE_COUNTS,
      },
    },
  },
  {
    framework: 'pytest',
    kind: 'pytest',
    skip: AVAILABLE.pytest ?? null,
    command: `${python} -m pytest -q -rA`,
    firstRun: {
      failed: ['tests/test_calc.py::test_divide_rounds_down', 'tests/test_calc.py::test_flaky_passes_on_rerun'],
      passed: [
        'tests/test_calc.py::test_add',
        'tests/test_calc.py::test_multiply[4-5-20]',
        'tests/test_calc.py::test_multiply[0-7-0]',
        'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes',
      ],
      skipped: ['tests/test_slug.py:10'],
      counts: { passed: 4, failed: 2, skipped: 1 },
    },
    flakyId: 'tests/test_calc.py::test_flaky_passes_on_rerun',
    summary: '2 failed, 4 passed, 1 skipped',
    scenarios: [
      {
        name: 'verbose',
        command: `${python} -m pytest -v`,
        exitCode: 'nonzero',
        expected: {
          failed: ['tests/test_calc.py::test_divide_rounds_down', 'tests/test_calc.py::test_flaky_passes_on_rerun'],
          passed: [
            'tests/test_calc.py::test_add',
            'tests/test_calc.py::test_multiply[4-5-20]',
            'tests/test_calc.py::test_multiply[0-7-0]',
            'tests/test_slug.py::TestSlugify::test_lowercases_and_dashes',
          ],
          skipped: ['tests/test_slug.py::TestSlugify::test_keeps_unicode'],
          counts: { passed: 4, failed: 2, skipped: 1 },
          ranSignal: true,
        },
      },
      {
        name: 'broken-source',
        command: `${python} -m pytest -q -rA`,
        prepare: (dir) => edit(dir, 'calc.py', 'return a + b', 'return a - b'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'tests/test_calc.py::test_add',
            'tests/test_calc.py::test_divide_rounds_down',
            'tests/test_calc.py::test_flaky_passes_on_rerun',
          ],
          counts: { passed: 3, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: `${python} -m pytest -q -rA`,
        prepare: (dir) => {
          rmSync(join(dir, 'tests', 'test_calc.py'));
          rmSync(join(dir, 'tests', 'test_slug.py'));
        },
        exitCode: 'nonzero',
        expected: { failed: [], passed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: `${python} -m pytest -q -rA`,
        prepare: (dir) =>
          write(
            dir,
            'tests/test_divide.py',
            'from calc import divide\n\n\ndef test_divide():\n    assert divide(1, 2) == 0.5\n',
          ),
        exitCode: 'nonzero',
        expected: {
          failed: ['tests/test_divide.py'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
    junit: {
      command: `${python} -m pytest -q --junitxml=reports/junit.xml`,
      expected: {
        framework: 'junit',
        failed: ['tests.test_calc > test_divide_rounds_down', 'tests.test_calc > test_flaky_passes_on_rerun'],
        passed: [
          'tests.test_calc > test_add',
          'tests.test_calc > test_multiply[4-5-20]',
          'tests.test_calc > test_multiply[0-7-0]',
          'tests.test_slug.TestSlugify > test_lowercases_and_dashes',
        ],
        skipped: ['tests.test_slug.TestSlugify > test_keeps_unicode'],
        counts: { passed: 4, failed: 2, skipped: 1 },
      },
    },
  },
  {
    framework: 'go',
    kind: 'go',
    skip: AVAILABLE.go ?? null,
    command: 'go test -json -count=1 ./...',
    firstRun: {
      failed: [
        'example.com/gafferfixture/calc.TestDivideRoundsDown',
        'example.com/gafferfixture/calc.TestFlakyPassesOnRerun',
      ],
      passed: [
        'example.com/gafferfixture/calc.TestAdd',
        'example.com/gafferfixture/calc.TestMultiply/small',
        'example.com/gafferfixture/calc.TestMultiply/zero',
        'example.com/gafferfixture/calc.TestMultiply',
        'example.com/gafferfixture/slug.TestSlugifyLowercasesAndDashes',
      ],
      skipped: ['example.com/gafferfixture/slug.TestSlugifyKeepsUnicode'],
      counts: { passed: 5, failed: 2, skipped: 1 },
    },
    flakyId: 'example.com/gafferfixture/calc.TestFlakyPassesOnRerun',
    summary: '2 failed, 5 passed, 1 skipped',
    scenarios: [
      {
        name: 'plain',
        command: 'go test -count=1 ./...',
        exitCode: 'nonzero',
        expected: {
          failed: [
            'example.com/gafferfixture/calc.TestDivideRoundsDown',
            'example.com/gafferfixture/calc.TestFlakyPassesOnRerun',
          ],
          passed: [],
          counts: null,
          ranSignal: true,
        },
      },
      {
        name: 'broken-source',
        command: 'go test -json -count=1 ./...',
        prepare: (dir) => edit(dir, 'calc/calc.go', 'return a + b', 'return a - b'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'example.com/gafferfixture/calc.TestAdd',
            'example.com/gafferfixture/calc.TestDivideRoundsDown',
            'example.com/gafferfixture/calc.TestFlakyPassesOnRerun',
          ],
          counts: { passed: 4, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'build-failed-one-package',
        command: 'go test -json -count=1 ./...',
        prepare: (dir) => write(dir, 'calc/divide.go', 'package calc\n\nfunc Divide(a, b int) int { return "half" }\n'),
        exitCode: 'nonzero',
        expected: { failed: ['example.com/gafferfixture/calc'], ranSignal: true, collectionError: false },
      },
      {
        name: 'no-tests',
        command: 'go test -json -count=1 ./...',
        prepare: (dir) => {
          for (const file of ['calc/calc_test.go', 'calc/flaky_test.go', 'slug/slug_test.go']) rmSync(join(dir, file));
        },
        exitCode: 'zero',
        expected: { failed: [], passed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'go test -json -count=1 ./...',
        prepare: (dir) => {
          write(
            dir,
            'calc/divide_test.go',
            'package calc\n\nimport "testing"\n\nfunc TestDivide(t *testing.T) { _ = Divide(1, 2) }\n',
          );
          write(
            dir,
            'slug/title_test.go',
            'package slug\n\nimport "testing"\n\nfunc TestTitle(t *testing.T) { _ = Title("a b") }\n',
          );
        },
        exitCode: 'nonzero',
        expected: {
          failed: ['example.com/gafferfixture/calc', 'example.com/gafferfixture/slug'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
  {
    framework: 'cargo',
    kind: 'cargo',
    skip: AVAILABLE.cargo ?? null,
    command: 'cargo test',
    firstRun: {
      failed: ['tests::divide_rounds_down', 'tests::flaky_passes_on_rerun'],
      passed: ['slug::tests::lowercases_and_dashes', 'tests::add_adds', 'tests::multiply_multiplies'],
      skipped: ['slug::tests::keeps_unicode'],
      counts: { passed: 3, failed: 2, skipped: 1 },
    },
    flakyId: 'tests::flaky_passes_on_rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'cargo test',
        prepare: (dir) => edit(dir, 'src/lib.rs', '    a + b\n', '    a - b\n'),
        exitCode: 'nonzero',
        expected: {
          failed: ['tests::add_adds', 'tests::divide_rounds_down', 'tests::flaky_passes_on_rerun'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'cargo test',
        prepare: (dir) => {
          write(
            dir,
            'src/lib.rs',
            '//! Nothing to test yet.\n\n/// Returns a + b.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n',
          );
          rmSync(join(dir, 'src', 'slug.rs'));
        },
        exitCode: 'zero',
        expected: {
          failed: [],
          passed: [],
          counts: { passed: 0, failed: 0, skipped: 0 },
          ranSignal: false,
          noTestsRan: true,
          collectionError: false,
        },
      },
      {
        name: 'collection-error',
        command: 'cargo test',
        prepare: (dir) =>
          edit(
            dir,
            'src/slug.rs',
            'pub fn slugify(text: &str) -> String {',
            'pub fn divide(a: i64) -> i64 {\n    a / "2"\n}\n\npub fn slugify(text: &str) -> String {',
          ),
        exitCode: 'nonzero',
        expected: {
          failed: ['gaffer_fixture (lib)', 'gaffer_fixture (lib test)'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
  {
    framework: 'tape',
    kind: 'node',
    skip: npmReady('tape'),
    command: 'npm test',
    firstRun: {
      // tape prints test names only: no file, no parent
      failed: ['divide rounds down', 'flaky passes on rerun'],
      passed: ['add adds', 'multiply multiplies', 'slugify lowercases and dashes'],
      skipped: ['slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: ['add adds', 'divide rounds down', 'flaky passes on rerun'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'zero',
        expected: {
          failed: [],
          counts: { passed: 0, failed: 0, skipped: 0 },
          ranSignal: false,
          noTestsRan: true,
          collectionError: false,
        },
      },
      {
        // node dies on the import before tape prints a line: nothing to parse, so a runner error
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "import test from 'tape';\nimport { divide } from '../src/divide.js';\ntest('divides', (t) => t.end());\n",
          );
        },
        exitCode: 'nonzero',
        expected: { framework: null, failed: [], ranSignal: false, noTestsRan: false, collectionError: false },
        reads: 'runner error',
      },
    ],
  },
  {
    framework: 'tap',
    kind: 'node',
    skip: npmReady('tap'),
    command: 'npm test',
    firstRun: {
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
        'test/slug.test.js > slugify lowercases and dashes',
      ],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'test/math.test.js > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'test/math.test.js > math > add adds',
            'test/math.test.js > divide rounds down',
            'test/math.test.js > flaky passes on rerun',
          ],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], passed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "import t from 'tap';\nimport { divide } from '../src/divide.js';\nt.test('divides', async (t) => t.equal(divide(1, 2), 0.5));\n",
          );
        },
        exitCode: 'nonzero',
        expected: {
          failed: ['test/broken.test.js'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
  {
    framework: 'ava',
    kind: 'node',
    skip: npmReady('ava'),
    command: 'npm test',
    firstRun: {
      // AVA prefixes each title with its file once there is more than one
      failed: ['math > divide rounds down', 'math > flaky passes on rerun'],
      passed: ['math > add adds', 'math > multiply multiplies', 'slug > slugify lowercases and dashes'],
      skipped: ['slug > slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'math > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: ['math > add adds', 'math > divide rounds down', 'math > flaky passes on rerun'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], passed: [], counts: null, ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "import test from 'ava';\nimport { divide } from '../src/divide.js';\ntest('divides', (t) => t.is(divide(1, 2), 0.5));\n",
          );
        },
        exitCode: 'nonzero',
        expected: {
          failed: ['test/broken.test.js'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
  {
    framework: 'jasmine',
    kind: 'node',
    skip: npmReady('jasmine'),
    command: 'npm test',
    firstRun: {
      // Jasmine names failing and pending specs, never passing ones
      failed: ['math divide rounds down', 'math flaky passes on rerun'],
      passed: [],
      skipped: ['slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'math flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: ['math add adds', 'math divide rounds down', 'math flaky passes on rerun'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => {
          rmSync(join(dir, 'spec', 'math.spec.js'));
          rmSync(join(dir, 'spec', 'slug.spec.js'));
        },
        exitCode: 'nonzero',
        expected: { failed: [], ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        // node's import error, printed before Jasmine's reporter starts: a runner error
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) =>
          write(
            dir,
            'spec/broken.spec.js',
            "import { divide } from '../src/divide.js';\nit('divides', () => expect(divide(1, 2)).toBe(0.5));\n",
          ),
        exitCode: 'nonzero',
        expected: { framework: null, failed: [], ranSignal: false, noTestsRan: false, collectionError: false },
        reads: 'runner error',
      },
    ],
  },
  {
    framework: 'bun',
    kind: 'node',
    skip: npmReady('bun'),
    command: 'npm test',
    firstRun: {
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
        'test/slug.test.js > slugify lowercases and dashes',
      ],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'test/math.test.js > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'test/math.test.js > math > add adds',
            'test/math.test.js > divide rounds down',
            'test/math.test.js > flaky passes on rerun',
          ],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], passed: [], counts: null, ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "import { expect, test } from 'bun:test';\nimport { divide } from '../src/divide.js';\ntest('divides', () => expect(divide(1, 2)).toBe(0.5));\n",
          );
        },
        exitCode: 'nonzero',
        expected: {
          failed: ['test/broken.test.js'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
  {
    framework: 'deno',
    kind: 'node',
    skip: npmReady('deno'),
    command: 'npm test',
    firstRun: {
      failed: ['test/math.test.js > divide rounds down', 'test/math.test.js > flaky passes on rerun'],
      passed: [
        'test/math.test.js > math > add adds',
        'test/math.test.js > math > multiply multiplies',
        'test/slug.test.js > slugify lowercases and dashes',
      ],
      skipped: ['test/slug.test.js > slugify keeps unicode'],
      counts: NODE_COUNTS,
    },
    flakyId: 'test/math.test.js > flaky passes on rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        // a failing step: the step is the failure, not the test that holds it
        name: 'broken-source',
        command: 'npm test',
        prepare: (dir) => edit(dir, 'src/math.js', 'return a + b;', 'return a - b;'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'test/math.test.js > math > add adds',
            'test/math.test.js > divide rounds down',
            'test/math.test.js > flaky passes on rerun',
          ],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'npm test',
        prepare: (dir) => removeTests(dir, 'test'),
        exitCode: 'nonzero',
        expected: { failed: [], passed: [], counts: null, ranSignal: false, noTestsRan: true, collectionError: false },
      },
      {
        name: 'collection-error',
        command: 'npm test',
        prepare: (dir) => {
          removeTests(dir, 'test');
          write(
            dir,
            'test/broken.test.js',
            "import { divide } from '../src/divide.js';\nDeno.test('divides', () => divide(1, 2));\n",
          );
        },
        exitCode: 'nonzero',
        expected: {
          failed: ['test/broken.test.js'],
          passed: [],
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
  {
    framework: 'unittest',
    kind: 'command',
    skip: AVAILABLE.unittest ?? null,
    command: 'python3 -m unittest',
    firstRun: {
      // without -v unittest names failures only
      failed: [
        'tests.test_calc.TestCalc.test_divide_rounds_down',
        'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
      ],
      passed: [],
      skipped: [],
      counts: NODE_COUNTS,
    },
    flakyId: 'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
    summary: '2 failed, 3 passed, 1 skipped',
    scenarios: [
      {
        name: 'verbose',
        command: 'python3 -m unittest -v',
        exitCode: 'nonzero',
        expected: {
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
          counts: NODE_COUNTS,
          ranSignal: true,
        },
      },
      {
        // a failing subtest fails its test
        name: 'verbose-subtest-failure',
        command: 'python3 -m unittest -v',
        prepare: (dir) => edit(dir, 'tests/test_calc.py', '(0, 7, 0)', '(0, 7, 1)'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'tests.test_calc.TestCalc.test_divide_rounds_down',
            'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
            'tests.test_calc.TestCalc.test_multiply',
          ],
          passed: ['tests.test_calc.TestCalc.test_add', 'tests.test_slug.TestSlugify.test_lowercases_and_dashes'],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'broken-source',
        command: 'python3 -m unittest',
        prepare: (dir) => edit(dir, 'calc.py', 'return a + b', 'return a - b'),
        exitCode: 'nonzero',
        expected: {
          failed: [
            'tests.test_calc.TestCalc.test_add',
            'tests.test_calc.TestCalc.test_divide_rounds_down',
            'tests.test_calc.TestCalc.test_flaky_passes_on_rerun',
          ],
          counts: { passed: 2, failed: 3, skipped: 1 },
        },
      },
      {
        name: 'no-tests',
        command: 'python3 -m unittest',
        prepare: (dir) => {
          rmSync(join(dir, 'tests', 'test_calc.py'));
          rmSync(join(dir, 'tests', 'test_slug.py'));
        },
        exitCode: 'any',
        expected: {
          failed: [],
          passed: [],
          counts: { passed: 0, failed: 0, skipped: 0 },
          ranSignal: false,
          noTestsRan: true,
          collectionError: false,
        },
      },
      {
        name: 'collection-error',
        command: 'python3 -m unittest',
        prepare: (dir) => {
          rmSync(join(dir, 'tests', 'test_calc.py'));
          rmSync(join(dir, 'tests', 'test_slug.py'));
          write(
            dir,
            'tests/test_divide.py',
            'import unittest\n\nfrom calc import divide\n\n\nclass TestDivide(unittest.TestCase):\n    def test_divide(self):\n        self.assertEqual(divide(1, 2), 0.5)\n',
          );
        },
        exitCode: 'nonzero',
        expected: {
          failed: ['tests.test_divide'],
          passed: [],
          counts: { passed: 0, failed: 1, skipped: 0 },
          ranSignal: false,
          noTestsRan: false,
          collectionError: true,
        },
      },
    ],
  },
];

const sorted = (ids: string[] | undefined) => [...(ids ?? [])].sort();

/** A finished run as the verification sees it. */
function suiteRun(command: string, result: { output: string; exitCode: number | null }, parsed: ParsedRun): SuiteRun {
  return {
    command,
    exitCode: result.exitCode,
    signal: null,
    timedOut: false,
    isCancelled: false,
    cause: null,
    durationMs: 0,
    tail: result.output.slice(-1500),
    parsed,
    landmarkSeen: undefined,
  };
}

// Ids are in output order, and parallel runners (vitest and jest files, go packages, cargo threads) finish
// in a different order from run to run: compare the lists as sets, with every id exactly once.
// parsers.test.ts checks the order on the captured outputs.
function expectRun(run: ParsedRun, expected: Partial<ParsedRun>): void {
  for (const [key, value] of Object.entries(expected)) {
    const actual = run[key as keyof ParsedRun];
    if (Array.isArray(value)) expect(sorted(actual as string[]), key).toEqual(sorted(value as string[]));
    else expect(actual, key).toEqual(value);
  }
}

describe.each(FIXTURES)('the $framework fixture', (fixture) => {
  const skip = fixture.skip;
  const hint = (command: string, workspace: string) => ({ kind: fixture.kind, command, workspace });
  const framework = fixture.framework;

  it.skipIf(skip !== null)(
    `first run fails the pre-existing and the flaky test; the flaky one passes alone${skip ? ` (skipped: ${skip})` : ''}`,
    async () => {
      const dir = copyFixture(framework);
      const first = await runShell(fixture.command, dir);
      capture(framework, 'first-run.txt', first.output);
      const run = parseTestOutput(first.output, hint(fixture.command, dir));
      expect(first.exitCode, first.output).not.toBe(0);
      expectRun(run, { framework, ranSignal: true, noTestsRan: false, collectionError: false, ...fixture.firstRun });
      expect(summarizeCounts(run)).toBe(fixture.summary);

      const rerun = buildSelectCommand(framework, fixture.command, [fixture.flakyId], { workspace: dir });
      expect(rerun).not.toBeNull();
      const second = await runShell(rerun ?? '', dir);
      capture(framework, 'flaky-rerun.txt', second.output);
      const rerunRun = parseTestOutput(second.output, hint(rerun ?? '', dir));
      expect(second.exitCode, second.output).toBe(0);
      expect(rerunRun.failed).toEqual([]);
      expect(rerunRun.counts?.passed ?? rerunRun.passed.length, second.output).toBeGreaterThanOrEqual(1);
      expect(rerunRun.ranSignal).toBe(true);
      // the rerun ran the flaky test alone: nothing else passed; where passing tests are named, it is named
      if (rerunRun.counts) expect(rerunRun.counts.passed, second.output).toBe(1);
      if (rerunRun.passed.length > 0) expect(rerunRun.passed, second.output).toEqual([fixture.flakyId]);
    },
  );

  it.skipIf(skip !== null).each(fixture.scenarios)(`$name`, async (scenario) => {
    const dir = copyFixture(framework);
    scenario.prepare?.(dir);
    const result = await runShell(scenario.command, dir);
    capture(framework, `${scenario.name}.txt`, result.output);
    if (scenario.exitCode === 'zero') expect(result.exitCode, result.output).toBe(0);
    else if (scenario.exitCode === 'nonzero') expect(result.exitCode, result.output).not.toBe(0);
    const parsed = parseTestOutput(result.output, hint(scenario.command, dir));
    expectRun(parsed, { framework, ...scenario.expected });

    // the SWE-bench guards, for every format: what the verification makes of this run on its own
    const reading = readRun(suiteRun(scenario.command, result, parsed), {
      kind: fixture.kind,
      timeoutS: 60,
      expectedOutput: null,
    });
    const reads = scenario.reads ?? ((scenario.expected.failed ?? []).length > 0 ? 'failed' : 'inconclusive');
    if (reads === 'failed')
      expect(reading, result.output).toMatchObject({
        ok: false,
        inconclusive: false,
        runnerError: false,
        failures: parsed.failed,
      });
    else if (reads === 'inconclusive')
      expect(reading, result.output).toMatchObject({ ok: null, inconclusive: true, failures: [] });
    else
      expect(reading, result.output).toMatchObject({
        ok: false,
        inconclusive: false,
        runnerError: true,
        failures: ['<runner error>'],
      });
  });

  const junit = fixture.junit;
  if (!junit) return;
  it.skipIf(skip !== null)('the JUnit report written by the run is found and read', async () => {
    const dir = copyFixture(framework);
    const since = Date.now() - 1;
    expect(findJUnitReports(dir, since)).toEqual([]);
    const result = await runShell(junit.command, dir);
    const reports = findJUnitReports(dir, since);
    expect(reports, result.output).toHaveLength(1);
    const xml = readFileSync(reports[0] ?? '', 'utf8');
    capture(framework, 'junit-report.xml', xml);
    expectRun(parseJUnitXml(xml), junit.expected);
    // a report older than the run is not this run's
    expect(findJUnitReports(dir, Date.now() + 60_000)).toEqual([]);
  });
});
