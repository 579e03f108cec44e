import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { inProcess, openEngine } from './helpers.js';

const errorShape = (code: string, field: string) => ({
  error: expect.objectContaining({ code, field, message: expect.any(String) }),
});
const TOKENS = { 'tok-alice': 'alice', 'tok-bob': 'bob' };
const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe('POST /api/jobs/:id/tasks/:task/follow-up (issue 16)', () => {
  it('202 with a new job linked to the task it follows, verified like any job; the refusals name the field', async () => {
    const engine = await openEngine();
    const { call } = inProcess(engine, { tokens: TOKENS });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const first = await call(
      'POST',
      '/api/jobs',
      {
        workspace: ws,
        verify: 'test -f b.txt',
        tasks: [{ name: 'make-b', runner: 'shell', instruction: 'write b.txt', command: 'sleep 1; echo b >> b.txt' }],
      },
      as('tok-alice'),
    );
    expect(first.status).toBe(202);
    const id: string = first.json.id;
    const path = `/api/jobs/${id}/tasks/make-b/follow-up`;

    const live = await call('POST', path, { note: 'again' }, as('tok-alice'));
    expect(live.status).toBe(409);
    expect(live.json).toEqual(errorShape('conflict', 'job_id'));
    await engine.settled(id);

    const followed = await call(
      'POST',
      path,
      { comments: [{ file: 'b.txt', line: 1, text: 'write it twice' }], note: 'keep it short' },
      as('tok-alice'),
    );
    expect(followed.status).toBe(202);
    expect(followed.json.id).not.toBe(id);
    expect(followed.json.follow_up).toEqual({ job: id, task: 'make-b', resumed: false });
    expect(followed.json.tasks).toEqual([expect.objectContaining({ name: 'make-b', runner: 'shell' })]);
    await engine.settled(followed.json.id);
    const final = await call('GET', `/api/jobs/${followed.json.id}`, undefined, as('tok-alice'));
    expect(final.json.status).toBe('done');
    expect(final.json.follow_up).toEqual({ job: id, task: 'make-b', resumed: false });
    expect(final.json.result.verification).toMatchObject({ ran: true, ok: true });

    // another owner does not see the job; unknown job and task
    expect((await call('POST', path, { note: 'x' }, as('tok-bob'))).json).toEqual(errorShape('not_found', 'job_id'));
    expect(
      (await call('POST', '/api/jobs/ffffffffffff/tasks/make-b/follow-up', { note: 'x' }, as('tok-alice'))).status,
    ).toBe(404);
    const noTask = await call('POST', `/api/jobs/${id}/tasks/nope/follow-up`, { note: 'x' }, as('tok-alice'));
    expect(noTask.status).toBe(404);
    expect(noTask.json).toEqual(errorShape('not_found', 'task'));

    // bodies: nothing to say, a bad comment, a line past the end, an internal field
    const refusals: [unknown, string][] = [
      [{}, 'comments'],
      [{ comments: [] }, 'comments'],
      [{ comments: 'b.txt:1:x' }, 'comments'],
      [{ comments: [{ file: 'b.txt', line: 0, text: 'x' }] }, 'comments[0].line'],
      [{ comments: [{ file: 'b.txt', line: 1, text: '' }] }, 'comments[0].text'],
      [{ comments: [{ file: 'b.txt', line: 7, text: 'x' }] }, 'comments[0].line'],
      [{ comments: [{ file: 'missing.txt', line: 1, text: 'x' }] }, 'comments[0].file'],
      [{ note: 'x', session: '/tmp/other.session.json' }, 'session'],
      [{ note: 'x', runner: 'builtin' }, 'runner'],
      [{ comments: [{ file: 'b.txt', line: 1, text: 'x', resume: 'abc' }] }, 'comments[0].resume'],
    ];
    for (const [body, field] of refusals) {
      const refused = await call('POST', path, body, as('tok-alice'));
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.json, JSON.stringify(body)).toEqual(errorShape('invalid_request', field));
    }
    expect(engine.list()).toHaveLength(2);
  });

  it("a worktree job's task: 202 with a follow-up that runs on the task's branch, ends done and verified; a deleted branch is a 409 naming it", async () => {
    const engine = await openEngine();
    const { call } = inProcess(engine, { tokens: TOKENS });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    // told to, appends to the b.txt it wrote — only its branch has it (merge none)
    const command = `if grep -q 'write it twice' "$GAFFER_INSTRUCTION_FILE"; then grep -qx b b.txt && echo b >> b.txt; else echo b > b.txt; fi`;
    const body = {
      workspace: ws,
      isolation: 'worktree',
      verify: 'test -f b.txt',
      tasks: [{ name: 'make-b', runner: 'shell', instruction: 'write b.txt', files: ['b.txt'], command }],
    };
    const first = await call('POST', '/api/jobs', body, as('tok-alice'));
    const id: string = first.json.id;
    await engine.settled(id);
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, encoding: 'utf8' }).trim();
    const tip = git('rev-parse', `gaffer/${id}/make-b`);

    const followed = await call(
      'POST',
      `/api/jobs/${id}/tasks/make-b/follow-up`,
      { comments: [{ file: 'b.txt', line: 1, text: 'write it twice' }] },
      as('tok-alice'),
    );
    expect(followed.status).toBe(202);
    expect(followed.json.follow_up).toEqual({ job: id, task: 'make-b', resumed: false });
    await engine.settled(followed.json.id);
    const final = await call('GET', `/api/jobs/${followed.json.id}?full=1`, undefined, as('tok-alice'));
    expect(final.json.status).toBe('done');
    expect(final.json.result.verification).toMatchObject({ ran: true, ok: true });
    expect(final.json.result.worktrees.base).toBe(tip);
    expect(git('show', `gaffer/${followed.json.id}/make-b:b.txt`)).toBe('b\nb');

    git('branch', '-D', `gaffer/${id}/make-b`);
    const gone = await call('POST', `/api/jobs/${id}/tasks/make-b/follow-up`, { note: 'again' }, as('tok-alice'));
    expect(gone.status).toBe(409);
    expect(gone.json).toEqual(errorShape('conflict', 'task'));
    expect(gone.json.error.message).toContain(`gaffer/${id}/make-b`);
  });
});
