import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/domain/answer.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelRequest } from '../support/model-server/index.js';

// spec 06 "Write policies and the mutation audit" and "Phase order", through real jobs: real git,
// real shell workers, the real verification.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox: createSandbox('off') }),
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>) {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return { full: engine.get(job.id, { full: true }), compact: engine.get(job.id) };
}

const rowOf = (answer: CompactJob, name: string) => answer.result?.workers.find((w) => w.name === name);

describe('the mutation audit', () => {
  it('a shell worker given one file that also edits another: `error`, the path on its row, the proof says so', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const { full, compact } = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        {
          name: 'fix-add',
          instruction: 'make add add',
          files: ['src/math.js'],
          command: `${FIX_ADD} && echo 'export const x = 1;' > src/other.js`,
        },
      ],
    });
    expect(full.status).toBe('partial');
    expect(full.result?.verification?.ok).toBe(true); // the work itself passes: the violation alone costs `done`
    const row = rowOf(full, 'fix-add');
    expect(row).toMatchObject({
      status: 'error',
      outcome: 'panic',
      stop_reason: 'write_policy_violation',
      write_audit: 'violation',
    });
    expect(row?.error).toBe(
      'wrote outside its write policy (an implementer may write only its named file, no existing test): src/other.js',
    );
    expect(rowOf(compact, 'fix-add')).toMatchObject({ write_audit: 'violation' });
    const doubt = full.result?.proof?.uncertainty.find((u) => u.code === 'write_policy_violation');
    expect(doubt?.detail).toBe('wrote outside the write policy: fix-add: src/other.js');
    expect(full.result?.proof?.verdict).not.toBe('proved');
    // the worker's writes are still the evidence: nothing is hidden or undone
    expect(full.result?.files_changed).toEqual(['src/math.js', 'src/other.js']);
    // its process ended `done`; the audit's word follows it in the events, as on the row
    const ends = engine
      .events(full.id)
      .events.filter((e) => e.name === 'fix-add' && (e.event === 'done' || e.event === 'error'));
    expect(ends.map((e) => e.event)).toEqual(['done', 'error']);
    expect(ends[1]?.message).toBe(row?.error);
  });

  it('an honest worker within its files: `ok` on the full row, left out of the compact one, the job done', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const { full, compact } = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      tasks: [{ name: 'fix-add', instruction: 'make add add', files: ['src/math.js'], command: FIX_ADD }],
    });
    expect(full.status).toBe('done');
    expect(rowOf(full, 'fix-add')).toMatchObject({ status: 'done', write_audit: 'ok' });
    expect(rowOf(compact, 'fix-add')).not.toHaveProperty('write_audit');
    expect(full.result?.proof?.verdict).toBe('proved');
  });

  it('a worker that rewrites a test to match the bug breaks the table even with no files named: violation', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        {
          name: 'cheat',
          instruction: 'make the tests pass',
          command: "sed -i 's/add(2, 3), 5/add(2, 3), -1/' test/math.test.js",
        },
      ],
    });
    expect(full.status).toBe('partial');
    expect(rowOf(full, 'cheat')).toMatchObject({
      status: 'error',
      write_audit: 'violation',
      error: expect.stringContaining('test/math.test.js'),
    });
    expect(full.result?.proof?.uncertainty.map((u) => u.code)).toContain('write_policy_violation');
    // with the task allowing tests to change, the same edit is the task's (and the checkpoint's tests still judge it)
    const allowed = await run(engine, {
      workspace: makeWorkspace(CALC_FILES, { git: true }),
      verify: 'npm test',
      fix_rounds: 0,
      tasks: [
        {
          name: 'cheat',
          instruction: 'make the tests pass',
          tests_may_change: true,
          command: "sed -i 's/add(2, 3), 5/add(2, 3), -1/' test/math.test.js",
        },
      ],
    });
    expect(rowOf(allowed.full, 'cheat')).toMatchObject({ write_audit: 'ok' });
    expect(allowed.full.result?.proof?.uncertainty.map((u) => u.code)).not.toContain('write_policy_violation');
  });

  it('sequential workers are audited one by one: only the one that strayed is charged', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [
        { name: 'a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt && echo a-again >> a.txt' },
      ],
    });
    expect(rowOf(full, 'a')).toMatchObject({ status: 'done', write_audit: 'ok' });
    expect(rowOf(full, 'b')).toMatchObject({
      status: 'error',
      write_audit: 'violation',
      error: expect.stringMatching(/: a\.txt$/),
    });
  });

  it('a worker that failed and wrote nothing says `failed-no-mutation`', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'a', instruction: 'fail', command: 'exit 3' }],
    });
    expect(rowOf(full, 'a')).toMatchObject({ status: 'error', write_audit: 'failed-no-mutation' });
  });
});

