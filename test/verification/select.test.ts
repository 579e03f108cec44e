import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTestOutput } from '../../src/verification/parsers/index.js';
import type { TestFramework } from '../../src/verification/parsers/index.js';
import { buildSelectCommand, shellQuote } from '../../src/verification/select.js';

const PROJECTS = resolve(import.meta.dirname, '..', 'fixtures', 'projects');
const temps: string[] = [];
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

const shellEcho = (quoted: string) => spawnSync('sh', ['-c', `printf '%s' ${quoted}`], { encoding: 'utf8' }).stdout;

describe('shellQuote', () => {
  it.each([
    'plain',
    'tests/test_api.py::test_x[a-b]',
    'two words',
    "it's",
    '$HOME `id` $(id) \\ "q"',
    '^(?:math )?add adds$',
    '',
    'new\nline',
    '*.js',
  ])('the shell reads %j back unchanged', (arg) => {
    expect(shellEcho(shellQuote(arg))).toBe(arg);
  });

  it('leaves safe words bare', () => {
    expect(shellQuote('tests/test_a.py::test_b')).toBe('tests/test_a.py::test_b');
    expect(shellQuote('--exact')).toBe('--exact');
  });
});

describe('buildSelectCommand', () => {
  it('node:test: an anchored name pattern that also matches "suite test" (Node 22 and later)', () => {
    expect(buildSelectCommand('node-test', 'npm test', ['flaky passes on rerun'])).toBe(
      "node --test '--test-name-pattern=^flaky passes on rerun$'",
    );
    expect(buildSelectCommand('node-test', 'npm test', ['math > add adds', 'divide rounds down'])).toBe(
      "node --test '--test-name-pattern=^(?:(?:math )?add adds|divide rounds down)$'",
    );
  });

  it("node:test: keeps the project's own node --test command and runs the files an id names", () => {
    expect(buildSelectCommand('node-test', 'node --test --import tsx test/', ['a (b)'])).toBe(
      "node --test --import tsx test/ '--test-name-pattern=^a \\(b\\)$'",
    );
    expect(buildSelectCommand('node-test', 'npm test', ['test/broken.test.js'])).toBe(
      'node --test test/broken.test.js',
    );
    expect(buildSelectCommand('node-test', 'npm test', ['test/a.test.js > suite > case'])).toBe(
      "node --test '--test-name-pattern=^(?:suite )?case$' test/a.test.js",
    );
  });

  it('vitest and jest: the files, then -t with the full name', () => {
    expect(buildSelectCommand('vitest', 'npm test', ['test/math.test.js > math > add adds'])).toBe(
      "npx vitest run --reporter=verbose test/math.test.js -t '^math add adds$'",
    );
    expect(buildSelectCommand('jest', 'npm test', ['test/a.test.js > x', 'test/b.test.js > y.z'])).toBe(
      "npx jest --verbose test/a.test.js test/b.test.js -t '^(?:x|y\\.z)$'",
    );
    // a file that failed to load: run the file
    expect(buildSelectCommand('vitest', 'npm test', ['test/broken.test.js'])).toBe(
      'npx vitest run --reporter=verbose test/broken.test.js',
    );
  });

  it('a test name that ends like a file name is still a name', () => {
    expect(buildSelectCommand('node-test', 'npm test', ['reads config.js > works'])).toBe(
      "node --test '--test-name-pattern=^(?:reads config\\.js )?works$'",
    );
  });

  it('mocha: --grep with the full title', () => {
    // through the script: its flags (`-u tdd`, `--require`) are kept
    expect(buildSelectCommand('mocha', 'npm test', ['math > flaky passes on rerun'])).toBe(
      "npm test -- --grep '^math flaky passes on rerun$'",
    );
    expect(buildSelectCommand('mocha', 'npx mocha -u tdd', ['math > flaky passes on rerun'])).toBe(
      "npx mocha --grep '^math flaky passes on rerun$'",
    );
  });

  it('an id cut at 200 chars selects by its prefix', () => {
    expect(buildSelectCommand('vitest', 'npm test', ['test/a.test.js > very long…'])).toBe(
      "npx vitest run --reporter=verbose test/a.test.js -t '^very long.*$'",
    );
  });

  it("pytest: the base command's python and the node ids", () => {
    expect(
      buildSelectCommand('pytest', '.venv/bin/python -m pytest -q -rA', [
        'tests/test_a.py::test_x[a b]',
        'tests/test_b.py::T::test_y',
      ]),
    ).toBe(".venv/bin/python -m pytest -q -rA 'tests/test_a.py::test_x[a b]' tests/test_b.py::T::test_y");
    expect(buildSelectCommand('pytest', 'make test', ['tests/test_a.py::test_x'])).toBe(
      'python3 -m pytest -q -rA tests/test_a.py::test_x',
    );
  });

  it("pytest: the workspace's .venv when the base command names no python", () => {
    const dir = mkdtempSync(join(tmpdir(), 'gaffer-select-'));
    temps.push(dir);
    mkdirSync(join(dir, '.venv', 'bin'), { recursive: true });
    writeFileSync(join(dir, '.venv', 'bin', 'python'), '');
    expect(buildSelectCommand('pytest', 'pytest', ['tests/test_a.py::test_x'], { workspace: dir })).toBe(
      '.venv/bin/python -m pytest -q -rA tests/test_a.py::test_x',
    );
  });

  it('go: -run per level over the packages; a package-level failure reruns its package', () => {
    const pkg = 'example.com/m/calc';
    expect(buildSelectCommand('go', 'go test ./...', [`${pkg}.TestA`, `${pkg}.TestB`])).toBe(
      `go test -json -count=1 -run '^(TestA|TestB)$' ${pkg}`,
    );
    expect(buildSelectCommand('go', 'go test ./...', [`${pkg}.TestMultiply/small`, 'example.com/m/slug.TestX/y'])).toBe(
      `go test -json -count=1 -run '^(TestMultiply|TestX)$/^(small|y)$' ${pkg} example.com/m/slug`,
    );
    expect(buildSelectCommand('go', 'go test ./...', [`${pkg}.TestA`, 'example.com/m/slug'])).toBe(
      `go test -json -count=1 ${pkg} example.com/m/slug`,
    );
  });

  it('cargo: --exact names; a target that did not compile names no test', () => {
    expect(buildSelectCommand('cargo', 'cargo test', ['tests::flaky'])).toBe('cargo test tests::flaky -- --exact');
    expect(buildSelectCommand('cargo', 'cargo test --workspace -- --nocapture', ['a::b', 'c::d'])).toBe(
      'cargo test --workspace -- --exact a::b c::d',
    );
    expect(buildSelectCommand('cargo', 'cargo test', ['crate (lib test)'])).toBeNull();
  });

  it('tape: the files that define the tests, found by their quoted names (tape cannot select by name)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gaffer-select-tape-'));
    temps.push(dir);
    const files: Record<string, string> = {
      'test/a.test.js': "test('adds', (t) => t.end());\n",
      'test/unit/b.test.js': 'test("subtracts", (t) => t.end());\n',
      'test.js': 'test(`a very long name that goes on`, (t) => t.end());\n',
      'test/c.test.js': "test('adds more', (t) => t.end());\n",
      'node_modules/dep/test/a.js': "test('adds', (t) => t.end());\n",
      'src/adds.js': "export const name = 'adds';\n",
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    expect(buildSelectCommand('tape', 'npm test', ['adds'], { workspace: dir })).toBe('npx tape test/a.test.js');
    expect(buildSelectCommand('tape', 'npm test', ['subtracts', 'adds'], { workspace: dir })).toBe(
      'npx tape test/a.test.js test/unit/b.test.js',
    );
    expect(buildSelectCommand('tape', 'npm test', ['a very long…'], { workspace: dir })).toBe('npx tape test.js');
    expect(buildSelectCommand('tape', 'npm test', ['divides'], { workspace: dir })).toBeNull();
    expect(buildSelectCommand('tape', 'npm test', ['adds'])).toBeNull();
  });

  it('tap: the files, then --grep per level of subtests; a file that failed to load reruns whole', () => {
    expect(
      buildSelectCommand('tap', 'npm test', [
        'test/a.test.js > math > add adds',
        'test/a.test.js > divide rounds down',
      ]),
    ).toBe("npx tap test/a.test.js '--grep=^(?:math|divide rounds down)$' '--grep=^add adds$'");
    expect(buildSelectCommand('tap', 'tap', ['test/a.test.js > x.y', 'test/b.test.js > z'])).toBe(
      "npx tap test/a.test.js test/b.test.js '--grep=^(?:x\\.y|z)$'",
    );
    expect(buildSelectCommand('tap', 'npm test', ['test/broken.test.js', 'test/a.test.js > x'])).toBe(
      'npx tap test/broken.test.js test/a.test.js',
    );
  });

  it('AVA: --match per title (the id without its file prefix); a cut title matches by prefix', () => {
    expect(buildSelectCommand('ava', 'npm test', ['math > add adds', 'divide rounds down'])).toBe(
      "npx ava --match 'add adds' --match 'divide rounds down'",
    );
    expect(buildSelectCommand('ava', 'npm test', ['math > very long…', 'math > !negated'])).toBe(
      "npx ava --match 'very long*' --match '*!negated'",
    );
    expect(buildSelectCommand('ava', 'npm test', ['test/broken.test.js'])).toBe('npx ava test/broken.test.js');
  });

  it('Jasmine: --filter with the anchored full names', () => {
    expect(buildSelectCommand('jasmine', 'npm test', ['math flaky passes on rerun'])).toBe(
      "npx jasmine '--filter=^math flaky passes on rerun$'",
    );
    expect(buildSelectCommand('jasmine', 'jasmine', ['a (b)', 'c'])).toBe("npx jasmine '--filter=^(?:a \\(b\\)|c)$'");
  });

  it('bun: the files, then -t with the full name; a project command of bun test keeps bun', () => {
    expect(buildSelectCommand('bun', 'npm test', ['test/a.test.js > math > add adds'])).toBe(
      "npx bun test test/a.test.js -t '^math add adds$'",
    );
    expect(buildSelectCommand('bun', 'bun test --coverage', ['test/a.test.js > x', 'test/b.test.js > y'])).toBe(
      "bun test test/a.test.js test/b.test.js -t '^(?:x|y)$'",
    );
  });

  it("deno: the project's permission flags, the files, --filter over top-level names", () => {
    expect(
      buildSelectCommand('deno', 'deno test -A --config deno.json --filter old test/', [
        'test/a.test.js > math > add adds',
        'test/a.test.js > x',
      ]),
    ).toBe("deno test -A --config deno.json test/a.test.js --filter '/^(?:math|x)$/'");
    const dir = mkdtempSync(join(tmpdir(), 'gaffer-select-deno-'));
    temps.push(dir);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ scripts: { test: 'deno test --allow-read --allow-env=HOME' } }),
    );
    expect(buildSelectCommand('deno', 'npm test', ['test/a.test.js > t'], { workspace: dir })).toBe(
      "npx deno test --allow-read --allow-env=HOME test/a.test.js --filter '/^t$/'",
    );
    // a script that does more than run deno test lends no flags
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts: { test: 'deno lint && deno test -A' } }));
    expect(buildSelectCommand('deno', 'npm test', ['test/a.test.js'], { workspace: dir })).toBe(
      'npx deno test test/a.test.js',
    );
  });

  it('unittest: the dotted ids with -v, the python of the base command, the discovery folder on the path', () => {
    expect(buildSelectCommand('unittest', 'python3 -m unittest', ['tests.test_a.T.test_x', 'tests.test_b'])).toBe(
      'python3 -m unittest -v tests.test_a.T.test_x tests.test_b',
    );
    expect(
      buildSelectCommand('unittest', '.venv/bin/python -m unittest discover -s tests -p "*_test.py"', [
        'a_test.T.test_x',
      ]),
    ).toBe('PYTHONPATH=tests .venv/bin/python -m unittest -v a_test.T.test_x');
    expect(buildSelectCommand('unittest', 'make test', ['not a dotted id'])).toBeNull();
  });

  it('null when nothing can be selected', () => {
    expect(buildSelectCommand('junit', 'mvn test', ['a > b'])).toBeNull();
    expect(buildSelectCommand(null, 'make test', ['x'])).toBeNull();
    expect(buildSelectCommand('vitest', 'npm test', [])).toBeNull();
    expect(buildSelectCommand('vitest', 'npm test', ['  '])).toBeNull();
  });
});

