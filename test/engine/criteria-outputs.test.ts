import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { proofOf, resultOf, workerOf } from '../helpers/answer.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function runToEnd(body: Record<string, unknown>): Promise<{ engine: Engine; job: CompactJob }> {
  const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data') });
  engines.push(engine);
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return { engine, job: engine.get(job.id) };
}

// a real node:test suite, so the verification passes conclusively and only the criteria decide
const API = {
  'src/api.ts': 'export function api() {\n  return 1;\n}\n',
  'src/impl.ts': 'export const impl = 1;\n',
  'test/ok.test.js': "import { test } from 'node:test';\ntest('ok', () => {});\n",
};
const VERIFY = 'node --test test/';

describe('criteria and declared outputs through the engine', () => {
  it('"src/api.ts must not change" is unmet when the worker changed it: partial and contradicted, though the tests pass', async () => {
    const ws = makeWorkspace(API);
    const { job } = await runToEnd({
      workspace: ws,
      verify: VERIFY,
      tasks: [
        {
          name: 'api-fix',
          instruction: 'fix impl',
          command: 'echo "// edited" >> src/api.ts; echo "// edited" >> src/impl.ts',
          criteria: ['src/api.ts must not change', 'src/impl.ts changes'],
        },
      ],
    });
    expect(resultOf(job).criteria_check).toEqual({
      complete: false,
      met: ['api-fix: src/impl.ts changes'],
      unmet: ['api-fix: src/api.ts must not change'],
      unchecked: [],
      details: [{ criterion: 'api-fix: src/api.ts must not change', check: 'unchanged', why: 'src/api.ts changed' }],
    });
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('contradicted');
    expect(workerOf(job).status).toBe('done');
    expect(job.verdict).toContain('criteria unmet: api-fix: src/api.ts must not change');
  });

  it('the same criterion is met when the worker left src/api.ts alone', async () => {
    const ws = makeWorkspace(API);
    const { job } = await runToEnd({
      workspace: ws,
      verify: VERIFY,
      criteria: ['src/api.ts must not change'],
      tasks: [{ instruction: 'fix impl', command: 'echo "// edited" >> src/impl.ts' }],
    });
    expect(resultOf(job).criteria_check).toEqual({
      complete: true,
      met: ['src/api.ts must not change'],
      unmet: [],
      unchecked: [],
    });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
  });

  it('a command criterion runs in the workspace after the work: its exit decides', async () => {
    const ws = makeWorkspace({
      ...API,
      'scripts/check.js':
        "const s = require('fs').readFileSync('src/impl.ts', 'utf8'); if (!s.includes('impl = 2')) { console.error('impl is not 2'); process.exit(1); }\n",
    });
    const body = (command: string, criteria = ['`node scripts/check.js` exits 0']) => ({
      workspace: ws,
      verify: VERIFY,
      criteria,
      tasks: [{ instruction: 'set impl to 2', command }],
    });
    const met = (await runToEnd(body("sed -i 's/impl = 1/impl = 2/' src/impl.ts"))).job;
    expect(resultOf(met).criteria_check).toEqual({
      complete: true,
      met: ['`node scripts/check.js` exits 0'],
      unmet: [],
      unchecked: [],
    });
    expect(met.status).toBe('done');
    expect(proofOf(met).verdict).toBe('proved');

    // a criterion of no checked form is named unchecked: not met, so not done, and not proved
    const vague = (await runToEnd(body("sed -i 's/impl = 2/impl = 1/' src/impl.ts", ['the code reads well']))).job;
    expect(resultOf(vague).criteria_check).toEqual({
      complete: false,
      met: [],
      unmet: [],
      unchecked: ['the code reads well'],
    });
    expect(vague.status).toBe('partial');
    expect(proofOf(vague).verdict).toBe('partial');
    expect(proofOf(vague).uncertainty.map((u: { code: string }) => u.code)).toContain('criteria_unchecked');

    const unmet = (await runToEnd(body("sed -i 's/impl = 1/impl = 3/' src/impl.ts"))).job;
    expect(resultOf(unmet).criteria_check?.unmet).toEqual(['`node scripts/check.js` exits 0']);
    expect(resultOf(unmet).criteria_check?.details).toEqual([
      { criterion: '`node scripts/check.js` exits 0', check: 'command', why: 'exit 1: impl is not 2' },
    ]);
    expect(unmet.status).toBe('partial');
    expect(proofOf(unmet).verdict).toBe('contradicted');
  });

  it('a worker that exits 0 without writing its declared output is not done, and the job is partial', async () => {
    const ws = makeWorkspace({ 'src/app.js': 'x\n' });
    const { engine, job } = await runToEnd({
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          name: 'auditor',
          type: 'review',
          instruction: 'audit src/app.js',
          command: 'echo "looked at it"',
          outputs: ['reports/audit.md'],
        },
        {
          name: 'writer',
          instruction: 'write the summary',
          command: 'mkdir -p out && echo "# summary" > out/summary.md',
          outputs: ['out/summary.md'],
        },
      ],
    });
    // spec 06: missing work is retried once, as a new attempt; it is missing again, so the task is not done
    const [auditor, retry, writer] = resultOf(job).workers;
    expect(auditor).toMatchObject({
      name: 'auditor',
      attempt: 1,
      status: 'error',
      outcome: 'expected_error',
      stop_reason: 'outputs_missing',
      error: 'declared output reports/audit.md was never written',
    });
    expect(retry).toMatchObject({
      name: 'auditor+retry',
      attempt: 2,
      role: 'reviewer',
      status: 'error',
      stop_reason: 'outputs_missing',
    });
    expect(writer).toMatchObject({ name: 'writer', status: 'done', outcome: 'success' });
    expect(job.status).toBe('partial');
    expect(job.verdict).toContain('1/2 workers done');
    // the event says what the row says
    const ends = engine
      .events(job.id)
      .events.filter((e) => e.name === 'auditor' && (e.event === 'done' || e.event === 'error'));
    expect(ends.map((e) => [e.event, e.message])).toEqual([
      ['error', 'declared output reports/audit.md was never written'],
    ]);
  });

  it('a declared output left as it was at the checkpoint was never written', async () => {
    const ws = makeWorkspace({ 'reports/audit.json': '{"findings": []}\n' });
    const { job } = await runToEnd({
      workspace: ws,
      verify: 'none',
      tasks: [
        { name: 'auditor', instruction: 'audit', command: 'cat reports/audit.json', outputs: ['reports/audit.json'] },
      ],
    });
    expect(resultOf(job).workers[0]).toMatchObject({
      status: 'error',
      error: 'declared output reports/audit.json was never written (it is as it was at the checkpoint)',
    });
    expect(job.status).toBe('partial');
  });

  it('a worker that exits 1 after writing its valid JSON output is settled done, with a note that the process failed', async () => {
    const ws = makeWorkspace({ 'src/app.js': 'x\n' });
    const { engine, job } = await runToEnd({
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          name: 'auditor',
          instruction: 'audit',
          command:
            'mkdir -p reports && echo \'{"findings": 2}\' > reports/audit.json && echo "cleanup failed" >&2 && exit 1',
          outputs: ['reports/audit.json'],
        },
      ],
    });
    const worker = workerOf(job);
    expect(worker).toMatchObject({ name: 'auditor', status: 'done', outcome: 'success', stop_reason: 'exit_nonzero' });
    expect(worker.summary).toContain('cleanup failed');
    expect(worker.summary).toContain(
      'the process failed (exit code 1: cleanup failed), but every declared output is written and passes its checks: reports/audit.json',
    );
    expect(job.status).toBe('done');
    const ends = engine
      .events(job.id)
      .events.filter((e) => e.name === 'auditor' && (e.event === 'done' || e.event === 'error'));
    expect(ends.map((e) => e.event)).toEqual(['done']);
    expect(ends[0]?.message).toContain('every declared output is written');
  });

  it('a worker that exits 1 after writing invalid JSON stays an error', async () => {
    const ws = makeWorkspace({ 'src/app.js': 'x\n' });
    const { job } = await runToEnd({
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          name: 'auditor',
          instruction: 'audit',
          command: 'mkdir -p reports && echo \'{"findings":\' > reports/audit.json; exit 1',
          outputs: ['reports/audit.json'],
        },
      ],
    });
    expect(resultOf(job).workers[0]).toMatchObject({
      status: 'error',
      stop_reason: 'exit_nonzero',
      error: 'exit code 1',
    });
    expect(job.status).toBe('partial');
  });
});
