import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir, writeFiles } from '../helpers/temp.js';
import { proofOf, resultOf, verificationOf } from '../helpers/answer.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function run(body: Record<string, unknown>): Promise<CompactJob> {
  const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
  engines.push(engine);
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id);
}

/** The outcome log's statuses of the last engine's jobs (acceptance and learned routing read it). */
const outcomeStatuses = (): string[] => {
  const engine = engines.at(-1) ?? expect.unreachable('no engine');
  return readFileSync(join(engine.dataDir, 'outcomes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { status: string }).status);
};

const BREAK_MULTIPLY = "sed -i 's/return a \\* b;/return a * b + 1;/' src/math.js";
const FIX_MULTIPLY = "sed -i 's/return a \\* b + 1;/return a * b;/' src/math.js";
const IS_FIXER = 'grep -q "verification of this work failed" "$GAFFER_INSTRUCTION_FILE"';

describe('new failures against the baseline', () => {
  // issue 33: graded as SWE-bench grades a patch — a failure that was there before is a code-changing job's to fix
  it('a test that failed at the checkpoint and still fails blocks a job that changes code: partial, exit 1, said first, an outcome that failed', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const job = await run({
      workspace: ws,
      fix_rounds: 0,
      tasks: [
        {
          name: 'wrong-fix',
          type: 'fix',
          instruction: 'add() subtracts: fix it',
          command: 'echo "// looked" >> src/other.js',
        },
      ],
    });
    expect(verificationOf(job)).toMatchObject({
      mode: 'auto',
      ok: false,
      blocking: true,
      pre_existing_only: false,
      failures_count: 1,
      pre_existing_count: 1,
      checkpoint_failures: 1,
    });
    expect(verificationOf(job)).not.toHaveProperty('new_failures');
    expect(job.status).toBe('partial');
    expect(resultOf(job).exit_code).toBe(1);
    expect(outcomeStatuses()).toEqual(['failed']);
    expect(job.verdict).toMatch(
      /^1 test failed before the work and still fails \(add adds\); the work fixed 0 of 1; declare known failures if they are not this job's · contradicted/,
    );
  });

  it('the work that fixes one of two checkpoint failures says how many it fixed', async () => {
    const ws = makeWorkspace({
      ...CALC_FILES,
      'src/math.js':
        'export function add(a, b) {\n  return a - b;\n}\nexport function multiply(a, b) {\n  return a * b + 1;\n}\n',
    });
    const job = await run({
      workspace: ws,
      fix_rounds: 0,
      tasks: [{ type: 'fix', instruction: 'fix add', command: FIX_ADD }],
    });
    // the verdict names the test left failing; the compact lists count it
    expect(verificationOf(job)).toMatchObject({
      ok: false,
      blocking: true,
      pre_existing_count: 1,
      checkpoint_failures: 2,
      fixed: ['add adds'],
    });
    expect(job.verdict).toMatch(
      /^1 test failed before the work and still fails \(multiply multiplies\); the work fixed 1 of 2;/,
    );
  });

  it('a failure declared known (verify.known_failures, a glob) does not block: done, partial, named', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const job = await run({
      workspace: ws,
      verify: { known_failures: ['add *'] },
      tasks: [{ instruction: 'docs', command: 'echo "# calc" > README.md' }],
    });
    // the compact answer names an id once: in known_failures, counted in pre_existing
    expect(verificationOf(job)).toMatchObject({
      ok: false,
      blocking: false,
      pre_existing_only: true,
      pre_existing_count: 1,
      known_failures: ['add adds'],
    });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('partial');
    expect(
      proofOf(job).uncertainty.find((u: { code: string }) => u.code === 'pre_existing_failures')?.detail,
    ).toContain('1 declared known');
    expect(job.verdict).toContain(
      'verification failed, known or pre-existing failures only, not blocking (1 failed, 1 passed)',
    );
  });

  it('known failures committed in .gaffer/workspace.json count; the same hint written by the worker does not', async () => {
    const hint = JSON.stringify({ verify: { known_failures: ['add adds'] } });
    const committed = makeWorkspace({ ...CALC_FILES, '.gaffer/workspace.json': hint }, { git: true });
    const ok = await run({
      workspace: committed,
      tasks: [{ instruction: 'docs', command: 'echo "# calc" > README.md' }],
    });
    expect(ok.status).toBe('done');
    expect(verificationOf(ok).known_failures).toEqual(['add adds']);

    const planted = makeWorkspace(CALC_FILES, { git: true });
    const job = await run({
      workspace: planted,
      fix_rounds: 0,
      tasks: [
        {
          instruction: 'docs',
          command: `mkdir -p .gaffer && echo '${hint}' > .gaffer/workspace.json && echo "# calc" > README.md`,
        },
      ],
    });
    expect(job.status).toBe('partial');
    expect(verificationOf(job).known_failures).toBeUndefined();
    expect(verificationOf(job)).toMatchObject({ blocking: true });
  });

  it('a task that changes nothing by its type (research) is judged as before: a failure that was there before does not block', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const job = await run({
      workspace: ws,
      tasks: [{ type: 'research', instruction: 'what does add() do?', command: 'cat src/math.js' }],
    });
    expect(verificationOf(job)).toMatchObject({
      mode: 'auto',
      ok: false,
      blocking: false,
      pre_existing_only: true,
      failures_count: 1,
      pre_existing: ['add adds'],
    });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('partial');
    expect(proofOf(job).uncertainty.map((u: { code: string }) => u.code)).toContain('pre_existing_failures');
    expect(job.verdict).toContain('verification failed, pre-existing only, not blocking (1 failed, 1 passed)');
    expect(resultOf(job).workers.filter((w: { role: string }) => w.role === 'fixer')).toEqual([]);
  });

  it('known_failures with the verification off is refused, naming the field', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
    engines.push(engine);
    expect(() =>
      engine.submit({
        workspace: makeWorkspace(CALC_FILES),
        verify: { command: 'none', known_failures: ['x'] },
        tasks: [{ instruction: 'x', command: 'true' }],
      }),
    ).toThrow(/verify\.known_failures: .*off/);
  });

  it('a worker that fixes one bug and breaks another test: the fix round gets exactly the new failure and repairs it', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const command = `if ${IS_FIXER}; then ${FIX_MULTIPLY}; else ${FIX_ADD} && ${BREAK_MULTIPLY}; fi`;
    const job = await run({
      workspace: ws,
      fix_rounds: 1,
      tasks: [{ name: 'fix-add', instruction: 'fix add', command }],
    });
    expect(verificationOf(job).previous).toEqual([
      { summary: '1 failed, 1 passed', failures: ['multiply multiplies'] },
    ]);
    expect(verificationOf(job)).toMatchObject({ ok: true, blocking: false, attempts: 2 });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
    expect(resultOf(job).workers.map((w: { name: string }) => w.name)).toEqual(['fix-add', 'fixer-1']);
  });

  it('…and ends partial/contradicted naming the new failure when the fixer cannot repair it', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const command = `if ${IS_FIXER}; then echo "cannot"; else ${FIX_ADD} && ${BREAK_MULTIPLY}; fi`;
    const job = await run({
      workspace: ws,
      fix_rounds: 1,
      tasks: [{ name: 'fix-add', instruction: 'fix add', command }],
    });
    expect(verificationOf(job)).toMatchObject({
      ok: false,
      blocking: true,
      failures_count: 1,
      new_failures: ['multiply multiplies'],
    });
    expect(verificationOf(job)).not.toHaveProperty('pre_existing');
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('contradicted');
    expect(job.verdict).toContain('verification FAILED (1 failed, 1 passed)');
  });

  it('an explicit command blocks on a pre-existing failure too, and still reports the split', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const job = await run({
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [{ instruction: 'docs', command: 'echo "# calc" > README.md' }],
    });
    expect(verificationOf(job)).toMatchObject({
      mode: 'command',
      ok: false,
      blocking: true,
      pre_existing_count: 1,
      pre_existing_only: false,
    });
    expect(job.verdict).toMatch(/^1 test failed before the work and still fails \(add adds\)/);
    expect(verificationOf(job)).not.toHaveProperty('new_failures');
    expect(job.status).toBe('partial');
  });

  it('a hang the workers caused is a new failure when the suite completed before', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const hang = "sed -i 's/return a \\* b;/while (true) {}/' src/math.js";
    const job = await run({
      workspace: ws,
      verify_timeout_s: 15,
      fix_rounds: 0,
      tasks: [{ instruction: 'break', command: hang }],
    });
    expect(verificationOf(job)).toMatchObject({
      ok: false,
      inconclusive: false,
      blocking: true,
      failures_count: 1,
      new_failures: ['<suite did not complete>'],
    });
    expect(job.status).toBe('partial');
  }, 60_000);

  it('tests the workers edited are flagged, and tests they removed make tests_weakened', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const dropAdd = "sed -i '/add adds/d' test/math.test.js";
    const job = await run({ workspace: ws, tasks: [{ instruction: 'cheat', command: dropAdd }] });
    expect(verificationOf(job).tests_touched).toEqual(['test/math.test.js']);
    expect(verificationOf(job).tests_weakened).toEqual(['add adds']);
    // the checkpoint's tests judge: the removed test, put back, still fails on the unchanged code
    // the id is named once: the failure the original tests add to the verification's, counted in theirs
    expect(verificationOf(job)).toMatchObject({
      ok: false,
      blocking: true,
      pre_existing: ['add adds'],
      original_tests: { ok: false, failures_count: 1, blocking: true },
    });
    expect(proofOf(job).verdict).toBe('contradicted');
    expect(proofOf(job).uncertainty.map((u: { code: string }) => u.code)).toContain('tests_weakened');
  });
});

