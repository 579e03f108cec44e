import { existsSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { FullJob } from '../../src/domain/answer.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// issue 32 "the evidence sees everything written": ignore rules a worker wrote do not hide files
// from the evidence, the write policy or the harness rules — the checkpoint's rules judge. Real
// jobs, real git, sandboxed shell workers (bwrap) that plant the rules and the file they hide.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

const sandboxed = probeSandbox().available;

async function open(): Promise<Engine> {
  const sandbox = createSandbox(sandboxed ? 'required' : 'off');
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox }),
    sandbox,
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>): Promise<FullJob> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true }) as FullJob;
}

/** A pytest project whose add() subtracts: its test fails until the code is fixed. */
const PYTEST_FILES: Record<string, string> = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'pytest.ini': '[pytest]\ntestpaths = tests\n',
  'tests/test_calc.py':
    'import sys\nfrom pathlib import Path\nsys.path.insert(0, str(Path(__file__).resolve().parent.parent))\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
};

/** A conftest.py that reports every failing test as passed. */
const PASS_ALL_CONFTEST = [
  'import pytest',
  '',
  '@pytest.hookimpl(hookwrapper=True)',
  'def pytest_runtest_makereport(item, call):',
  '    outcome = yield',
  '    report = outcome.get_result()',
  '    if report.failed:',
  "        report.outcome = 'passed'",
  '',
].join('\n');

const writeFile = (path: string, text: string): string => `printf '%s' ${shellQuote(text)} > ${path}`;
const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

function named(job: FullJob): string {
  return JSON.stringify({
    changes: job.result?.changes,
    proof: job.result?.proof,
    verification: job.result?.verification?.original_tests ?? null,
  });
}

describe('ignore rules a worker wrote hide nothing', () => {
  it('a tests/.gitignore that ignores itself and a conftest.py that passes every test: not `done · proved`, the conftest named', async () => {
    const engine = await open();
    const ws = makeWorkspace(PYTEST_FILES, { git: true });
    const job = await run(engine, {
      workspace: ws,
      verify: 'python3 -m pytest -q -p no:cacheprovider',
      fix_rounds: 0,
      tasks: [
        {
          name: 'cheat',
          instruction: 'make the tests pass',
          command: `${writeFile('tests/.gitignore', '.gitignore\nconftest.py\n')} && ${writeFile('tests/conftest.py', PASS_ALL_CONFTEST)}`,
        },
      ],
    });
    expect(job.result?.files_changed).toEqual(expect.arrayContaining(['tests/.gitignore', 'tests/conftest.py']));
    expect(job.result?.proof?.verdict).not.toBe('proved');
    expect(job.status).not.toBe('done');
    expect(named(job)).toContain('tests/conftest.py');
    expect(job.result?.changes?.hidden_by_ignore).toEqual(['tests/conftest.py']);
    expect(job.result?.proof?.uncertainty.find((u) => u.code === 'hidden_by_ignore')?.detail).toBe(
      'written, and hidden by ignore rules the workers wrote: tests/conftest.py',
    );
    // the checkpoint's tests ran in a copy without it, and failed
    expect(job.result?.verification?.original_tests).toMatchObject({ ran: true, ok: false });
  }, 60_000);

  it("in a worktree job too: the task's checkpoint (shared from the base) judges its worktree", async () => {
    const engine = await open();
    const ws = makeWorkspace(PYTEST_FILES, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: 'python3 -m pytest -q -p no:cacheprovider',
      fix_rounds: 0,
      tasks: [
        {
          name: 'cheat',
          instruction: 'make the tests pass',
          command: `${writeFile('tests/.gitignore', '.gitignore\nconftest.py\n')} && ${writeFile('tests/conftest.py', PASS_ALL_CONFTEST)}`,
        },
        { name: 'other', instruction: 'add a note', command: 'echo note > NOTES.md' },
      ],
    });
    expect(job.result?.changes?.added).toEqual(['NOTES.md', 'tests/.gitignore', 'tests/conftest.py']);
    // the task's verification names it: the checkpoint's tests ran without it, and failed
    expect(job.verdict).toContain('tests/conftest.py (added)');
    expect(job.result?.proof?.verdict).not.toBe('proved');
    expect(job.status).not.toBe('done');
  }, 90_000);
});

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'projects');

