import { spawnSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import {
  collapseRepeats,
  cutPathArguments,
  dropRuntimeFrames,
  elideMiddle,
  keepTail,
  relativizePaths,
  shareBudget,
} from '../../src/engine/queries/compact-text.js';
import { CALC_FILES, makeWorkspace, tempDir } from '../helpers/temp.js';
import { proofOf, resultOf, verificationOf, workerOf } from '../helpers/answer.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('shortening the compact answer’s text', () => {
  it('folds a run of identical lines into one marked with its count, and blank runs into one blank line', () => {
    expect(collapseRepeats('start\nstep ok\nstep ok\nstep ok\nend')).toBe('start\nstep ok [×3]\nend');
    expect(collapseRepeats('a\n\n\nb\nc')).toBe('a\n\nb\nc');
  });

  it('folds stack frames inside the runtime or node_modules, keeping the project’s own', () => {
    const stack = [
      '  stack: |-',
      '    TestContext.<anonymous> (test/value.test.js:6:10)',
      '    Test.runInAsyncScope (node:async_hooks:206:9)',
      '    Test.run (node:internal/test_runner/test:796:25)',
      '    node:internal/test_runner/harness:255:12',
      '    at Object.run (/w/node_modules/vitest/dist/x.js:1:2)',
      '  ...',
      '    at add (src/math.js:2:9)',
      '    at Object.run (/w/node_modules/vitest/dist/x.js:1:2)',
    ].join('\n');
    expect(dropRuntimeFrames(stack)).toBe(
      [
        '  stack: |-',
        '    TestContext.<anonymous> (test/value.test.js:6:10)',
        '    … 4 runtime frames',
        '  ...',
        '    at add (src/math.js:2:9)',
        '    at Object.run (/w/node_modules/vitest/dist/x.js:1:2)',
      ].join('\n'),
    );
  });

  it('makes paths under the workspace relative, and only where a path starts', () => {
    const text =
      "location: '/tmp/ws/test/a.js:5:1'\n    at x (file:///tmp/ws/test/a.js:6:10)\n/tmp/ws/src/b.js\n/home/tmp/ws/c.js";
    expect(relativizePaths(text, '/tmp/ws/')).toBe(
      "location: 'test/a.js:5:1'\n    at x (test/a.js:6:10)\nsrc/b.js\n/home/tmp/ws/c.js",
    );
    expect(relativizePaths('/a/b', '/')).toBe('/a/b');
  });

  it('keeps the end from a line start, or the start and the end, within the size asked', () => {
    const text = `${'x'.repeat(50)}\nsecond line\nlast line`;
    expect(keepTail(text, 25)).toBe('…second line\nlast line');
    expect(keepTail('x'.repeat(40), 25)).toBe(`…${'x'.repeat(24)}`);
    expect(keepTail('short', 25)).toBe('short');
    const summary = `Fixed add() in src/math.js. ${'noise '.repeat(100)}All 2 tests pass.`;
    const cut = elideMiddle(summary, 120);
    expect(cut.length).toBeLessThanOrEqual(120);
    expect(cut.startsWith('Fixed add()')).toBe(true);
    expect(cut.endsWith('All 2 tests pass.')).toBe(true);
    expect(cut).toContain(' … ');
  });

  it('counts the paths a long related command ends with instead of spelling them out; a short one stays whole', () => {
    const tests = Array.from({ length: 15 }, (_, i) => `tests/test_module_${String(i + 1).padStart(2, '0')}.py`);
    expect(cutPathArguments(`python3 -m pytest -q -rA ${tests.join(' ')}`, tests)).toBe(
      'python3 -m pytest -q -rA … (15 related files)',
    );
    const packages = Array.from({ length: 12 }, (_, i) => `./internal/package${i}`);
    expect(cutPathArguments(`go test -json -count=1 ${packages.join(' ')}`, [])).toBe(
      'go test -json -count=1 … (12 packages)',
    );
    // vitest is given the changed files, not the tests it will pick
    const changed = Array.from({ length: 8 }, (_, i) => `'src/some dir/module-${i}.ts'`);
    expect(cutPathArguments(`npx vitest related --run ${changed.join(' ')}`, ['test/a.test.ts'])).toBe(
      'npx vitest related --run … (8 paths)',
    );
    expect(
      cutPathArguments('python3 -m pytest -q -rA tests/test_calc.py tests/test_slug.py', [
        'tests/test_calc.py',
        'tests/test_slug.py',
      ]),
    ).toBe('python3 -m pytest -q -rA tests/test_calc.py tests/test_slug.py');
    const oneLong = `node --test ${'x'.repeat(150)}/a.test.js`;
    expect(cutPathArguments(oneLong, [])).toBe(oneLong);
  });

  it('shares a budget: short texts take what they need, the rest split by weight, within floor and cap', () => {
    expect(shareBudget([50, 2000, 2000], [1, 1, 1], { budget: 1200, floor: 120, cap: 600 })).toEqual([50, 575, 575]);
    expect(shareBudget([900, 900], [1, 2], { budget: 900, floor: 120, cap: 600 })).toEqual([300, 600]);
    expect(shareBudget(Array(20).fill(500), Array(20).fill(1), { budget: 1200, floor: 120, cap: 600 })).toEqual(
      Array(20).fill(120),
    );
  });
});

