import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/engine/compact.js';
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


const BREAK_MULTIPLY = "sed -i 's/return a \\* b;/return a * b + 1;/' src/math.js";
const FIX_MULTIPLY = "sed -i 's/return a \\* b + 1;/return a * b;/' src/math.js";
const IS_FIXER = 'grep -q "verification of this work failed" "$GAFFER_INSTRUCTION_FILE"';

describe('new failures against the baseline', () => {
  it('a failure that was there before the work does not block an auto verification', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const job = await run({ workspace: ws, tasks: [{ instruction: 'docs', command: 'echo "# calc" > README.md' }] });
    // issue 33: the compact answer names the id once, in its split list; `failures` is counted
    expect(verificationOf(job)).toMatchObject({ mode: 'auto', ok: false, blocking: false, pre_existing_only: true, failures_count: 1, pre_existing: ['add adds'] });
    expect(verificationOf(job)).not.toHaveProperty('new_failures');
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('partial');
    expect(proofOf(job).uncertainty.map((u: { code: string }) => u.code)).toContain('pre_existing_failures');
    expect(job.verdict).toContain('verification failed, pre-existing only, not blocking (1 failed, 1 passed)');
    expect(resultOf(job).workers.filter((w: { role: string }) => w.role === 'fixer')).toEqual([]);
  });

  it('a worker that fixes one bug and breaks another test: the fix round gets exactly the new failure and repairs it', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const command = `if ${IS_FIXER}; then ${FIX_MULTIPLY}; else ${FIX_ADD} && ${BREAK_MULTIPLY}; fi`;
    const job = await run({ workspace: ws, fix_rounds: 1, tasks: [{ name: 'fix-add', instruction: 'fix add', command }] });
    expect(verificationOf(job).previous).toEqual([{ summary: '1 failed, 1 passed', failures: ['multiply multiplies'] }]);
    expect(verificationOf(job)).toMatchObject({ ok: true, blocking: false, attempts: 2 });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
    expect(resultOf(job).workers.map((w: { name: string }) => w.name)).toEqual(['fix-add', 'fixer-1']);
  });

  it('…and ends partial/contradicted naming the new failure when the fixer cannot repair it', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const command = `if ${IS_FIXER}; then echo "cannot"; else ${FIX_ADD} && ${BREAK_MULTIPLY}; fi`;
    const job = await run({ workspace: ws, fix_rounds: 1, tasks: [{ name: 'fix-add', instruction: 'fix add', command }] });
    expect(verificationOf(job)).toMatchObject({ ok: false, blocking: true, failures_count: 1, new_failures: ['multiply multiplies'] });
    expect(verificationOf(job)).not.toHaveProperty('pre_existing');
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('contradicted');
    expect(job.verdict).toContain('verification FAILED (1 failed, 1 passed)');
  });

  it('an explicit command blocks on a pre-existing failure too, and still reports the split', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const job = await run({ workspace: ws, verify: 'npm test', fix_rounds: 0, tasks: [{ instruction: 'docs', command: 'echo "# calc" > README.md' }] });
    expect(verificationOf(job)).toMatchObject({ mode: 'command', ok: false, blocking: true, pre_existing: ['add adds'], pre_existing_only: true });
    expect(verificationOf(job)).not.toHaveProperty('new_failures');
    expect(job.status).toBe('partial');
  });

  it('a hang the workers caused is a new failure when the suite completed before', async () => {
    const ws = makeWorkspace(CALC_FILES);
    const hang = "sed -i 's/return a \\* b;/while (true) {}/' src/math.js";
    const job = await run({ workspace: ws, verify_timeout_s: 15, fix_rounds: 0, tasks: [{ instruction: "break", command: hang }] });
    expect(verificationOf(job)).toMatchObject({ ok: false, inconclusive: false, blocking: true, failures_count: 1, new_failures: ['<suite did not complete>'] });
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
    expect(verificationOf(job)).toMatchObject({ ok: false, blocking: true, pre_existing: ['add adds'], original_tests: { ok: false, failures_count: 1, blocking: true } });
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
      'package.json': JSON.stringify({ name: 'f', private: true, type: 'module', scripts: { test: 'node --test test/' } }),
      'test/flaky.test.js':
        "import { test } from 'node:test';\nimport { existsSync, writeFileSync } from 'node:fs';\n" +
        `const WORKSPACE = ${JSON.stringify(ws)};\n` +
        "test('sometimes fails', () => { if (process.cwd() === WORKSPACE && !existsSync('.flaky-state')) { writeFileSync('.flaky-state', '1'); throw new Error('flaky'); } });\n" +
        "test('stable', () => {});\n",
    });
    const job = await run({ workspace: ws, tasks: [{ instruction: 'docs', command: 'echo "# f" > README.md' }] });
    expect(verificationOf(job)).toMatchObject({ ok: true, blocking: false, failures_count: 1, flaky: ['sometimes fails'] });
    expect(verificationOf(job)).not.toHaveProperty('new_failures');
    expect(job.status).toBe('done');
    expect(proofOf(job)).toMatchObject({ verdict: 'proved', confidence: 0.9 });
    expect(proofOf(job).uncertainty.map((u: { code: string }) => u.code)).toEqual(['flaky_tests']);
  });
});