describe('phase order', () => {
  it('a reviewer asked for in parallel runs after the implementer, against its changes; its own write is a violation', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const { full, compact } = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      parallel: true,
      tasks: [
        {
          name: 'review',
          type: 'review',
          instruction: 'review the fix',
          command: "grep -c 'a + b' src/math.js; echo looks good > review.txt",
        },
        { name: 'impl', instruction: 'make add add', files: ['src/math.js'], command: FIX_ADD },
      ],
    });
    expect(compact.task_order).toEqual({
      by: 'phase',
      from: ['review', 'impl'],
      to: ['impl', 'review'],
      phases: [['impl'], ['review']],
      why: "review run after the implementers, against their changes: a reviewer must see the implementers' diff, not the base",
    });
    // the reviewer saw the implementer's diff, not the base: its grep found the fix
    expect(rowOf(full, 'review')?.summary?.split('\n')[0]).toBe('1');
    expect(rowOf(full, 'impl')).toMatchObject({ status: 'done', write_audit: 'ok' });
    expect(rowOf(full, 'review')).toMatchObject({
      status: 'error',
      write_audit: 'violation',
      error: expect.stringMatching(/a reviewer may write nothing in the project\): review\.txt$/),
    });
    expect(full.status).toBe('partial');
    expect(readFileSync(join(ws, 'src/math.js'), 'utf8')).toContain('a + b');
  });

  it('a reviewer that writes only its declared output passes the audit', async () => {
    const engine = await open();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'npm test',
      tasks: [
        { name: 'impl', instruction: 'make add add', files: ['src/math.js'], command: FIX_ADD },
        {
          name: 'review',
          type: 'review',
          instruction: 'review the fix',
          outputs: ['review.md'],
          command: 'echo "## Review: fine" > review.md',
        },
      ],
    });
    expect(full.task_order).toBeUndefined();
    expect(rowOf(full, 'review')).toMatchObject({ status: 'done', write_audit: 'ok' });
    expect(full.status).toBe('done');
  });
});

describe('reviewer: true (spec 02)', () => {
  it("adds a read-only reviewer on the job's runner after the tasks: it sees their list and their change, and its attempted write is refused", async () => {
    const server = await startModelServer();
    try {
      const engine = await Engine.open({
        dataDir: join(tempDir('gaffer-data-'), 'data'),
        runners: createRunners({
          sandbox: 'off',
          builtin: {
            endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' },
          },
        }),
      });
      engines.push(engine);
      server.script([
        // the reviewer looks at the change, tries to "fix" it itself, then reports
        {
          when: (r: ModelRequest) => !r.isToolResult && r.lastText.includes('Review the work'),
          toolCalls: [{ name: 'read_file', args: { path: 'src/math.js' } }],
        },
        {
          when: (r: ModelRequest) => r.isToolResult && r.toolResults.some((t) => t.output.includes('a + b')),
          toolCalls: [{ name: 'write_file', args: { path: 'src/math.js', content: '// mine\n' } }],
        },
        { when: (r: ModelRequest) => r.isToolResult, text: 'impl did what it was asked: add now adds. No bug found.' },
      ]);
      const ws = makeWorkspace(CALC_FILES, { git: true });
      const { full } = await run(engine, {
        workspace: ws,
        runner: 'builtin',
        reviewer: true,
        parallel: true,
        verify: 'npm test',
        tasks: [
          { name: 'impl', runner: 'shell', instruction: 'make add add', files: ['src/math.js'], command: FIX_ADD },
        ],
      });
      expect(full.tasks.map((t) => [t.name, t.runner])).toEqual([
        ['impl', 'shell'],
        ['reviewer', 'builtin'],
      ]);
      expect(full.task_order?.phases).toEqual([['impl'], ['reviewer']]);
      const reviewer = rowOf(full, 'reviewer');
      expect(reviewer).toMatchObject({ role: 'reviewer', status: 'done', runner: 'builtin' });
      expect(reviewer?.summary).toContain('No bug found');
      expect(reviewer?.refusals?.[0]?.tool).toBe('write_file');
      // it was told what the tasks were, and read the implementer's change
      expect(server.requests.some((r) => r.lastText.includes('- impl: make add add'))).toBe(true);
      expect(readFileSync(join(ws, 'src/math.js'), 'utf8')).toContain('a + b');
      expect(full.status).toBe('done');
    } finally {
      await server.close();
    }
  });
});

describe('retrying missing work (spec 06)', () => {
  it('a worker that exits 0 without its declared output is retried once with a new attempt, told what was missing', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
    // writes the report only when its instruction says a previous attempt left it missing
    const command =
      'if grep -q "previous attempt" "$GAFFER_INSTRUCTION_FILE"; then echo "# findings" > report.md; else echo "looked"; fi';
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'audit', type: 'research', instruction: 'write report.md', outputs: ['report.md'], command }],
    });
    expect(full.result?.workers.map((w) => [w.name, w.attempt, w.status, w.stop_reason])).toEqual([
      ['audit', 1, 'error', 'outputs_missing'],
      ['audit+retry', 2, 'done', 'complete'],
    ]);
    expect(full.status).toBe('done');
    expect(full.verdict).toContain('1/1 workers done');
    expect(readFileSync(join(ws, 'report.md'), 'utf8')).toBe('# findings\n');
    const attempts = engine.store.listAttempts(full.id).map((a) => [a.worker, a.task, a.attempt]);
    expect(attempts).toEqual([
      ['audit', 'audit', 1],
      ['audit+retry', 'audit', 2],
    ]);
  });

  it('a worker that exits non-zero without its output is not retried: that is a failure, not missing work', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
    const { full } = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [
        { name: 'audit', type: 'research', instruction: 'write report.md', outputs: ['report.md'], command: 'exit 2' },
      ],
    });
    expect(full.result?.workers.map((w) => [w.name, w.status, w.stop_reason])).toEqual([
      ['audit', 'error', 'exit_nonzero'],
    ]);
    expect(full.status).toBe('partial');
  });
});