function runIn(dir: string, command: string): Promise<{ output: string; exitCode: number | null }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(VITEST|__VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|FLAKY_STATE_DIR$)/.test(key)) env[key] = value;
  return new Promise((done, fail) => {
    const child = spawn('sh', ['-c', `exec 2>&1; ${command}`], {
      cwd: dir,
      env: { ...env, CI: 'true' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', fail);
    child.on('close', (exitCode) => done({ output: Buffer.concat(chunks).toString('utf8'), exitCode }));
  });
}

// a nested test and a top-level one, selected together, run alone (the fixtures' README lists the tests): one
// passes, the other fails. Where the runner selects less finely, what else runs with them is counted too.
const SELECTIONS: { framework: TestFramework; base: string; ids: string[]; passed: number }[] = [
  { framework: 'node-test', base: 'npm test', ids: ['math > add adds', 'divide rounds down'], passed: 1 },
  {
    framework: 'vitest',
    base: 'npm test',
    ids: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down'],
    passed: 1,
  },
  {
    framework: 'jest',
    base: 'npm test',
    ids: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down'],
    passed: 1,
  },
  { framework: 'mocha', base: 'npm test', ids: ['math > add adds', 'math > divide rounds down'], passed: 1 },
  {
    framework: 'tap',
    base: 'npm test',
    ids: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down'],
    passed: 1,
  },
  { framework: 'ava', base: 'npm test', ids: ['math > add adds', 'math > divide rounds down'], passed: 1 },
  { framework: 'jasmine', base: 'npm test', ids: ['math add adds', 'math divide rounds down'], passed: 1 },
  {
    framework: 'bun',
    base: 'npm test',
    ids: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down'],
    passed: 1,
  },
  // deno selects top-level tests only: the step's test runs with both its steps
  {
    framework: 'deno',
    base: 'npm test',
    ids: ['test/math.test.js > math > add adds', 'test/math.test.js > divide rounds down'],
    passed: 2,
  },
  // tape selects files only: everything in test/math.test.js runs
  { framework: 'tape', base: 'npm test', ids: ['add adds', 'divide rounds down'], passed: 2 },
  {
    framework: 'unittest',
    base: 'python3 -m unittest',
    ids: ['tests.test_calc.TestCalc.test_add', 'tests.test_calc.TestCalc.test_divide_rounds_down'],
    passed: 1,
  },
];

describe('selected tests run alone in the fixture projects', () => {
  const ready = (framework: string) => {
    if (framework === 'unittest')
      return spawnSync('python3', ['--version']).status === 0 ? '' : ' (skipped: python3 is not installed)';
    return framework === 'node-test' || existsSync(join(PROJECTS, framework, 'node_modules'))
      ? ''
      : ' (skipped: no node_modules, run scripts/setup-fixtures.sh)';
  };
  describe.each(SELECTIONS)('$framework', ({ framework, base, ids, passed }) => {
    const why = ready(framework);
    it.skipIf(why !== '')(`a nested and a top-level test${why}`, async () => {
      await expectSelectedRunAlone(framework, base, ids, passed);
    });
  });
});

async function expectSelectedRunAlone(
  framework: TestFramework,
  base: string,
  ids: string[],
  passed: number,
): Promise<void> {
  const source = join(PROJECTS, framework);
  const dir = mkdtempSync(join(tmpdir(), `gaffer-select-${framework}-`));
  temps.push(dir);
  cpSync(source, dir, {
    recursive: true,
    filter: (src) => !/[/\\](node_modules|\.flaky-state|\.tap|__pycache__)$/.test(src),
  });
  if (existsSync(join(source, 'node_modules'))) symlinkSync(join(source, 'node_modules'), join(dir, 'node_modules'));
  const command = buildSelectCommand(framework, base, ids, { workspace: dir }) ?? '';
  const result = await runIn(dir, command);
  const parsed = parseTestOutput(result.output, { kind: 'node', command, workspace: dir });
  expect(result.exitCode, result.output).not.toBe(0);
  expect(parsed.failed, result.output).toEqual([ids[1]]);
  expect(parsed.counts, result.output).toMatchObject({ passed, failed: 1 });
  // where the output names passing tests, the one selected is among them
  if (parsed.passed.length > 0) expect(parsed.passed, result.output).toContain(ids[0]);
}
