import { describe, expect, it } from 'vitest';
import { GafferError } from '../../src/domain/errors.js';
import { parseJobRequest, type JobSpec } from '../../src/domain/request.js';

const runners = { defaultRunner: null, available: ['shell'] };
const parse = (body: unknown): JobSpec => parseJobRequest(body, runners);

function refusal(body: unknown): { code: string; field: string | undefined; message: string } {
  try {
    parse(body);
  } catch (err) {
    expect(err).toBeInstanceOf(GafferError);
    const e = err as GafferError;
    return { code: e.code, field: e.field, message: e.message };
  }
  throw new Error('expected a refusal');
}

const ok = { workspace: '/tmp/ws', tasks: [{ instruction: 'do it', command: 'true' }] };

describe('the job request', () => {
  it('fills every default of spec 02', () => {
    const spec = parse(ok);
    expect(spec).toMatchObject({
      parallel: false,
      verify: { mode: 'auto' },
      verify_scope: 'related',
      verify_timeout_s: 300,
      fix_rounds: 1,
      timeout_s: 900,
      max_rounds: 20,
      isolation: 'shared',
      merge: 'none',
      criteria: [],
      expected_output_contains: null,
    });
    expect(spec.tasks[0]).toMatchObject({
      name: 'worker-1',
      type: 'implement',
      runner: 'shell',
      files: [],
      command: 'true',
    });
    expect(spec.title).toBe('do it');
  });

  it('takes a plain string as a task and names tasks worker-1, worker-2 …', () => {
    const spec = parseJobRequest({ workspace: '/w', runner: 'shell', tasks: ['a', 'b'] }, runners);
    expect(spec.tasks.map((t) => [t.name, t.instruction])).toEqual([
      ['worker-1', 'a'],
      ['worker-2', 'b'],
    ]);
  });

  it.each([
    [{ ...ok, verify: 'none' }, { mode: 'off' }],
    [{ ...ok, verify: 'off' }, { mode: 'off' }],
    [{ ...ok, verify: 'false' }, { mode: 'off' }],
    [{ ...ok, verify: false }, { mode: 'off' }],
    [{ ...ok, verify: true }, { mode: 'auto' }],
    [{ ...ok, verify: 'auto' }, { mode: 'auto' }],
    [
      { ...ok, verify: 'npm test' },
      { mode: 'command', command: 'npm test' },
    ],
  ])('normalizes verify %#', (body, expected) => {
    expect(parse(body).verify).toEqual(expected);
  });

  it('refuses unknown keys, naming them', () => {
    expect(refusal({ ...ok, model_url: 'http://x' })).toMatchObject({ code: 'invalid_request', field: 'model_url' });
    expect(refusal({ ...ok, tasks: [{ instruction: 'x', command: 'true', env: { A: '1' } }] })).toMatchObject({
      code: 'invalid_request',
      field: 'tasks[0].env',
    });
  });

  it.each([
    [{ ...ok, tasks: [] }, 'tasks'],
    [{ ...ok, tasks: Array.from({ length: 9 }, () => 'x') }, 'tasks'],
    [{ ...ok, tasks: [{ instruction: '' }] }, 'tasks[0].instruction'],
    [{ ...ok, tasks: ['x'.repeat(20_001)] }, 'tasks[0].instruction'],
    [{ ...ok, tasks: [42] }, 'tasks[0]'],
    [{ ...ok, timeout_s: 5 }, 'timeout_s'],
    [{ ...ok, timeout_s: 86_401 }, 'timeout_s'],
    [{ ...ok, timeout_s: 10.5 }, 'timeout_s'],
    [{ ...ok, verify_timeout_s: 3_601 }, 'verify_timeout_s'],
    [{ ...ok, fix_rounds: 5 }, 'fix_rounds'],
    [{ ...ok, max_rounds: 0 }, 'max_rounds'],
    [{ ...ok, context: 'x'.repeat(8_001) }, 'context'],
    [{ ...ok, verify: 'x'.repeat(501) }, 'verify'],
    [{ ...ok, criteria: Array.from({ length: 21 }, () => 'c') }, 'criteria'],
    [{ ...ok, criteria: ['x'.repeat(301)] }, 'criteria[0]'],
    [{ ...ok, expected_output_contains: '' }, 'expected_output_contains'],
    [{ ...ok, expected_output_contains: '   ' }, 'expected_output_contains'],
    [{ ...ok, expected_output_contains: 'x'.repeat(201) }, 'expected_output_contains'],
    [{ ...ok, tasks: [{ instruction: 'x', command: 'true', files: ['../etc/passwd'] }] }, 'tasks[0].files[0]'],
    [{ ...ok, tasks: [{ instruction: 'x', command: 'true', files: ['/etc/passwd'] }] }, 'tasks[0].files[0]'],
    [{ ...ok, tasks: [{ instruction: 'x', command: 'true', outputs: ['a/../../b'] }] }, 'tasks[0].outputs[0]'],
    [{ ...ok, tasks: [{ instruction: 'x', command: 'true', name: 'Bad Name' }] }, 'tasks[0].name'],
    [{ ...ok, tasks: [{ instruction: 'x', command: 'true', name: 'job' }] }, 'tasks[0].name'],
    [{ ...ok, tasks: [{ instruction: 'x', command: 'true', type: 'dance' }] }, 'tasks[0].type'],
    [{ ...ok, parallel: 'yes' }, 'parallel'],
    [{ workspace: 5, tasks: ['x'] }, 'workspace'],
  ])('refuses a limit or type breach with the offending field %#', (body, field) => {
    const r = refusal(body);
    expect(r.code).toBe('invalid_request');
    expect(r.field).toBe(field);
  });

  it('names the value and the range in a limit message', () => {
    expect(refusal({ ...ok, timeout_s: -5 }).message).toBe('timeout_s: must be 10 or more, got -5');
  });

  it('takes worktree isolation with merge, and refuses merge without it', () => {
    expect(parseJobRequest({ ...ok, isolation: 'worktree', merge: 'auto' }, runners)).toMatchObject({
      isolation: 'worktree',
      merge: 'auto',
    });
    expect(refusal({ ...ok, merge: 'auto' })).toMatchObject({
      code: 'invalid_request',
      field: 'merge',
      message: expect.stringContaining('add "isolation": "worktree"'),
    });
  });

  it("reviewer: true adds a read-only review task on the job's runner, after the others; no runner, or shell, is refused", () => {
    const withBuiltin = { defaultRunner: null, available: ['shell', 'builtin'] };
    const spec = parseJobRequest(
      {
        ...ok,
        runner: 'builtin',
        parallel: true,
        reviewer: true,
        tasks: [
          { name: 'api', instruction: 'fix the api' },
          { name: 'reviewer', instruction: 'mine' },
        ],
      },
      withBuiltin,
    );
    const added = spec.tasks.at(-1);
    expect(added).toMatchObject({ name: 'reviewer-2', type: 'review', runner: 'builtin', files: [], outputs: [] });
    expect(added?.instruction).toContain('- api: fix the api');
    expect(added?.instruction).toContain('Do not change any file');
    // it runs in the phase after the implementers, and the answer says so
    expect(spec.task_order?.phases).toEqual([['api', 'reviewer'], ['reviewer-2']]);
    expect(refusal({ ...ok, runner: 'shell', reviewer: true })).toMatchObject({
      code: 'invalid_request',
      field: 'reviewer',
      message: expect.stringContaining('shell runner runs a command and cannot review'),
    });
    expect(refusal({ ...ok, reviewer: true })).toMatchObject({ code: 'no_runner', field: 'reviewer' });
    expect(() =>
      parseJobRequest(
        { workspace: '/tmp/ws', tasks: ['do it'], runner: 'builtin', reviewer: true },
        { defaultRunner: null, available: ['shell'] },
      ),
    ).toThrow(/not a runner this build can run/);
  });

  it('takes a remote repository instead of a workspace, and refuses a URL git must not be handed (spec 09)', () => {
    const tasks = ok.tasks;
    expect(parse({ repo: { url: 'https://example.com/x.git', ref: 'main' }, tasks }).repo).toEqual({
      url: 'https://example.com/x.git',
      ref: 'main',
    });
    for (const url of [
      '/srv/git/x.git',
      'file:///srv/git/x.git',
      'ssh://git@example.com/x.git',
      'git@example.com:team/x.git',
      'git://example.com/x',
    ])
      expect(parse({ repo: { url }, tasks }).repo).toEqual({ url, ref: 'HEAD' });
    const bad = (url: string, ref?: string) => refusal({ repo: { url, ...(ref !== undefined ? { ref } : {}) }, tasks });
    expect(bad('ext::sh -c touch% /tmp/x')).toMatchObject({
      code: 'invalid_request',
      field: 'repo.url',
      message: expect.stringContaining('spaces'),
    });
    expect(bad('ext::sh')).toMatchObject({ field: 'repo.url', message: expect.stringContaining('remote helper') });
    expect(bad('fd::3')).toMatchObject({ field: 'repo.url', message: expect.stringContaining('remote helper') });
    expect(bad('--upload-pack=touch /tmp/x')).toMatchObject({ field: 'repo.url' });
    expect(bad('-uevil')).toMatchObject({ field: 'repo.url', message: expect.stringContaining('option') });
    expect(bad('https://me:token@example.com/x.git')).toMatchObject({
      field: 'repo.url',
      message: expect.stringContaining('credential helper'),
    });
    expect(bad('ftp://example.com/x.git')).toMatchObject({
      field: 'repo.url',
      message: expect.stringContaining('ftp://'),
    });
    expect(bad('relative/x.git')).toMatchObject({
      field: 'repo.url',
      message: expect.stringContaining('absolute path'),
    });
    expect(bad('/srv/x.git', '--force')).toMatchObject({ field: 'repo.ref' });
    expect(bad('/srv/x.git', 'a..b')).toMatchObject({ field: 'repo.ref' });
    expect(bad('/srv/x.git', '+main')).toMatchObject({ field: 'repo.ref' });
    expect(bad('/srv/x.git', 'main:refs/heads/x')).toMatchObject({ field: 'repo.ref' });
    expect(refusal({ repo: { url: '/srv/x.git', branch: 'main' }, tasks })).toMatchObject({
      code: 'invalid_request',
      field: 'repo.branch',
    });
    expect(refusal({ tasks })).toMatchObject({
      code: 'invalid_request',
      field: 'workspace',
      message: expect.stringContaining('"repo"'),
    });
    expect(refusal({ ...ok, repo: { url: '/srv/x.git' } })).toMatchObject({ code: 'invalid_request', field: 'repo' });
    expect(refusal({ repo: { url: '/srv/x.git' }, tasks, isolation: 'worktree', merge: 'auto' })).toMatchObject({
      code: 'not_supported',
      field: 'merge',
    });
    expect(refusal({ repo: { url: '/srv/x.git' }, tasks, isolation: 'worktree' })).toMatchObject({
      code: 'not_supported',
      field: 'isolation',
    });
  });

  it('refuses duplicate task names', () => {
    const r = refusal({
      ...ok,
      tasks: [
        { instruction: 'a', name: 'x', command: 'true' },
        { instruction: 'b', name: 'x', command: 'true' },
      ],
    });
    expect(r).toMatchObject({ code: 'invalid_request', field: 'tasks[1].name' });
  });

  it('refuses fields of features this build does not have with not_supported', () => {
    // spec 06: worktree jobs are judged per task; job-level criteria have no one tree to be judged on
    expect(refusal({ ...ok, isolation: 'worktree', criteria: ['tests pass'] })).toMatchObject({
      code: 'not_supported',
      field: 'criteria',
    });
    expect(parse({ ...ok, approval: 'required' }).approval).toBe('required');
  });

  it('takes task gates in their forms and says which forms a wrong one could take (spec 05)', () => {
    const task = (gates: unknown, extra: object = {}) => ({
      ...ok,
      tasks: [{ instruction: 'x', command: 'true', gates, ...extra }],
    });
    expect(
      parse(task(['npm test', { command: 'make check' }, { kind: 'diff-scope', paths: ['src'] }, { kind: 'claims' }]))
        .tasks[0]?.gates,
    ).toEqual([
      { kind: 'command', command: 'npm test' },
      { kind: 'command', command: 'make check' },
      { kind: 'diff-scope', paths: ['src'] },
      { kind: 'claims' },
    ]);
    expect(refusal(task([{ kind: 'diff-scope' }]))).toMatchObject({
      code: 'invalid_request',
      field: 'tasks[0].gates[0]',
      message: expect.stringContaining(
        'must be a command string, {"command": "…"}, {"kind": "diff-scope", "paths": ["…"]}',
      ),
    });
    expect(refusal(task([{ kind: 'done_means' }]))).toMatchObject({
      field: 'tasks[0].gates[0]',
      message: expect.stringContaining("a done_means gate confirms the task's done_means, and it gives none"),
    });
  });

  it('refuses a task with no runner to run it', () => {
    expect(refusal({ workspace: '/w', tasks: ['think hard'] })).toMatchObject({
      code: 'no_runner',
      field: 'tasks[0].runner',
    });
    expect(refusal({ workspace: '/w', tasks: [{ instruction: 'x', runner: 'codex' }] })).toMatchObject({
      code: 'unknown_runner',
      field: 'tasks[0].runner',
    });
  });

  it('refuses a body that is not an object', () => {
    expect(refusal([1, 2]).code).toBe('invalid_request');
    expect(refusal(null).code).toBe('invalid_request');
  });
});
