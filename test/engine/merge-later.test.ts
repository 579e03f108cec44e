import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { GafferError } from '../../src/domain/errors.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// `gaffer merge` later, through real jobs: a real repository, real worktrees and shell workers, the
// merge a job of its own in the job queue — listed, waited for, cancelled — and its record on the original.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    maxParallel: 2,
    runners: createRunners({ sandbox: createSandbox('off') }),
    cancelPollMs: 50,
  });
  engines.push(engine);
  return engine;
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/** A merge-none worktree job of two tasks that each add a file; `verify` judges each task's tree and, later, the merged one. */
async function twoBranches(engine: Engine, verify: string) {
  const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
  const { job } = engine.submit({
    workspace: ws,
    isolation: 'worktree',
    verify,
    fix_rounds: 0,
    tasks: [
      { name: 'add-a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
      { name: 'add-b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
    ],
  });
  await engine.settled(job.id);
  expect(engine.get(job.id).status).toBe('done');
  return { ws, id: job.id };
}

/** Slow only in the merged tree (the only one holding both files): each task's own verification is quick. */
const SLOW_MERGED = `sh -c 'if [ -f a.txt ] && [ -f b.txt ]; then sleep 30; fi; exit 0'`;

/** Resolves once the merge job's merged tree is being verified. */
async function verifying(engine: Engine, id: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (engine.events(id).events.some((e) => e.message.startsWith('merged: '))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(
    `merge job ${id} never reached its verification: ${engine
      .events(id)
      .events.map((e) => e.message)
      .join(' | ')}`,
  );
}

describe('gaffer merge later is a job', () => {
  it('is listed, ends done, and the original job says its branches are merged', async () => {
    const engine = await open();
    const { ws, id } = await twoBranches(engine, `sh -c 'test -f README.md'`);
    const { job: merge, created } = await engine.merge(id, null);
    expect(created).toBe(true);
    expect(merge).toMatchObject({ title: `merge of ${id}`, merge_of: { job: id, task: null }, tasks: [] });
    expect(engine.list().map((j) => j.id)).toContain(merge.id);
    const waited = await engine.waitFor(merge.id, 'done', 60);
    expect(waited.state.status).toBe('done');
    expect(waited.state.verdict).toMatch(/merged add-a, add-b/);
    expect(engine.events(merge.id).events.map((e) => e.message)).toContain(
      'applying the verified merge to the workspace',
    );
    expect(readFileSync(join(ws, 'a.txt'), 'utf8') + readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('a\nb\n');
    const original = engine.get(id, { full: true });
    expect(original.result?.worktrees?.tasks.map((t) => t.merge)).toEqual(['merged', 'merged']);
    expect(original.result?.worktrees?.merges).toMatchObject([
      { tasks: ['add-a', 'add-b'], applied: true, branch: `gaffer/${id}/+merged` },
    ]);
  });

  it('a cancel while the merged tree is verified ends it cancelled at once; nothing applied, nothing marked merged', async () => {
    const engine = await open();
    const { ws, id } = await twoBranches(engine, SLOW_MERGED);
    const status = git(ws, 'status', '--porcelain');
    const { job: merge } = await engine.merge(id, null);
    await verifying(engine, merge.id);
    const asked = performance.now();
    engine.cancel(merge.id);
    await engine.settled(merge.id);
    expect(performance.now() - asked).toBeLessThan(5_000);
    expect(engine.get(merge.id)).toMatchObject({
      status: 'cancelled',
      verdict: 'cancelled: nothing applied to the workspace',
    });
    // the workspace is as it was
    expect(existsSync(join(ws, 'a.txt')) || existsSync(join(ws, 'b.txt'))).toBe(false);
    expect(git(ws, 'status', '--porcelain')).toBe(status);
    const wt = engine.get(id, { full: true }).result?.worktrees;
    expect(wt?.tasks.some((t) => t.merge === 'merged')).toBe(false);
    // the stopped merge is on record: its worktree and branch are listed (and pruned) through the original job
    expect(wt?.merges).toMatchObject([{ applied: false, why: expect.stringContaining('cancelled: nothing applied') }]);
    expect((await engine.worktrees()).map((e) => [e.task, e.state])).toContainEqual(['+merged', 'kept']);
  });

  it('a second merge of the job while one is live is refused, naming it', async () => {
    const engine = await open();
    const { id } = await twoBranches(engine, SLOW_MERGED);
    const { job: first } = await engine.merge(id, null);
    const before = engine.list().length;
    const refused = await engine.merge(id, null).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GafferError);
    expect(refused).toMatchObject({
      code: 'conflict',
      field: 'job',
      message: expect.stringContaining(`being merged by job ${first.id}`),
    });
    // refused before anything was stored
    expect(engine.list()).toHaveLength(before);
    engine.cancel(first.id);
    await engine.settled(first.id);
  });

  it('a request that names merge_of is refused: only gaffer merge sets it', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    expect(() =>
      engine.submit({
        workspace: ws,
        merge_of: { job: 'abc', task: null },
        tasks: [{ instruction: 'x', command: 'true' }],
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_request',
        field: 'merge_of',
        message: expect.stringContaining('gaffer merge JOB'),
      }),
    );
    expect(engine.list()).toHaveLength(0);
  });
});
