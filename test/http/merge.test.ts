import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace } from '../helpers/temp.js';
import { inProcess, openEngine } from './helpers.js';

const errorShape = (code: string, field: string) => ({
  error: expect.objectContaining({ code, field, message: expect.any(String) }),
});
const TOKENS = { 'tok-alice': 'alice', 'tok-bob': 'bob' };
const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe('POST /api/jobs/:id/merge', () => {
  it("202 with the merge job, followed like any; the original's worktrees say merged; the refusals name the field", async () => {
    const engine = await openEngine({ runners: createRunners({ sandbox: createSandbox('off') }) });
    const { call } = inProcess(engine, { tokens: TOKENS });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const tasks = [
      { name: 'add-a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
      { name: 'add-b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
    ];
    const first = await call(
      'POST',
      '/api/jobs',
      { workspace: ws, isolation: 'worktree', verify: 'exit 0', tasks },
      as('tok-alice'),
    );
    expect(first.status).toBe(202);
    const id: string = first.json.id;
    await engine.settled(id);

    // the field is gaffer's: a request that names it is refused
    const named = await call(
      'POST',
      '/api/jobs',
      { workspace: ws, merge_of: { job: id, task: null }, tasks },
      as('tok-alice'),
    );
    expect(named.json).toEqual(errorShape('invalid_request', 'merge_of'));
    expect((await call('POST', `/api/jobs/${id}/merge`, { task: 5 }, as('tok-alice'))).json).toEqual(
      errorShape('invalid_request', 'task'),
    );
    expect((await call('POST', `/api/jobs/${id}/merge`, { task: 'nope' }, as('tok-alice'))).json).toEqual(
      errorShape('not_found', 'task'),
    );
    expect((await call('POST', `/api/jobs/${id}/merge`, {}, as('tok-bob'))).status).toBe(404);

    const merge = await call('POST', `/api/jobs/${id}/merge`, { task: 'add-a' }, as('tok-alice'));
    expect(merge.status).toBe(202);
    expect(merge.json).toMatchObject({
      title: `merge of ${id} add-a`,
      merge_of: { job: id, task: 'add-a' },
      owner: 'alice',
    });
    await engine.settled(merge.json.id);
    const final = await call('GET', `/api/jobs/${merge.json.id}`, undefined, as('tok-alice'));
    expect(final.json).toMatchObject({ status: 'done', merge_of: { job: id, task: 'add-a' } });
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('a\n');
    const original = await call('GET', `/api/jobs/${id}?full=1`, undefined, as('tok-alice'));
    expect(original.json.result.worktrees.tasks.map((t: { merge?: string }) => t.merge ?? null)).toEqual([
      'merged',
      null,
    ]);
  });
});