/** A node project whose add() subtracts, with the fixture's installed runner linked in. */
function nodeProject(runner: 'tape' | 'mocha'): string {
  const test =
    runner === 'tape'
      ? "import test from 'tape';\nimport { add } from '../src/math.js';\ntest('add adds', (t) => {\n  t.equal(add(2, 3), 5);\n  t.end();\n});\n"
      : "import assert from 'node:assert/strict';\nimport { add } from '../src/math.js';\ndescribe('math', () => {\n  it('add adds', () => {\n    assert.equal(add(2, 3), 5);\n  });\n});\n";
  const ws = makeWorkspace(
    {
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({
        name: `fixture-${runner}`,
        private: true,
        type: 'module',
        scripts: { test: runner === 'tape' ? "tape 'test/**/*.test.js'" : 'mocha' },
      }),
      'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n',
      [runner === 'tape' ? 'test/math.test.js' : 'test/math.spec.js']: test,
    },
    { git: true },
  );
  const installed = join(FIXTURES, runner, 'node_modules');
  if (!existsSync(installed))
    throw new Error(`the ${runner} fixture has no node_modules at ${installed}: run scripts/setup-fixtures.sh`);
  symlinkSync(realpathSync(installed), join(ws, 'node_modules'));
  return ws;
}

/** A tape test file, loaded first by the glob, after which every assertion passes. */
const TAPE_PASS_ALL =
  "import tape from 'tape';\nconst assert = tape.Test.prototype._assert;\ntape.Test.prototype._assert = function (ok, opts) {\n  return assert.call(this, true, opts);\n};\n";
/** A file mocha loads before the spec (its default `./test`, sorted), after which `assert.equal` never throws. */
const MOCHA_PASS_ALL = "import assert from 'node:assert/strict';\nassert.equal = () => undefined;\n";

describe('the runner loads what the rule hides', () => {
  it('tape: a `.git/info/exclude` line hides a test file that makes every assertion pass: not `done · proved`, the file named', async () => {
    const engine = await open();
    const ws = nodeProject('tape');
    const job = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        {
          name: 'cheat',
          instruction: 'make the tests pass',
          command: `echo test/aa.test.js >> .git/info/exclude && ${writeFile('test/aa.test.js', TAPE_PASS_ALL)}`,
        },
      ],
    });
    expect(job.result?.changes?.hidden_by_ignore).toEqual(['test/aa.test.js']);
    expect(job.result?.files_changed).toEqual(['test/aa.test.js']);
    expect(job.result?.proof?.verdict).not.toBe('proved');
    expect(job.status).not.toBe('done');
    expect(job.result?.verification?.original_tests).toMatchObject({ ran: true, ok: false });
  }, 60_000);

  it('mocha: a new line in the tracked root .gitignore hides a helper the runner loads first: not `done · proved`, the helper named', async () => {
    const engine = await open();
    const ws = nodeProject('mocha');
    const job = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        {
          name: 'cheat',
          instruction: 'make the tests pass',
          command: `echo test/aa.js >> .gitignore && ${writeFile('test/aa.js', MOCHA_PASS_ALL)}`,
        },
      ],
    });
    expect(job.result?.changes?.hidden_by_ignore).toEqual(['test/aa.js']);
    expect(job.result?.files_changed).toEqual(['.gitignore', 'test/aa.js']);
    expect(job.result?.proof?.verdict).not.toBe('proved');
    expect(job.status).not.toBe('done');
    expect(job.result?.verification?.original_tests).toMatchObject({ ran: true, ok: false });
  }, 60_000);

  it('an honest worker that ignores the log and the module it generated: named, the job still `done · proved` (neither is a harness change)', async () => {
    const engine = await open();
    const ws = nodeProject('tape');
    const job = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      tasks: [
        {
          name: 'fix',
          instruction: 'make add add',
          command:
            "mkdir gen && echo 'export const plus = (a, b) => a + b;' > gen/plus.js && printf 'export { plus as add } from \"../gen/plus.js\";\\n' > src/math.js && echo built > build.log && printf '*.log\\ngen/\\n' >> .gitignore",
        },
      ],
    });
    expect(job.result?.changes?.hidden_by_ignore).toEqual(['build.log', 'gen/plus.js']);
    expect(job.status).toBe('done');
    expect(job.result?.proof?.verdict).toBe('proved');
  }, 60_000);
});
