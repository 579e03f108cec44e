import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CompactJob, CompactWorkerEntry } from '../../src/domain/answer.js';
import { Engine } from '../../src/engine/engine.js';
import { renderCompact } from '../../src/interfaces/cli/render.js';
import { makeWorkspace, tempDir, writeFiles } from '../helpers/temp.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

const HEAD = "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n";

/** node:test project: divide() is broken before the work (7 tests), multiply() is what the worker breaks (6 tests), one test is flaky. */
function project(): string {
  const ws = makeWorkspace({
    'package.json': JSON.stringify({
      name: 'p',
      private: true,
      type: 'module',
      scripts: { test: 'node --test test/' },
    }),
    'src/math.js': 'export const multiply = (a, b) => a * b;\nexport const divide = (a, b) => a * b;\n',
    'test/pre.test.js': `${HEAD}import { divide } from '../src/math.js';\n${[1, 2, 3, 4, 5, 6, 7].map((n) => `test('divide ${n}', () => assert.equal(divide(${n * 2}, 2), ${n}));`).join('\n')}\n`,
    'test/new.test.js': `${HEAD}import { multiply } from '../src/math.js';\n${[1, 2, 3, 4, 5, 6].map((n) => `test('multiply ${n}', () => assert.equal(multiply(${n}, 2), ${n * 2}));`).join('\n')}\n`,
  });
  // fails once in the workspace (not in the checkpoint's copy, where it passes): a new failure that passes on rerun
  writeFiles(ws, {
    'test/flaky.test.js':
      `${HEAD}import { existsSync, writeFileSync } from 'node:fs';\n` +
      `test('sometimes fails', () => { if (process.cwd() === ${JSON.stringify(ws)} && !existsSync('.flaky-state')) { writeFileSync('.flaky-state', '1'); throw new Error('flaky'); } });\n`,
  });
  return ws;
}

describe('gaffer status for a person', () => {
  it('names the new, the pre-existing and the flaky failures (first 5 of each, the rest counted) and each worker’s duration', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data') });
    engines.push(engine);
    const ws = project();
    const { job: submitted } = engine.submit({
      workspace: ws,
      verify: 'auto',
      verify_scope: 'all',
      fix_rounds: 0,
      tasks: [
        {
          name: 'tweak',
          instruction: 'make multiply add one',
          command: "sed -i 's/a \\* b;$/a * b + 1;/' src/math.js",
        },
      ],
    });
    await engine.settled(submitted.id);
    const job = engine.get(submitted.id);
    const v = job.result?.verification ?? expect.unreachable('the job has no verification');
    expect(v.new_failures).toHaveLength(6);
    // issue 33: the verdict's first words name the first three the work left failing; the list counts them
    expect(v.pre_existing).toHaveLength(4);
    expect(v.pre_existing_count).toBe(7);
    expect(job.verdict).toMatch(
      /^7 tests failed before the work and still fail \(divide 1, divide 2, divide 3 and 4 more\)/,
    );
    expect(v.flaky).toEqual(['sometimes fails']);

    const text = renderCompact(job);
    const line = (label: string) => text.split('\n').find((l) => l.trimStart().startsWith(label)) ?? '';
    expect(line('new failures (6):')).toMatch(/: +(multiply \d, ){4}multiply \d \+1 more$/);
    expect(line('pre-existing (7):')).toMatch(/: +(divide \d, ){3}divide \d \+3 more$/);
    expect(line('flaky (1):')).toMatch(/: +sometimes fails$/);
    const worker = line('tweak');
    expect(worker).not.toContain('- s');
    // one worker: what it changed is the job's `changes`, printed below (issue 33: said once)
    expect(worker).toMatch(/ \d+(\.\d)? s$/);
  });

  it('a live worker reads how long it has run so far; a worker with no duration shows none', () => {
    const base: CompactJob = {
      id: 'a'.repeat(12),
      title: 't',
      status: 'running',
      verdict: null,
      error: null,
      owner: null,
      workspace: '/w',
      created: 0,
      started: 0,
      finished: null,
      duration_s: 3,
      tasks: [],
      parallel: false,
      verify: 'none',
      verify_scope: 'all',
      fix_rounds: 0,
    };
    const worker: CompactWorkerEntry = {
      name: 'w',
      role: 'worker',
      attempt: 1,
      runner: 'shell',
      status: 'running',
      outcome: null,
      summary: '',
      sandboxed: false,
    };
    expect(renderCompact({ ...base, result: { workers: [{ ...worker, duration_s: 12.3 }] } })).toContain(
      '12.3 s so far',
    );
    const done = renderCompact({
      ...base,
      status: 'done',
      result: { workers: [{ ...worker, status: 'done', outcome: 'success' }] },
    });
    expect(done).not.toMatch(/ - s| s$/m);
  });
});
