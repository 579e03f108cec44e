import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { CALC_FILES, FIX_ADD, makeWorkspace } from '../helpers/temp.js';
import { inProcess, jobRows, openEngine, serveEngine, shellTask } from './helpers.js';

type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; text: string; json: any; headers: Headers }>;

const doors: [string, (engine: Engine) => Promise<Call>][] = [
  ['in process', async (engine) => inProcess(engine).call],
  ['over a socket', async (engine) => (await serveEngine(engine)).call],
];

const errorShape = (code: string) => ({ error: expect.objectContaining({ code, message: expect.any(String) }) });

describe.each(doors)('the HTTP routes of spec 02 (%s)', (_door, open) => {
  it('POST /api/jobs: 202 + compact; the same key replays 200; another body 409; header vs body 400', async () => {
    const engine = await openEngine();
    const call = await open(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const body = { workspace: ws, verify: 'none', tasks: [shellTask('echo b >> a.txt')] };

    const first = await call('POST', '/api/jobs', body, { 'idempotency-key': 'k-1' });
    expect(first.status).toBe(202);
    expect(first.json).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      workspace: ws,
      wait_again: true,
      tasks: [{ name: 'worker-1', runner: 'shell' }],
    });
    expect(['queued', 'running']).toContain(first.json.status);

    const replay = await call('POST', '/api/jobs', body, { 'idempotency-key': 'k-1' });
    expect(replay.status).toBe(200);
    expect(replay.json.id).toBe(first.json.id);

    // the same key in the body is the same key
    const viaBody = await call('POST', '/api/jobs', { ...body, client_request_id: 'k-1' });
    expect(viaBody.status).toBe(200);
    expect(viaBody.json.id).toBe(first.json.id);

    const other = await call('POST', '/api/jobs', { ...body, title: 'something else' }, { 'idempotency-key': 'k-1' });
    expect(other.status).toBe(409);
    expect(other.json).toEqual(errorShape('conflict'));

    const disagree = await call(
      'POST',
      '/api/jobs',
      { ...body, client_request_id: 'k-2' },
      { 'idempotency-key': 'k-3' },
    );
    expect(disagree.status).toBe(400);
    expect(disagree.json).toMatchObject({ error: { code: 'invalid_request', field: 'client_request_id' } });

    // an empty or oversized key is refused, not shared
    for (const key of ['', '   ', 'k'.repeat(201)]) {
      const refused = await call('POST', '/api/jobs', body, { 'idempotency-key': key });
      expect([key.length, refused.status, refused.json.error.field]).toEqual([key.length, 400, 'Idempotency-Key']);
    }

    // a relative workspace would be the server's folder, not the caller's, even with the caller's cwd
    // sent: refused, saying why and what to send
    for (const workspace of ['.', 'ws']) {
      const relative = await call(
        'POST',
        '/api/jobs',
        { ...body, workspace },
        { 'gaffer-cwd': encodeURIComponent(dirname(ws)) },
      );
      expect([workspace, relative.status, relative.json.error.code, relative.json.error.field]).toEqual([
        workspace,
        400,
        'invalid_request',
        'workspace',
      ]);
      expect(relative.json.error.message).toContain('must be an absolute path');
      expect(relative.json.error.message).toMatch(/working directory, not the caller's.*send the full path/);
    }
    const tilde = await call('POST', '/api/jobs', { ...body, workspace: '~/app' });
    expect([tilde.status, tilde.json.error.field, tilde.json.error.message]).toEqual([
      400,
      'workspace',
      expect.stringContaining('"~" is expanded by a shell, not by gaffer'),
    ]);

    await engine.settled(first.json.id);
    expect(jobRows(engine)).toBe(1);
  });

  it('GET list / one / full, events (+states), log tail, cancel, approve, wait', async () => {
    const engine = await openEngine();
    const call = await open(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const long = `echo hello; ${'#'.repeat(300)}`;
    const post = await call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      title: 'first',
      tasks: [{ name: 'echo', instruction: long, command: 'echo hello-from-worker; echo b >> a.txt' }],
    });
    expect(post.status).toBe(202);
    const id = post.json.id as string;
    await engine.settled(id);

    const one = await call('GET', `/api/jobs/${id}`);
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ id, status: 'done', result: { changes: { modified: ['a.txt'] } } });
    expect(one.json.tasks[0].instruction.length).toBeLessThanOrEqual(200);
    const full = await call('GET', `/api/jobs/${id}?full=1`);
    expect(full.json.tasks[0].instruction).toBe(long);
    expect(full.json.result.workers[0].name).toBe('echo');

    const second = await call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      title: 'second',
      tasks: [shellTask('sleep 30')],
    });
    const list = await call('GET', '/api/jobs');
    expect(list.status).toBe(200);
    expect(list.json.jobs.map((j: { id: string }) => j.id)).toEqual([second.json.id, id]);
    for (const brief of list.json.jobs) expect(brief.result).toBeUndefined();
    expect(list.json.jobs[1].tasks[0].instruction.length).toBeLessThanOrEqual(200);
    expect((await call('GET', '/api/jobs?status=done&limit=1')).json.jobs.map((j: { id: string }) => j.id)).toEqual([
      id,
    ]);

    const events = await call('GET', `/api/jobs/${id}/events`);
    expect(events.status).toBe(200);
    expect(events.json.produced).toBe(events.json.events.length);
    expect(events.json.events.map((e: { seq: number }) => e.seq)).toEqual(
      Array.from({ length: events.json.produced }, (_, i) => i + 1),
    );
    expect(events.json.events.at(-1)).toMatchObject({ name: 'job', event: 'status', message: 'done' });
    expect(events.json.worker_states).toBeUndefined();
    const withStates = await call('GET', `/api/jobs/${second.json.id}/events?states=1`);
    expect(withStates.json.worker_states).toHaveProperty('worker-1');

    const log = await call('GET', `/api/jobs/${id}/workers/echo/log?tail=1024`);
    expect(log.status).toBe(200);
    expect(log.text).toContain('hello-from-worker');
    const tail = await call('GET', `/api/jobs/${id}/workers/echo/log?tail=5`);
    expect(tail.text.length).toBeLessThanOrEqual(5);
    expect((await call('GET', `/api/jobs/${id}/workers/nobody/log`)).status).toBe(404);
    expect((await call('GET', `/api/jobs/${id}/workers/echo/log?tail=-1`)).status).toBe(400);

    // wait: met, not met, bad condition, unknown job
    const met = await call('GET', `/api/jobs/${id}/wait?for=done&timeout_s=5`);
    expect(met.json).toMatchObject({ met: true, condition: 'done', state: { id, status: 'done' } });
    expect(typeof met.json.waited_s).toBe('number');
    const notMet = await call('GET', `/api/jobs/${second.json.id}/wait?for=done&timeout_s=0.3`);
    expect(notMet.status).toBe(200);
    expect(notMet.json).toMatchObject({ met: false, condition: 'done', state: { wait_again: true } });
    expect(notMet.json.waited_s).toBeGreaterThanOrEqual(0.2);
    const bad = await call('GET', `/api/jobs/${id}/wait?for=soon`);
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('invalid_request');
    for (const form of ['done', 'changed', 'phase:<text>', 'event:<text>', 'worker:<name|*>:<state>'])
      expect(bad.json.error.message).toContain(form);
    expect((await call('GET', '/api/jobs/ffffffffffff/wait')).json).toEqual(errorShape('not_found'));
    expect((await call('GET', '/api/jobs/ffffffffffff/wait')).status).toBe(404);

    // redispatch: nothing left to do, or still live
    expect((await call('POST', `/api/jobs/${id}/redispatch`)).json.error).toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('nothing to re-dispatch'),
    });
    expect((await call('POST', `/api/jobs/${second.json.id}/redispatch`)).status).toBe(409);

    // cancel a live job, then a final one
    const cancel = await call('POST', `/api/jobs/${second.json.id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(['cancelling', 'cancelled']).toContain(cancel.json.status);
    await engine.settled(second.json.id);
    expect((await call('GET', `/api/jobs/${second.json.id}`)).json.status).toBe('cancelled');
    const again = await call('POST', `/api/jobs/${id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.json).toEqual(errorShape('conflict'));

    const approve = await call('POST', `/api/jobs/${id}/approve`, { approve: true });
    expect(approve.status).toBe(409);
    expect(approve.json).toEqual(errorShape('conflict'));
    expect((await call('POST', '/api/jobs/ffffffffffff/approve', { approve: true })).status).toBe(404);
    expect((await call('GET', '/api/jobs/ffffffffffff')).status).toBe(404);
    expect((await call('POST', '/api/jobs/ffffffffffff/cancel')).status).toBe(404);
  });

  it('diff of a changed text file and of a binary file; redispatch of the tasks that did not end done', async () => {
    const engine = await openEngine();
    const call = await open(engine);
    const ws = makeWorkspace(CALC_FILES, { git: true });
    writeFileSync(join(ws, 'logo.bin'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]));
    const post = await call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [
        { name: 'fix', instruction: 'fix add', command: FIX_ADD, files: ['src/math.js'] },
        { name: 'bin', instruction: 'grow the logo', command: 'head -c 100 /dev/zero > logo.bin' },
        { name: 'broken', instruction: 'fails', command: 'exit 3' },
      ],
    });
    await engine.settled(post.json.id);
    const job = (await call('GET', `/api/jobs/${post.json.id}`)).json;
    expect(job.status).toBe('partial');
    expect(job.result.changes.modified).toEqual(['logo.bin', 'src/math.js']);

    const diff = await call('GET', `/api/jobs/${job.id}/diff?path=src/math.js`);
    expect(diff.status).toBe(200);
    expect(diff.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(diff.text).toContain('diff --git a/src/math.js b/src/math.js');
    expect(diff.text).toContain('-  return a - b;');
    expect(diff.text).toContain('+  return a + b;');
    const bin = await call('GET', `/api/jobs/${job.id}/diff?path=logo.bin`);
    expect(bin.status).toBe(200);
    expect(bin.text).toBe('Binary file logo.bin: 8 -> 100 bytes\n');
    expect((await call('GET', `/api/jobs/${job.id}/diff?path=package.json`)).text).toBe('');
    expect((await call('GET', `/api/jobs/${job.id}/diff`)).status).toBe(400);
    for (const path of ['../x', '/etc/passwd']) {
      const refused = await call('GET', `/api/jobs/${job.id}/diff?path=${encodeURIComponent(path)}`);
      expect(refused.status).toBe(400);
      expect(refused.json).toEqual(errorShape('invalid_request'));
    }

    const redo = await call('POST', `/api/jobs/${job.id}/redispatch`);
    expect(redo.status).toBe(202);
    expect(redo.json.id).not.toBe(job.id);
    expect(redo.json.tasks.map((t: { name: string }) => t.name)).toEqual(['broken']);
    expect(redo.json.title).toContain(`re-dispatch of ${job.id}`);
    await engine.settled(redo.json.id);
    expect((await call('POST', '/api/jobs/ffffffffffff/redispatch')).status).toBe(404);
  });

  it('lint, runners, stats, health, guide, an unknown route, a non-JSON body', async () => {
    const engine = await openEngine();
    const call = await open(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });

    const vague = await call('POST', '/api/lint', {
      workspace: ws,
      tasks: [{ instruction: 'improve it', command: 'true' }],
    });
    expect(vague.status).toBe(200);
    expect(vague.json).toMatchObject({
      ok: false,
      codes: expect.arrayContaining(['too_short', 'no_scope', 'no_verify']),
    });
    const clear = await call('POST', '/api/lint', {
      workspace: ws,
      verify: 'npm test',
      tasks: [
        {
          instruction: 'In src/a.ts make parse() return null on empty input instead of throwing.',
          files: ['src/a.ts'],
          command: 'true',
        },
      ],
    });
    expect(clear.json).toMatchObject({ ok: true, needs_detail: [] });
    expect((await call('POST', '/api/lint', { tasks: [] })).status).toBe(400);
    // lint checks the request, like dispatch: a task nothing can run is refused, not linted
    expect((await call('POST', '/api/lint', { workspace: ws, tasks: ['improve it'] })).json.error.code).toBe(
      'no_runner',
    );

    const runners = await call('GET', '/api/runners');
    expect(runners.json.runners).toEqual(
      expect.arrayContaining([expect.objectContaining({ key: 'shell', installed: true })]),
    );

    const zero = await call('GET', '/api/stats');
    expect(zero.json).toEqual({
      acceptance: {},
      outcomes_total: 0,
      excluded: { not_dispatched: 0, abstained: 0 },
      note: expect.stringContaining('not_dispatched'),
      recent: { jobs: 0, done: 0, partial: 0, failed: 0, cancelled: 0, live: 0 },
      providers: [],
      breaker: expect.objectContaining({ open: false }),
    });
    const done = await call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('echo b > b.txt')],
    });
    await engine.settled(done.json.id);
    const failed = await call('POST', '/api/jobs', { workspace: ws, verify: 'none', tasks: [shellTask('exit 1')] });
    await engine.settled(failed.json.id);
    const live = await call('POST', '/api/jobs', { workspace: ws, verify: 'none', tasks: [shellTask('sleep 30')] });
    const stats = await call('GET', '/api/stats');
    // the live job has no outcome yet: one passed, one failed
    expect(stats.json).toMatchObject({
      acceptance: {
        'implement/(shell default)': {
          type: 'implement',
          model: null,
          runners: ['shell'],
          providers: [],
          accepted: 1,
          total: 2,
          rate: 0.5,
        },
      },
      outcomes_total: 2,
      recent: { jobs: 3, done: 1, partial: 1, failed: 0, cancelled: 0, live: 1 },
    });

    const health = await call('GET', '/api/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({
      ok: true,
      version: 'test',
      live_jobs: 1,
      sse_clients: 0,
      waiters: 0,
      timers: 0,
    });
    expect(typeof health.json.uptime_s).toBe('number');
    expect(typeof health.json.listeners).toBe('number');
    await call('POST', `/api/jobs/${live.json.id}/cancel`);
    await engine.settled(live.json.id);
    expect((await call('GET', '/api/health')).json).toMatchObject({ live_jobs: 0, waiters: 0, listeners: 0 });

    const guide = await call('GET', '/api/guide');
    expect(guide.status).toBe(200);
    expect(guide.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(guide.text).toMatch(/^# gaffer/);
    expect(guide.text).toContain('wait_again');

    const unknown = await call('GET', '/api/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual(errorShape('not_found'));
    expect((await call('DELETE', '/api/jobs')).status).toBe(404);

    const notJson = await call('POST', '/api/jobs', '{"workspace": ');
    expect(notJson.status).toBe(400);
    expect(notJson.json).toEqual(errorShape('invalid_request'));
    expect((await call('GET', '/api/jobs?limit=abc')).status).toBe(400);
    expect((await call('GET', '/api/jobs?limit=0')).status).toBe(400);
  });
});

describe('spec lint at dispatch', () => {
  it('enforce refuses a vague request with 422 needs_detail carrying the lint report; warn runs it and carries spec_lint', async () => {
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const vague = { workspace: ws, verify: 'none', tasks: [{ instruction: 'improve it', command: 'true' }] };
    const strict = inProcess(await openEngine({ specLint: 'enforce' }));
    const refused = await strict.call('POST', '/api/jobs', vague);
    expect(refused.status).toBe(422);
    expect(refused.json.error).toMatchObject({
      code: 'needs_detail',
      field: 'tasks',
      lint: { mode: 'enforce', ok: false, codes: expect.arrayContaining(['too_short']) },
    });
    expect((await strict.call('GET', '/api/jobs')).json.jobs).toEqual([]);

    const engine = await openEngine({ specLint: 'warn' });
    const lenient = inProcess(engine);
    const accepted = await lenient.call('POST', '/api/jobs', vague);
    expect(accepted.status).toBe(202);
    expect(accepted.json.spec_lint).toMatchObject({ mode: 'warn', codes: expect.arrayContaining(['too_short']) });
    await engine.settled(accepted.json.id);
  });
});