// the shape of the `compact_tokens_failed` bench case (spec 10), small enough for a test
function noisyTask(n: number, breaks: boolean) {
  const instruction =
    `Task ${n}: update part-${n} and keep the public API unchanged, run the tests, report what changed. `.repeat(10);
  const command = `yes 'worker-${n}: building part-${n}, step ok' | head -c 20480; echo; echo 'export const part${n} = ${n};' > src/part-${n}.js${breaks ? "; sed -i 's/return a + b;/return a - b;/' src/math.js" : ''}; echo 'worker-${n} finished'`;
  return { name: `worker-${n}`, instruction, command };
}

describe('the compact answer of a 4-worker job whose verification fails', () => {
  it('stays under ~1,500 tokens and keeps the verdict, the failing ids, a useful tail and each worker’s last words', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), maxParallel: 2 });
    engines.push(engine);
    const ws = makeWorkspace({ ...CALC_FILES, 'src/math.js': CALC_FILES['src/math.js']!.replace('a - b', 'a + b') });
    const { job: submitted } = engine.submit({
      workspace: ws,
      verify: 'auto',
      parallel: true,
      fix_rounds: 1,
      tasks: [1, 2, 3, 4].map((n) => noisyTask(n, n === 4)),
    });
    await engine.settled(submitted.id);
    const job = engine.get(submitted.id);
    const verification = verificationOf(job);

    expect(JSON.stringify(job).length / 4).toBeLessThan(1_500);
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('contradicted');
    // issue 33: the id is named once, in its split list; `failures` is counted
    expect(verification).toMatchObject({ new_failures: ['add adds'], failures_count: 1 });
    expect(verification.output_tail?.length).toBeLessThanOrEqual(600);
    expect(verification.output_tail).not.toContain(ws);
    expect(verification.output_tail).toMatch(/5 !== -1|-1 !== 5/);
    expect(resultOf(job).files_changed).toContain('src/math.js');
    for (const task of job.tasks) expect(task.instruction.length).toBeLessThanOrEqual(200);
    const workers = resultOf(job).workers;
    expect(workers.map((w) => w.name)).toEqual(['worker-1', 'worker-2', 'worker-3', 'worker-4', 'fixer-1']);
    for (const w of workers) {
      expect(w.summary?.length).toBeLessThanOrEqual(600);
      expect(w.summary).toMatch(/worker-\d finished$/);
      expect(w.summary).toMatch(/step ok \[×\d+\]/);
    }
    expect(workers.reduce((sum, w) => sum + (w.summary ?? '').length, 0)).toBeLessThanOrEqual(1_200);

    // ?full=1 keeps the summaries and the tail as the runner and the verification left them
    const full = engine.get(submitted.id, { full: true });
    expect(verificationOf(full).output_tail).toContain(ws);
    expect(workerOf(full).summary).not.toContain('[×');
  });
});

