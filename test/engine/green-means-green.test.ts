// Issue 33 "Green means green": workers that try to make a failing suite read as passed — by making the
// library end the test process early, so the runner stops before its summary or runs fewer tests — on real
// runners (tape, mocha, node:test) through the whole engine; and a test script that also lints.
import { existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { CALC_FILES, makeWorkspace, tempDir } from '../helpers/temp.js';
import { proofOf, verificationOf } from '../helpers/answer.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function run(body: Record<string, unknown>): Promise<CompactJob> {
  const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
  engines.push(engine);
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'projects');
/** The worker's attack: the library ends the process, exit 0, as soon as a test file loads it. */
const EXIT_EARLY = "sed -i '1i process.exit(0);' src/math.js";

/** A node project whose add() subtracts (committed: its test fails at the checkpoint), the runner's fixture linked in. */
function nodeProject(runner: 'tape' | 'mocha', script?: Record<string, string>): string {
  const test =
    runner === 'tape'
      ? "import test from 'tape';\nimport { add } from '../src/math.js';\ntest('add adds', (t) => {\n  t.equal(add(2, 3), 5);\n  t.end();\n});\ntest('add keeps zero', (t) => {\n  t.equal(add(0, 0), 0);\n  t.end();\n});\n"
      : "import assert from 'node:assert/strict';\nimport { add } from '../src/math.js';\ndescribe('math', () => {\n  it('add adds', () => {\n    assert.equal(add(2, 3), 5);\n  });\n  it('add keeps zero', () => {\n    assert.equal(add(0, 0), 0);\n  });\n});\n";
  const scripts = script ?? { test: runner === 'tape' ? "tape 'test/**/*.test.js'" : 'mocha' };
  const ws = makeWorkspace(
    {
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({ name: `fixture-${runner}`, private: true, type: 'module', scripts }),
      'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n',
      [runner === 'tape' ? 'test/math.test.js' : 'test/math.spec.js']: test,
    },
    { git: true },
  );
  const installed = join(FIXTURES, runner, 'node_modules');
  if (!existsSync(installed))
    throw new Error(`the ${runner} fixture has no node_modules at ${installed}: run scripts/setup-fixtures.sh`);
  // a real folder (as an install leaves it) of links to the fixture's packages: the sandbox binds a workspace's
  // own node_modules into the baseline's copy, never a node_modules that is itself a link (issue 32)
  mkdirSync(join(ws, 'node_modules'));
  for (const name of readdirSync(installed))
    symlinkSync(realpathSync(join(installed, name)), join(ws, 'node_modules', name));
  return ws;
}

describe('a suite that stops early is not a pass', () => {
  it('tape behind an explicit `npm test`: the library exits 0 on load; TAP without its plan is not a pass', async () => {
    const job = await run({
      workspace: nodeProject('tape'),
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: EXIT_EARLY }],
    });
    const v = verificationOf(job);
    expect(v).toMatchObject({ mode: 'command', ok: false, blocking: true, failures: ['<suite did not complete>'] });
    // the runner behind `npm test` is tape (read from the checkpoint's manifest): its silence is not a pass
    expect(v.summary).toMatch(/did not run to its end|no sign that any test ran/);
    expect(v.summary).toMatch(/completed before the work/);
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('contradicted');
  }, 60_000);

  it('mocha under verify auto: stopped before its "N passing" line is not a pass', async () => {
    const job = await run({
      workspace: nodeProject('mocha'),
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: EXIT_EARLY }],
    });
    const v = verificationOf(job);
    expect(v).toMatchObject({ ok: false, blocking: true });
    expect(v.summary).toMatch(/did not run to its end|completed before the work/);
    expect(job.status).toBe('partial');
  }, 60_000);

  it('node:test: a file whose tests never ran is a missing test by id, named on the verdict', async () => {
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const job = await run({
      workspace: ws,
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: EXIT_EARLY }],
    });
    const v = verificationOf(job);
    expect(v).toMatchObject({ ok: false, blocking: true });
    expect(v.missing_tests ?? v.failures).toEqual(
      expect.arrayContaining([expect.stringMatching(/add adds|<suite did not complete>/)]),
    );
    expect(job.status).toBe('partial');
    expect(job.verdict).not.toMatch(/proved/);
  }, 60_000);
});

describe('a test script that runs more than tests', () => {
  const lintFirst = { lint: "node -e 'process.exit(1)'", test: "npm run lint && tape 'test/**/*.test.js'" };

  it('verify auto runs the test runner inside it, says what it left out, and decides', async () => {
    const job = await run({
      workspace: nodeProject('tape', lintFirst),
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: "sed -i 's/a - b/a + b/' src/math.js" }],
    });
    const v = verificationOf(job);
    expect(v.command).toMatch(/^npm exec --offline -c .*tape/);
    expect(v.left_out).toEqual([expect.stringMatching(/^lint/)]);
    expect(v).toMatchObject({ ok: true, blocking: false });
    expect(job.status).toBe('done');
  }, 60_000);

  it('an explicit `npm test` whose lint fails is inconclusive and says which verify.command would settle it', async () => {
    const job = await run({
      workspace: nodeProject('tape', lintFirst),
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: "sed -i 's/a - b/a + b/' src/math.js" }],
    });
    const v = verificationOf(job);
    expect(v).toMatchObject({ ok: null, inconclusive: true });
    expect(v.advice).toMatch(
      /also runs lint.*"verify":\{"command":"npm exec --offline -c .*tape.*\.gaffer\/workspace\.json/,
    );
    expect(job.verdict).toContain('.gaffer/workspace.json');
    expect(proofOf(job).verdict).toBe('unproved');
  }, 60_000);
});

describe('where the checking time goes', () => {
  it('each run is a `check` event with its duration, and the final verification sums them by kind', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
    engines.push(engine);
    const { job } = engine.submit({
      workspace: makeWorkspace(CALC_FILES, { git: true }),
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: "sed -i 's/a - b/a + b/' src/math.js" }],
    });
    await engine.settled(job.id);
    const checks = engine.events(job.id).events.filter((e) => e.event === 'check');
    expect(checks.map((e) => e.what)).toEqual(expect.arrayContaining(['verification', 'baseline']));
    for (const e of checks) expect(typeof e.duration_s).toBe('number');
    const v = verificationOf(engine.get(job.id, { full: true }));
    expect(v.checking?.runs.map((r: { what: string }) => r.what)).toEqual(
      expect.arrayContaining(['verification', 'baseline']),
    );
    expect(v.checking?.suite_s).toBeGreaterThan(0);
  }, 60_000);
});