describe('flaky tests', () => {
  it('a new failure that passes on a targeted rerun is flaky: reported, not blocking', async () => {
    const ws = makeWorkspace({});
    // fails on its first run in the workspace itself, passes after (and in the baseline copy, which is
    // elsewhere): a marker in the workspace, where a sandboxed verification may write
    writeFiles(ws, {
      'package.json': JSON.stringify({
        name: 'f',
        private: true,
        type: 'module',
        scripts: { test: 'node --test test/' },
      }),
      'test/flaky.test.js':
        "import { test } from 'node:test';\nimport { existsSync, writeFileSync } from 'node:fs';\n" +
        `const WORKSPACE = ${JSON.stringify(ws)};\n` +
        "test('sometimes fails', () => { if (process.cwd() === WORKSPACE && !existsSync('.flaky-state')) { writeFileSync('.flaky-state', '1'); throw new Error('flaky'); } });\n" +
        "test('stable', () => {});\n",
    });
    const job = await run({ workspace: ws, tasks: [{ instruction: 'docs', command: 'echo "# f" > README.md' }] });
    expect(verificationOf(job)).toMatchObject({ ok: true, blocking: false, flaky: ['sometimes fails'] });
    expect(verificationOf(job)).not.toHaveProperty('new_failures');
    expect(job.status).toBe('done');
    expect(proofOf(job)).toMatchObject({ verdict: 'proved', confidence: 0.9 });
    expect(proofOf(job).uncertainty.map((u: { code: string }) => u.code)).toEqual(['flaky_tests']);
  });
});
