import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { selectRelatedTests, type RelatedResult } from '../../src/verification/related/index.js';
import { makeWorkspace, tempDir, writeFiles } from '../helpers/temp.js';

const FIXTURES = resolve(import.meta.dirname, '..', 'fixtures');

/** A temp copy of a fixture project (dependencies linked, never copied). */
function copyFixture(path: string): string {
  const source = join(FIXTURES, path);
  const dir = join(tempDir('gaffer-related-'), 'ws');
  cpSync(source, dir, {
    recursive: true,
    filter: (src) => !/\/(?:node_modules|\.venv|__pycache__|\.pytest_cache|\.flaky-state)$/.test(src),
  });
  if (existsSync(join(source, 'node_modules'))) symlinkSync(join(source, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** The selection, failing the test with the fallback's reason when related scope fell back. */
function selection(result: RelatedResult) {
  if (result.scope !== 'related') throw new Error(`expected a related selection, fell back: ${result.reason}`);
  return result.selection;
}

function reason(result: RelatedResult): string {
  if (result.scope !== 'all') throw new Error(`expected a fallback, selected ${result.selection.command}`);
  return result.reason;
}

/** Runs a command through `sh -c` as gaffer's runner does; the caller's vitest environment does not leak in. */
function runShell(
  command: string,
  cwd: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<{ output: string; exitCode: number | null }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(VITEST|__VITEST|TEST$|NODE_ENV$|NODE_OPTIONS$|JEST_)/.test(key)) env[key] = value;
  return new Promise((done, fail) => {
    const child = spawn('sh', ['-c', `exec 2>&1; ${command}`], {
      cwd,
      env: { ...env, CI: 'true', ...extra },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', fail);
    child.on('close', (exitCode) => done({ output: Buffer.concat(chunks).toString('utf8'), exitCode }));
  });
}

/** 50 modules `src/mN.js`, each with `test/mN.test.js`; m1, m2 and m3 share `src/util.js`. */
function nodeTestProject(script = 'node --test'): string {
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'fifty', private: true, type: 'module', scripts: { test: script } }),
    'src/util.js': 'export const inc = (n) => n + 1;\n',
    'src/orphan.js': 'export const nobody = 1;\n',
    'README.md': '# fifty\n',
  };
  for (let n = 0; n < 50; n++) {
    const usesUtil = n >= 1 && n <= 3;
    files[`src/m${n}.js`] = usesUtil
      ? `import { inc } from './util.js';\nexport const m${n} = () => inc(${n});\n`
      : `export const m${n} = () => ${n + 1};\n`;
    files[`test/m${n}.test.js`] =
      "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n" +
      `import { m${n} } from '../src/m${n}.js';\n\ntest('m${n}', () => assert.equal(m${n}(), ${n + 1}));\n`;
  }
  return makeWorkspace(files);
}

const nodeTest = (name: string, imports: string) =>
  `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n${imports}\ntest('${name}', () => assert.ok(true));\n`;
const vitestTest = (name: string, imports: string) =>
  `import { expect, it } from 'vitest';\n${imports}\nit('${name}', () => expect(1).toBe(1));\n`;

/**
 * Two packages with tests (`packages/a`, `packages/b`), one without (`packages/c`), a root folder in no
 * package (`tools/`); `packages/b/src/b.js` is imported by no test.
 */
function monorepo(script: string, testFile: (name: string, imports: string) => string): string {
  const pkg = (name: string) => JSON.stringify({ name, private: true, type: 'module' });
  return makeWorkspace({
    'package.json': JSON.stringify({
      name: 'mono',
      private: true,
      type: 'module',
      workspaces: ['packages/*'],
      scripts: { test: script },
    }),
    'packages/a/package.json': pkg('a'),
    'packages/a/src/a.js': "export const a = () => 'a';\n",
    'packages/a/test/a.test.js': testFile('a', "import { a } from '../src/a.js';\n"),
    'packages/a/test/a2.test.js': testFile('a2', ''),
    'packages/b/package.json': pkg('b'),
    'packages/b/src/b.js': "export const b = () => 'b';\n",
    'packages/b/src/used.js': "export const used = () => 'used';\n",
    'packages/b/test/used.test.js': testFile('used', "import { used } from '../src/used.js';\n"),
    'packages/b/test/other.test.js': testFile('other', ''),
    'packages/c/package.json': pkg('c'),
    'packages/c/index.js': 'export const c = 1;\n',
    'tools/release.js': 'export {};\n',
  });
}

/** Two pyproject packages under one root pytest.ini; `beta/cli.py` is imported by no test. */
function pythonMonorepo(): string {
  return makeWorkspace({
    'pytest.ini': '[pytest]\npythonpath = packages/alpha packages/beta\n',
    'packages/alpha/pyproject.toml': '[project]\nname = "alpha"\nversion = "0.1.0"\n',
    'packages/alpha/alpha/__init__.py': '',
    'packages/alpha/alpha/core.py': 'VALUE = 1\n',
    'packages/alpha/tests/test_core.py': 'from alpha.core import VALUE\n\n\ndef test_core():\n    assert VALUE == 1\n',
    'packages/beta/pyproject.toml': '[project]\nname = "beta"\nversion = "0.1.0"\n',
    'packages/beta/beta/__init__.py': '',
    'packages/beta/beta/calc.py': 'def add(a, b):\n    return a + b\n',
    'packages/beta/beta/cli.py': 'import sys\n\n\ndef main():\n    print(sys.argv)\n',
    'packages/beta/tests/test_calc.py': 'from beta.calc import add\n\n\ndef test_calc():\n    assert add(1, 2) == 3\n',
    'packages/beta/tests/test_smoke.py': 'def test_smoke():\n    assert True\n',
    // a package nothing here touches: the selection is never the whole suite
    'packages/gamma/pyproject.toml': '[project]\nname = "gamma"\nversion = "0.1.0"\n',
    'packages/gamma/tests/test_gamma.py': 'def test_gamma():\n    assert True\n',
    'scripts/tool.py': 'print("tool")\n',
  });
}

const select = (workspace: string, changedPaths: string[], kind = 'node', command = 'npm test') =>
  selectRelatedTests({ workspace, kind, command, changedPaths });

describe('related tests: node:test (the import graph of test files)', () => {
  it('a changed module selects exactly the test that imports it', async () => {
    const ws = nodeTestProject();
    expect(selection(await select(ws, ['src/m7.js']))).toEqual({
      command: 'node --test test/m7.test.js',
      relatedFiles: ['test/m7.test.js'],
    });
  });

  it('a shared util selects the tests of its importers, transitively', async () => {
    const ws = nodeTestProject();
    expect(selection(await select(ws, ['src/util.js'])).relatedFiles).toEqual([
      'test/m1.test.js',
      'test/m2.test.js',
      'test/m3.test.js',
    ]);
  });

  it('selects 50 modules in well under the guard time', async () => {
    const ws = nodeTestProject();
    await select(ws, ['src/m0.js']); // the first call pays for loading the module
    const started = performance.now();
    const result = await select(ws, ['src/m7.js']);
    const ms = performance.now() - started;
    expect(selection(result).relatedFiles).toEqual(['test/m7.test.js']);
    console.info(`related selection, 50-module node:test fixture: ${ms.toFixed(1)} ms`);
    expect(ms).toBeLessThan(200);
  });

  it('the selected command runs just that test for real', async () => {
    const ws = nodeTestProject();
    const { command } = selection(await select(ws, ['src/util.js']));
    const run = await runShell(command, ws);
    expect(run.exitCode).toBe(0);
    expect(run.output).toMatch(/^# tests 3$/m);
  });

  it('package.json changed runs everything and says why', async () => {
    const ws = nodeTestProject();
    expect(reason(await select(ws, ['src/m7.js', 'package.json']))).toMatch(
      /`package\.json` changed: a change to configuration, lockfiles/,
    );
  });

  it.each([
    ['tsconfig.build.json'],
    ['vitest.config.ts'],
    ['pnpm-lock.yaml'],
    ['.mocharc.yml'],
    ['babel.config.cjs'],
    ['test/setup.ts'],
    ['node_modules/x/index.js'],
  ])('%s changed runs everything', async (path) => {
    expect(reason(await select(nodeTestProject(), ['src/m7.js', path]))).toContain(`\`${path}\` changed`);
  });

  it('a changed source file no test imports runs everything and names the file', async () => {
    const ws = nodeTestProject();
    expect(reason(await select(ws, ['src/orphan.js']))).toBe(
      '`src/orphan.js` changed and no test imports it: running everything',
    );
  });

  it('in a single package, an unimported file beside imported ones runs everything (the full suite may reject it)', async () => {
    const ws = nodeTestProject();
    expect(reason(await select(ws, ['src/m7.js', 'src/orphan.js', 'README.md']))).toBe(
      '`src/orphan.js` changed and no test imports it: running everything',
    );
    writeFiles(ws, { 'src/settings.json': '{}' });
    expect(reason(await select(ws, ['src/m7.js', 'src/settings.json']))).toMatch(
      /^`src\/settings\.json` changed and no test imports it/,
    );
  });

  it('docs, images, LICENSE and CHANGELOG beside a change widen nothing', async () => {
    const ws = nodeTestProject();
    const docs = [
      'README.md',
      'docs/guide.md',
      'docs/img/flow.png',
      'LICENSE',
      'CHANGELOG.md',
      'src/NOTES.md',
      '.github/workflows/ci.yml',
    ];
    expect(selection(await select(ws, ['src/m7.js', ...docs]))).toEqual({
      command: 'node --test test/m7.test.js',
      relatedFiles: ['test/m7.test.js'],
    });
    expect(reason(await select(ws, ['README.md', 'LICENSE']))).toMatch(
      /^no related tests: no test file imports `LICENSE`, `README\.md`/,
    );
  });

  it('a doc or image under a test folder is a fixture: it widens', async () => {
    const ws = nodeTestProject();
    expect(reason(await select(ws, ['src/m7.js', 'test/fixtures/expected.md']))).toMatch(
      /^`test\/fixtures\/expected\.md` is test support/,
    );
  });

  it('a changed test file is selected directly; a deleted one is not', async () => {
    const ws = nodeTestProject();
    expect(selection(await select(ws, ['test/m9.test.js', 'test/gone.test.js'])).relatedFiles).toEqual([
      'test/m9.test.js',
    ]);
  });

  it('a deleted module selects the tests that still import it', async () => {
    const ws = nodeTestProject();
    rmSync(join(ws, 'src/m4.js'));
    expect(selection(await select(ws, ['src/m4.js'])).relatedFiles).toEqual(['test/m4.test.js']);
  });

  it('follows require(), import(), export-from, extensionless and index specifiers', async () => {
    const ws = makeWorkspace({
      'package.json': JSON.stringify({ scripts: { test: 'node --test' } }),
      'lib/index.js': "module.exports = require('./core');\n",
      'lib/core.js': 'module.exports = 1;\n',
      'lib/reexport.mjs': "export * from './deep/leaf.mjs';\n",
      'lib/deep/leaf.mjs': 'export const leaf = 1;\n',
      'lib/lazy.js': 'module.exports = 2;\n',
      'test/require.test.js': "const core = require('../lib');\n",
      'test/reexport.test.mjs': "import {\n  leaf,\n} from '../lib/reexport.mjs';\n",
      'test/lazy.test.js': "test('lazy', async () => { await import('../lib/lazy.js'); });\n",
    });
    expect(selection(await select(ws, ['lib/core.js'])).relatedFiles).toEqual(['test/require.test.js']);
    expect(selection(await select(ws, ['lib/deep/leaf.mjs'])).relatedFiles).toEqual(['test/reexport.test.mjs']);
    expect(selection(await select(ws, ['lib/lazy.js'])).relatedFiles).toEqual(['test/lazy.test.js']);
  });

  it('keeps the script’s node flags and environment, replacing its test paths', async () => {
    const ws = nodeTestProject('NODE_ENV=test node --import ./loader.js --test --test-reporter spec test/');
    expect(selection(await select(ws, ['src/m7.js'])).command).toBe(
      'NODE_ENV=test node --import ./loader.js --test --test-reporter spec test/m7.test.js',
    );
  });

  it('selects only inside the paths the script tests', async () => {
    const ws = nodeTestProject("node --test 'test/m1*.test.js'");
    expect(selection(await select(ws, ['src/util.js'])).relatedFiles).toEqual(['test/m1.test.js']);
  });

  it('shell-quotes selected paths', async () => {
    const ws = makeWorkspace({
      'package.json': JSON.stringify({ scripts: { test: 'node --test' } }),
      "src/it's.js": 'export const x = 1;\n',
      "test/it's here.test.js": 'import "../src/it\'s.js";\n',
      'test/other.test.js': '',
    });
    expect(selection(await select(ws, ["src/it's.js"])).command).toBe(`node --test 'test/it'\\''s here.test.js'`);
  });

  it('test support no test imports runs everything (it may be read at run time)', async () => {
    const ws = nodeTestProject();
    writeFiles(ws, { 'test/fixtures/data.json': '{}' });
    expect(reason(await select(ws, ['src/m7.js', 'test/fixtures/data.json']))).toMatch(
      /`test\/fixtures\/data\.json` is test support/,
    );
  });

  it.each([
    ['node --test && echo done', /not one plain command/],
    ['node test/run.js', /runs no framework gaffer selects related tests for/],
    ['mocha', /mocha has no related-tests mode/],
  ])('scripts.test %j runs everything', async (script, why) => {
    expect(reason(await select(nodeTestProject(script), ['src/m7.js']))).toMatch(why);
  });

  it('monorepo: a file no test imports adds the tests of its own package, and only those', async () => {
    const ws = monorepo('node --test', nodeTest);
    const chosen = selection(await select(ws, ['packages/a/src/a.js', 'packages/b/src/b.js']));
    expect(chosen).toEqual({
      command: 'node --test packages/a/test/a.test.js packages/b/test/other.test.js packages/b/test/used.test.js',
      relatedFiles: ['packages/a/test/a.test.js', 'packages/b/test/other.test.js', 'packages/b/test/used.test.js'],
      widened: ['packages/b/src/b.js'],
    });
    const run = await runShell(chosen.command, ws);
    expect(run.exitCode).toBe(0);
    expect(run.output).toMatch(/^# tests 3$/m);
  });

  it('monorepo: test support no test imports adds its package’s tests', async () => {
    const ws = monorepo('node --test', nodeTest);
    expect(selection(await select(ws, ['packages/b/test/fixtures/data.json']))).toMatchObject({
      relatedFiles: ['packages/b/test/other.test.js', 'packages/b/test/used.test.js'],
      widened: ['packages/b/test/fixtures/data.json'],
    });
  });

  it('monorepo: a file outside every package, or in a package without tests, runs everything', async () => {
    const ws = monorepo('node --test', nodeTest);
    expect(reason(await select(ws, ['packages/a/src/a.js', 'tools/release.js']))).toBe(
      '`tools/release.js` changed and no test imports it: running everything',
    );
    expect(reason(await select(ws, ['packages/a/src/a.js', 'packages/c/index.js']))).toBe(
      '`packages/c/index.js` changed and no test imports it: running everything',
    );
  });

  it('a manifest inside a test folder is a fixture project, not a package', async () => {
    const ws = monorepo('node --test', nodeTest);
    writeFiles(ws, {
      'packages/a/test/fixtures/app/package.json': '{}',
      'packages/a/test/fixtures/app/data.json': '{}',
    });
    expect(selection(await select(ws, ['packages/a/test/fixtures/app/data.json'])).relatedFiles).toEqual([
      'packages/a/test/a.test.js',
      'packages/a/test/a2.test.js',
    ]);
  });

  it('a pretest script runs everything: related scope would skip it', async () => {
    const ws = makeWorkspace({
      'package.json': JSON.stringify({ scripts: { pretest: 'tsc', test: 'node --test' } }),
      'src/a.js': '',
      'test/a.test.js': "import '../src/a.js';\n",
    });
    expect(reason(await select(ws, ['src/a.js']))).toMatch(/scripts\.pretest \(`tsc`\) runs before the tests/);
  });
});

describe('related tests: vitest and jest (the framework selects, gaffer lists what it imports)', () => {
  it('vitest: `vitest related --run` with the changed files, the script’s flags kept', async () => {
    const ws = copyFixture('related/vitest');
    expect(selection(await select(ws, ['src/b.js']))).toEqual({
      command: 'npx vitest related --run --config vitest.config.js --reporter verbose src/b.js',
      relatedFiles: ['test/a.test.js'],
    });
    // every test of the project selected: that is the full suite, run as the full command
    expect(reason(await select(ws, ['src/c.js', 'test/a.test.js']))).toBe('the related tests are all of the tests');
    expect(selection(await select(ws, ['src/b.js'], 'node', 'pnpm test')).command).toMatch(
      /^pnpm exec vitest related --run /,
    );
  });

  it('jest: `--findRelatedTests` with the changed files, environment and flags kept', async () => {
    const ws = copyFixture('related/jest');
    expect(selection(await select(ws, ['src/sum.js']))).toEqual({
      command: 'NODE_OPTIONS=--experimental-vm-modules npx jest --ci -w 2 --findRelatedTests src/sum.js',
      relatedFiles: ['__tests__/sum.js'],
    });
    expect(reason(await select(ws, ['src/sum.js', 'src/product.js']))).toBe('the related tests are all of the tests');
  });

  it('a deleted source is passed as the tests that imported it', async () => {
    const ws = copyFixture('related/jest');
    rmSync(join(ws, 'src/sum.js'));
    expect(selection(await select(ws, ['src/sum.js'])).command).toBe(
      'NODE_OPTIONS=--experimental-vm-modules npx jest --ci -w 2 --findRelatedTests __tests__/sum.js',
    );
  });

  it('monorepo: vitest and jest are given the widened package’s test files as targets', async () => {
    expect(
      selection(await select(monorepo('vitest run', vitestTest), ['packages/a/src/a.js', 'packages/b/src/b.js'])),
    ).toEqual({
      command:
        'npx vitest related --run packages/a/src/a.js packages/b/src/b.js packages/b/test/other.test.js packages/b/test/used.test.js',
      relatedFiles: ['packages/a/test/a.test.js', 'packages/b/test/other.test.js', 'packages/b/test/used.test.js'],
      widened: ['packages/b/src/b.js'],
    });
    expect(
      selection(await select(monorepo('jest --ci', vitestTest), ['packages/a/src/a.js', 'packages/b/src/b.js']))
        .command,
    ).toBe(
      'npx jest --ci --findRelatedTests packages/a/src/a.js packages/b/src/b.js packages/b/test/other.test.js packages/b/test/used.test.js',
    );
  });

  it('single package: vitest runs everything for a file no test imports', async () => {
    const ws = copyFixture('related/vitest');
    writeFiles(ws, { 'src/d.js': 'export const d = 1;\n' });
    expect(reason(await select(ws, ['src/c.js', 'src/d.js']))).toBe(
      '`src/d.js` changed and no test imports it: running everything',
    );
  });

  const rootVitest = resolve(import.meta.dirname, '..', '..', 'node_modules');
  it('monorepo: `vitest related` runs the widened test files for real', async () => {
    const ws = monorepo('vitest run', vitestTest);
    symlinkSync(rootVitest, join(ws, 'node_modules'));
    const { command } = selection(await select(ws, ['packages/a/src/a.js', 'packages/b/src/b.js']));
    const run = await runShell(command, ws);
    const output = run.output.replace(/\x1b\[[0-9;]*m/g, '');
    expect(run.exitCode, output).toBe(0);
    expect(output).toMatch(/Test Files\s+3 passed \(3\)/);
    expect(output).not.toContain('a2.test.js');
  });

  it('a script that filters tests runs everything', async () => {
    const ws = copyFixture('related/jest');
    writeFileSync(join(ws, 'package.json'), JSON.stringify({ scripts: { test: 'jest unit/' } }));
    expect(reason(await select(ws, ['src/sum.js']))).toMatch(/filters which tests run \(`unit\/`\)/);
  });

  const vitestProject = join(FIXTURES, 'projects', 'vitest');
  const vitestMissing = existsSync(join(vitestProject, 'node_modules', '.bin', 'vitest'))
    ? null
    : 'the vitest fixture has no node_modules (run scripts/setup-fixtures.sh)';
  it.skipIf(vitestMissing !== null)(
    `vitest related runs only the related test file for real${vitestMissing ? ` — skipped: ${vitestMissing}` : ''}`,
    async () => {
      const ws = copyFixture('projects/vitest');
      writeFiles(ws, {
        'src/extra.js': 'export const extra = () => 42;\n',
        'test/extra.test.js':
          "import { expect, it } from 'vitest';\nimport { extra } from '../src/extra.js';\n\nit('extra', () => expect(extra()).toBe(42));\n",
      });
      const chosen = selection(await select(ws, ['src/extra.js']));
      expect(chosen).toEqual({
        command: 'npx vitest related --run src/extra.js',
        relatedFiles: ['test/extra.test.js'],
      });
      const run = await runShell(chosen.command, ws, { FLAKY_STATE_DIR: tempDir() });
      expect(run.exitCode).toBe(0);
      const output = run.output.replace(/\x1b\[[0-9;]*m/g, '');
      expect(output).toContain('test/extra.test.js');
      expect(output).not.toContain('math.test.js');
      expect(output).toMatch(/Test Files\s+1 passed \(1\)/);
    },
  );
});

describe('related tests: pytest (imports and names)', () => {
  const pytest = (changed: string[]) =>
    select(copyFixture('related/pytest'), changed, 'pytest', 'python3 -m pytest -q -rA');

  it('selects tests by `import pkg.api`, `from pkg.api import`, `from pkg import api` and the name test_api.py', async () => {
    expect(selection(await pytest(['src/pkg/api.py']))).toEqual({
      command:
        'python3 -m pytest -q -rA tests/test_api.py tests/test_from_module.py tests/test_from_package.py tests/test_import_dotted.py',
      relatedFiles: [
        'tests/test_api.py',
        'tests/test_from_module.py',
        'tests/test_from_package.py',
        'tests/test_import_dotted.py',
      ],
    });
  });

  it('follows relative imports and helpers transitively', async () => {
    expect(selection(await pytest(['src/pkg/util.py'])).relatedFiles).toEqual([
      'tests/test_from_module.py',
      'tests/test_from_package.py',
      'tests/test_helpers.py',
      'tests/test_import_dotted.py',
    ]);
  });

  it('a package __init__ selects every test importing the package', async () => {
    expect(selection(await pytest(['src/pkg/__init__.py'])).relatedFiles).toHaveLength(5);
  });

  it('conftest.py changed runs everything', async () => {
    expect(reason(await pytest(['src/pkg/api.py', 'tests/conftest.py']))).toMatch(
      /`tests\/conftest\.py` changed: .*conftest\.py runs everything/,
    );
    expect(reason(await pytest(['pyproject.toml']))).toContain('`pyproject.toml` changed');
  });

  it('a module no test imports or is named after runs everything, beside related ones too', async () => {
    expect(reason(await pytest(['src/pkg/unused.py']))).toBe(
      '`src/pkg/unused.py` changed and no test imports it: running everything',
    );
    expect(reason(await pytest(['src/pkg/api.py', 'src/pkg/unused.py']))).toBe(
      '`src/pkg/unused.py` changed and no test imports it: running everything',
    );
  });

  it('a module imported only by code no test reaches is untested: it runs everything', async () => {
    const ws = copyFixture('related/pytest');
    writeFiles(ws, { 'src/pkg/script.py': 'from pkg import unused\n' });
    expect(
      reason(await select(ws, ['src/pkg/other.py', 'src/pkg/unused.py'], 'pytest', 'python3 -m pytest -q -rA')),
    ).toMatch(/^`src\/pkg\/unused\.py` changed/);
  });

  it('docs widen nothing, unless pytest collects doctests from them', async () => {
    const ws = copyFixture('related/pytest');
    const run = () =>
      select(ws, ['src/pkg/other.py', 'README.md', 'docs/usage.rst'], 'pytest', 'python3 -m pytest -q -rA');
    expect(selection(await run()).relatedFiles).toEqual(['tests/test_other.py']);
    writeFiles(ws, { 'pytest.ini': '[pytest]\npythonpath = src\naddopts = --doctest-glob="*.md"\n' });
    expect(reason(await run())).toMatch(/^`README\.md`, `docs\/usage\.rst` changed and no test imports them/);
  });

  it('monorepo: a module no test imports adds the tests of its own pyproject package', async () => {
    const ws = pythonMonorepo();
    const chosen = selection(
      await select(
        ws,
        ['packages/alpha/alpha/core.py', 'packages/beta/beta/cli.py'],
        'pytest',
        'python3 -m pytest -q -rA',
      ),
    );
    expect(chosen).toEqual({
      command:
        'python3 -m pytest -q -rA packages/alpha/tests/test_core.py packages/beta/tests/test_calc.py packages/beta/tests/test_smoke.py',
      relatedFiles: [
        'packages/alpha/tests/test_core.py',
        'packages/beta/tests/test_calc.py',
        'packages/beta/tests/test_smoke.py',
      ],
      widened: ['packages/beta/beta/cli.py'],
    });
    expect(
      reason(
        await select(ws, ['packages/alpha/alpha/core.py', 'scripts/tool.py'], 'pytest', 'python3 -m pytest -q -rA'),
      ),
    ).toBe('`scripts/tool.py` changed and no test imports it: running everything');
  });

  const hasPytest = spawnSync('python3', ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!hasPytest)(
    `the selected pytest command runs just those files for real${hasPytest ? '' : ' — skipped: python3 cannot import pytest'}`,
    async () => {
      const ws = copyFixture('related/pytest');
      const { command } = selection(await select(ws, ['src/pkg/other.py'], 'pytest', 'python3 -m pytest -q -rA'));
      const run = await runShell(command, ws, { PYTHONDONTWRITEBYTECODE: '1' });
      expect(run.exitCode).toBe(0);
      expect(run.output).toMatch(/PASSED tests\/test_other\.py::test_other/);
      expect(run.output).toMatch(/\b1 passed\b/);
    },
  );

  it.skipIf(!hasPytest)(
    `the widened monorepo selection runs for real${hasPytest ? '' : ' — skipped: python3 cannot import pytest'}`,
    async () => {
      const ws = pythonMonorepo();
      const { command } = selection(
        await select(
          ws,
          ['packages/alpha/alpha/core.py', 'packages/beta/beta/cli.py'],
          'pytest',
          'python3 -m pytest -q -rA',
        ),
      );
      const run = await runShell(command, ws, { PYTHONDONTWRITEBYTECODE: '1' });
      expect(run.exitCode, run.output).toBe(0);
      expect(run.output).toMatch(/\b3 passed\b/);
      expect(run.output).toMatch(/PASSED packages\/beta\/tests\/test_smoke\.py::test_smoke/);
    },
  );
});

describe('related tests: go (changed packages and their importers)', () => {
  const go = (changed: string[], command = 'go test -count=1 ./...') =>
    select(copyFixture('related/go'), changed, 'go', command);

  it('a changed package runs alone', async () => {
    expect(selection(await go(['pkg/c/c.go']))).toEqual({
      command: 'go test -count=1 ./pkg/c',
      relatedFiles: ['pkg/c/c_test.go'],
    });
  });

  it('a changed package also runs the packages that import it; -json is kept', async () => {
    expect(selection(await go(['pkg/a/x.go'], 'go test -json -count=1 ./...')).command).toBe(
      'go test -json -count=1 ./pkg/a ./pkg/b',
    );
  });

  it('a changed _test.go or testdata file runs its own package only', async () => {
    expect(selection(await go(['pkg/a/x_test.go'])).command).toBe('go test -count=1 ./pkg/a');
    expect(selection(await go(['pkg/a/testdata/input.txt'])).command).toBe('go test -count=1 ./pkg/a');
  });

  it('go.mod or go.sum changed runs everything; a docs change alone finds no related tests', async () => {
    expect(reason(await go(['pkg/c/c.go', 'go.sum']))).toContain('`go.sum` changed');
    expect(reason(await go(['docs/notes.md']))).toMatch(/^no related tests/);
  });

  it('a docs change beside a package widens nothing', async () => {
    expect(selection(await go(['pkg/c/c.go', 'docs/notes.md', 'README.md']))).toEqual({
      command: 'go test -count=1 ./pkg/c',
      relatedFiles: ['pkg/c/c_test.go'],
    });
  });

  it('a package without tests that no tested package imports runs everything', async () => {
    const ws = copyFixture('related/go');
    writeFiles(ws, { 'pkg/d/d.go': 'package d\n\n// Four is 4.\nconst Four = 4\n' });
    expect(reason(await select(ws, ['pkg/c/c.go', 'pkg/d/d.go'], 'go', 'go test -count=1 ./...'))).toBe(
      '`pkg/d/d.go` changed and no test imports it: running everything',
    );
    expect(reason(await select(ws, ['pkg/c/c.go', 'scripts/gen.sh'], 'go', 'go test -count=1 ./...'))).toMatch(
      /^`scripts\/gen\.sh` changed and no test imports it/,
    );
  });

  it('a package without tests that a tested package imports runs that package’s tests', async () => {
    const ws = copyFixture('related/go');
    writeFiles(ws, {
      'pkg/d/d.go': 'package d\n\n// Four is 4.\nconst Four = 4\n',
      'pkg/c/four.go': 'package c\n\nimport "example.com/related/pkg/d"\n\n// Four is d.Four.\nconst Four = d.Four\n',
    });
    expect(selection(await select(ws, ['pkg/d/d.go'], 'go', 'go test -count=1 ./...'))).toEqual({
      command: 'go test -count=1 ./pkg/c ./pkg/d',
      relatedFiles: ['pkg/c/c_test.go'],
    });
  });

  const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!hasGo)(
    `the selected go command runs for real${hasGo ? '' : ' — skipped: go is not installed'}`,
    async () => {
      const ws = copyFixture('related/go');
      const { command } = selection(await select(ws, ['pkg/a/x.go'], 'go', 'go test -count=1 ./...'));
      const run = await runShell(command, ws);
      expect(run.exitCode).toBe(0);
      expect(run.output).toMatch(/^ok\s+example\.com\/related\/pkg\/a/m);
      expect(run.output).toMatch(/^ok\s+example\.com\/related\/pkg\/b/m);
      expect(run.output).not.toContain('pkg/c');
    },
  );
});

describe('related tests: frameworks the detector cannot scope', () => {
  it.each([
    ['cargo', 'cargo test', /cargo can filter tests by name, not by changed file/],
    ['make', 'make test', /cannot see which tests `make test` runs/],
    ['configured', 'make check', /configured verify command runs exactly as given/],
  ])('%s runs everything', async (kind, command, why) => {
    expect(reason(await select(makeWorkspace({ 'src/lib.rs': '' }), ['src/lib.rs'], kind, command))).toMatch(why);
  });

  it('no changed files runs everything', async () => {
    expect(reason(await select(nodeTestProject(), []))).toMatch(/no changed files/);
  });
});