/** A python that can run pytest here: the machine's, or the pytest fixture's venv (scripts/setup-fixtures.sh). */
function findPytest(): { venv: string | null } | null {
  if (spawnSync('python3', ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0) return { venv: null };
  const venv = join(import.meta.dirname, '..', 'fixtures', 'projects', 'pytest', '.venv');
  return existsSync(join(venv, 'bin', 'python')) ? { venv } : null;
}
const pytest = findPytest();

/**
 * A pytest project as real ones are laid out: a package, 15 test modules that import the module
 * the worker changes and 3 that do not (so related scope selects 15 files, not the whole suite).
 */
function pytestProject(): string {
  const files: Record<string, string> = {
    'pytest.ini': '[pytest]\ntestpaths = tests\n',
    'pkg/__init__.py': '',
    'pkg/core.py': 'def add(a, b):\n    return a - b\n\n\ndef scale(a, k):\n    return a * k\n',
    'pkg/text.py': 'def shout(s):\n    return s.upper()\n',
  };
  for (const area of ['banner', 'headings', 'labels']) {
    files[`tests/test_${area}.py`] =
      `from pkg.text import shout\n\n\ndef test_${area}_shouts():\n    assert shout("a") == "A"\n`;
  }
  const areas = [
    'parser',
    'formatter',
    'config',
    'cache',
    'client',
    'server',
    'models',
    'views',
    'utils',
    'cli',
    'storage',
    'auth',
    'events',
    'reports',
    'plugins',
  ];
  for (const area of areas) {
    files[`tests/test_${area}.py`] =
      `from pkg.core import add, scale\n\n\ndef test_${area}_adds():\n    assert add(2, 3) == 5\n\n\ndef test_${area}_scales():\n    assert scale(2, 3) == 6\n`;
  }
  const ws = makeWorkspace(files, { git: true });
  if (pytest?.venv) symlinkSync(pytest.venv, join(ws, '.venv'));
  return ws;
}

describe.skipIf(pytest === null)('the compact answer on a real pytest project with 15 test files', () => {
  it('a clean one-worker job answers in at most 400 tokens', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), maxParallel: 2 });
    engines.push(engine);
    const ws = pytestProject();
    const { job: submitted } = engine.submit({
      workspace: ws,
      verify: 'auto',
      tasks: [
        {
          instruction: 'add() in pkg/core.py subtracts; make it add so the tests pass',
          files: ['pkg/core.py'],
          command: "sed -i 's/a - b/a + b/' pkg/core.py",
        },
      ],
    });
    await engine.settled(submitted.id);
    const job = engine.get(submitted.id);
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
    expect(verificationOf(job).summary).toMatch(/^3[03] passed$/);
    const tokens = JSON.stringify(job).length / 4;
    console.log(`compact answer of the clean 15-test-file pytest job: ${tokens} tokens`);
    expect(tokens).toBeLessThanOrEqual(400);
  });

  it('a related run keeps its command up to the file arguments and the first related files with their count; ?full=1 has them whole', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), maxParallel: 2 });
    engines.push(engine);
    const ws = pytestProject();
    // the worker breaks scale(): a failing related run is the final verification (no confirming full run, no fix round)
    const { job: submitted } = engine.submit({
      workspace: ws,
      verify: 'auto',
      fix_rounds: 0,
      tasks: [
        {
          instruction: 'make scale() in pkg/core.py add instead',
          files: ['pkg/core.py'],
          command: "sed -i 's/a \\* k/a + k/' pkg/core.py",
        },
      ],
    });
    await engine.settled(submitted.id);
    const compact = verificationOf(engine.get(submitted.id));
    const full = verificationOf(engine.get(submitted.id, { full: true }));
    expect(full.scope).toBe('related');
    expect(full.related_files).toHaveLength(15);
    const command = full.command ?? expect.unreachable('the verification ran no command');
    expect(command.split(' ').filter((w: string) => w.startsWith('tests/'))).toEqual(full.related_files);
    expect(compact.command).toBe(`${command.slice(0, command.indexOf(' tests/'))} … (15 related files)`);
    expect(compact.related_files).toEqual(full.related_files?.slice(0, 3));
    expect(compact.related_files_count).toBe(15);
    expect(compact).toMatchObject({ ok: false, blocking: true });
  });
});
