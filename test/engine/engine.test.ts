import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GafferError } from '../../src/domain/errors.js';
import { Engine } from '../../src/engine/engine.js';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { changesOf, proofOf, resultOf, verificationOf, workerOf } from '../helpers/answer.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function openEngine(opts: Partial<Parameters<typeof Engine.open>[0]> = {}): Promise<Engine> {
  const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), ...opts });
  engines.push(engine);
  return engine;
}

async function runToEnd(engine: Engine, body: Record<string, unknown>): Promise<CompactJob> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id);
}

describe('a job end to end', () => {
  it('a shell worker that fixes a failing test is done and proved', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const job = await runToEnd(engine, {
      workspace: ws,
      tasks: [{ name: 'fix-add', instruction: 'fix add', command: FIX_ADD, files: ['src/math.js'] }],
    });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
    expect(changesOf(job).modified).toEqual(['src/math.js']);
    expect(changesOf(job).added).toEqual([]);
    expect(resultOf(job).claimed_only).toEqual([]);
    // related scope: the tests that import the changed file are every test there is, so the full command runs
    expect(verificationOf(job)).toMatchObject({
      mode: 'auto',
      kind: 'node',
      scope: 'all',
      command: 'npm test',
      ran: true,
      ok: true,
      blocking: false,
    });
    expect(resultOf(job).exit_code).toBe(0);
    expect(job.verdict).toMatch(
      /^1\/1 workers done · 1 file changed on disk · verification passed \(.*\) · proved 1\.00$/,
    );
    expect(job.progress).toBeUndefined();
    expect(job.wait_again).toBeUndefined();
    // the user's own repo still sees the edit as an uncommitted change
    expect(changesOf(job).git).toMatchObject({ repo: true, dirty_count: 1 });
  });

  it('a worker that exits non-zero leaves the job partial', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace(CALC_FILES);
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'fail', command: 'echo oops >&2; exit 3' }],
    });
    expect(job.status).toBe('partial');
    const worker = workerOf(job);
    expect(worker).toMatchObject({
      name: 'worker-1',
      status: 'error',
      outcome: 'expected_error',
      stop_reason: 'exit_nonzero',
    });
    expect(worker.summary).toContain('oops');
    expect(job.verdict).toContain('0/1 workers done (1 error)');
  });

  it('a blocking verification failure sends a fix round whose instruction carries the failure', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace(CALC_FILES);
    // the first run does nothing useful; the fix round (instruction file names the failure) fixes it
    const command = `if grep -q 'verification of this work failed' "$GAFFER_INSTRUCTION_FILE"; then ${FIX_ADD}; else echo "// touched" >> src/math.js; fi`;
    // an explicit command is the task's proof: its failure blocks even though it failed before the work
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 2,
      tasks: [{ name: 'impl', instruction: 'fix add', command }],
    });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('proved');
    const workers = resultOf(job).workers;
    expect(workers.map((w: { name: string; role: string }) => [w.name, w.role])).toEqual([
      ['impl', 'worker'],
      ['fixer-1', 'fixer'],
    ]);
    expect(verificationOf(job).attempts).toBe(2);
    expect(verificationOf(job).previous).toHaveLength(1);
    expect(job.verdict).toContain('1 fix round ran');
    const instruction = readFileSync(join(engine.dataDir, 'jobs', job.id, 'fixer-1.instruction.txt'), 'utf8');
    expect(instruction).toContain('Command: npm test');
    expect(instruction).toContain('fix add');
    expect(instruction).toContain('src/math.js');
  });

  it('fix rounds that leave the same failure stop by convergence and the job is contradicted', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace(CALC_FILES);
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 4,
      tasks: [{ instruction: 'try', command: 'echo trying' }],
    });
    expect(job.status).toBe('partial');
    expect(resultOf(job).stopped_by).toBe('convergence');
    expect(resultOf(job).convergence).toMatchObject({ converged: true });
    expect(proofOf(job).verdict).toBe('contradicted');
    expect(verificationOf(job).attempts).toBeLessThan(5);
    expect(job.verdict).toMatch(
      /^1 test failed before the work and still fails \(add adds\); the work fixed 0 of 1; [^·]* · contradicted: the verification fails · .*verification FAILED .* fix rounds converged after \d/,
    );
  });

  it('with verify none the job is done but unproved', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'write', command: 'echo b > b.txt' }],
    });
    expect(job.status).toBe('done');
    expect(proofOf(job).verdict).toBe('unproved');
    expect(proofOf(job).uncertainty.map((u: { code: string }) => u.code)).toContain('no_verification');
    expect(changesOf(job).added).toEqual(['b.txt']);
    expect(job.verdict).toContain('not verified: verification is off');
    expect(job.verdict).toContain('unproved: nothing could show it');
  });

  it('auto with no test runner detected says so and is unproved', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'notes.md': 'x' });
    const job = await runToEnd(engine, {
      workspace: ws,
      tasks: [{ instruction: 'edit', command: 'echo y >> notes.md' }],
    });
    expect(verificationOf(job)).toMatchObject({
      ran: false,
      ok: null,
      summary: expect.stringContaining('give `verify` a command'),
    });
    expect(proofOf(job).verdict).toBe('unproved');
  });

  it('reports what the verification wrote apart from what the workers changed', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'echo run > coverage.txt && grep -q b a.txt',
      tasks: [{ instruction: 'edit', command: 'echo b >> a.txt' }],
    });
    expect(job.status).toBe('done');
    expect(changesOf(job).modified).toEqual(['a.txt']);
    expect(changesOf(job).added).toEqual([]);
    expect(changesOf(job).verification_wrote).toEqual(['coverage.txt']);
  });

  it('expected_output_contains: exit 0 without the landmark is a failure', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'echo 0 tests ran',
      fix_rounds: 0,
      expected_output_contains: '1 passed',
      tasks: [{ instruction: 'edit', command: 'echo b >> a.txt' }],
    });
    expect(verificationOf(job)).toMatchObject({ ok: false, output_matched: false, blocking: true });
    expect(job.status).toBe('partial');
  });

  it('a verification command that is missing is inconclusive, not failed — and not done', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'no-such-test-runner-xyz',
      tasks: [{ instruction: 'edit', command: 'echo b >> a.txt' }],
    });
    expect(verificationOf(job)).toMatchObject({
      ran: true,
      ok: null,
      inconclusive: true,
      blocking: false,
      could_not_start: true,
    });
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('unproved');
  });

  it('unmet job criteria turn done into partial', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'true',
      criteria: ['a.txt changes', 'docs/api.md updated'],
      tasks: [{ instruction: 'edit', command: 'echo b >> a.txt' }],
    });
    expect(resultOf(job).criteria_check).toEqual({
      complete: false,
      met: ['a.txt changes'],
      unmet: ['docs/api.md updated'],
      unchecked: [],
      details: [
        {
          criterion: 'docs/api.md updated',
          check: 'changes',
          why: 'docs/api.md is not in the changes (no such path in the workspace)',
        },
      ],
    });
    expect(job.status).toBe('partial');
    expect(proofOf(job).verdict).toBe('contradicted');
    expect(job.verdict).toContain('job criteria unmet: docs/api.md updated');
  });

  it('a detected state is reported, never a reason to kill', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w', instruction: 'x', command: 'echo "HTTP 429 Too Many Requests"; echo b >> a.txt' }],
    });
    // it ended partial once in a CI run loaded far past the usual, not since: the verdict says why if it does again
    expect(job.status, `${job.verdict} ${JSON.stringify(resultOf(job).workers)}`).toBe('done');
    expect(resultOf(job).workers[0]).toMatchObject({ status: 'done', state: 'rate_limited' });
    expect(job.verdict).toContain('reported (not killed): w rate_limited');
    const states = engine.events(job.id).events.filter((e) => e.event === 'state');
    expect(states[0]).toMatchObject({ name: 'w', state: 'rate_limited' });
  });

  it('records the phases in order and a queued entry for every task from the start', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'true',
      tasks: [
        { name: 'one', instruction: 'x', command: 'true' },
        { name: 'two', instruction: 'y', command: 'true' },
      ],
    });
    expect(job.status).toBe('queued');
    expect(Object.keys(job.progress ?? {})).toEqual(['one', 'two']);
    expect(job.wait_again).toBe(true);
    expect(job.ceiling_s).toBe(900 * 2 + 300 * 2 + 900);
    await engine.settled(job.id);
    const phases = engine
      .events(job.id)
      .events.filter((e) => e.event === 'phase')
      .map((e) => e.message);
    expect(phases).toEqual([
      'queued',
      'checkpointing the workspace',
      'workers running',
      'checking what changed on disk',
      'running the verification',
      'settled',
    ]);
  });
});

describe('cancel and timeouts', () => {
  it('a cancel as the checkpoint starts is never undone by its status, written while the look runs', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const { job } = engine.submit({ workspace: ws, verify: 'none', tasks: [{ instruction: 'x', command: 'true' }] });
    // the next turn: the job's first look has started git, its 'running' not yet written
    setImmediate(() => engine.cancel(job.id));
    await engine.settled(job.id);
    const statuses = engine
      .events(job.id)
      .events.filter((e) => e.event === 'status')
      .map((e) => e.message);
    expect(statuses.slice(statuses.indexOf('cancelling'))).toEqual(['cancelling', 'cancelled']);
    expect(engine.get(job.id).status).toBe('cancelled');
  });

  it('cancel stops the workers and still reports what changed', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'true',
      tasks: [{ name: 'slow', instruction: 'x', command: 'echo b > b.txt; sleep 60' }],
    });
    await engine.waitFor(job.id, 'worker:slow:running', 30);
    await new Promise((r) => setTimeout(r, 300));
    const cancelling = engine.cancel(job.id);
    expect(cancelling.status).toBe('cancelling');
    await engine.settled(job.id);
    const final = engine.get(job.id);
    expect(final.status).toBe('cancelled');
    expect(resultOf(final).workers[0]).toMatchObject({ status: 'cancelled', outcome: 'cancelled' });
    expect(changesOf(final).added).toEqual(['b.txt']);
    expect(proofOf(final).verdict).not.toBe('proved');
    expect(final.verdict).toMatch(/^cancelled · /);
    expect(() => engine.cancel(job.id)).toThrow(GafferError);
  });

  it('a worker past its timeout is killed and reported timeout', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const job = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      timeout_s: 10,
      tasks: [{ instruction: 'x', command: 'sleep 120' }],
    });
    expect(job.status).toBe('partial');
    expect(resultOf(job).workers[0]).toMatchObject({ status: 'timeout', outcome: 'panic' });
    expect(workerOf(job).duration_s).toBeLessThan(20);
  }, 40_000);
});

describe('workspaces, the worker cap and idempotency', () => {
  it('a second job on a nested path waits for the first and starts the moment it releases', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'sub/a.txt': 'a' });
    const first = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'x', command: 'sleep 1' }],
    }).job;
    await engine.waitFor(first.id, 'phase:workers running', 30);
    const second = engine.submit({
      workspace: join(ws, 'sub'),
      verify: 'none',
      tasks: [{ instruction: 'y', command: 'echo y > y.txt' }],
    }).job;
    const waiting = await engine.waitFor(second.id, 'phase:waiting for job', 10);
    expect(waiting.met).toBe(true);
    expect(waiting.state.status).toBe('queued');
    expect(waiting.state.phase).toBe(`waiting for job ${first.id} in the same workspace`);
    await engine.settled(second.id);
    const a = engine.get(first.id);
    const b = engine.get(second.id);
    expect(b.status).toBe('done');
    expect(b.started as number).toBeGreaterThanOrEqual((a.finished as number) - 0.5);
    // woken by the release itself: no poll tick in between
    expect((b.started as number) - (a.finished as number)).toBeLessThan(0.5);
  });

  it('the worker cap holds across jobs', async () => {
    const engine = await openEngine({ maxParallel: 2 });
    const jobs = [0, 1, 2].map(
      (i) =>
        engine.submit({
          workspace: makeWorkspace({ [`f${i}`]: 'x' }),
          verify: 'none',
          tasks: [{ instruction: 'x', command: 'sleep 1' }],
        }).job,
    );
    await Promise.all(jobs.map((j) => engine.settled(j.id)));
    const spans = jobs.map((j) => {
      const w = engine.store.listAttempts(j.id)[0];
      return [w?.started as number, w?.finished as number] as const;
    });
    const overlapAt = (t: number) => spans.filter(([s, f]) => s <= t && t < f).length;
    expect(Math.max(...spans.map(([s]) => overlapAt(s + 0.01)))).toBe(2);
  });

  it('the same idempotency key returns the first job; another body with it is a conflict', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const body = {
      workspace: ws,
      verify: 'none',
      client_request_id: 'k-1',
      tasks: [{ instruction: 'x', command: 'true' }],
    };
    const a = engine.submit(body);
    const b = engine.submit(body);
    expect(a.created).toBe(true);
    expect(b.created).toBe(false);
    expect(b.job.id).toBe(a.job.id);
    expect(() => engine.submit({ ...body, tasks: [{ instruction: 'other', command: 'true' }] })).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
    expect(() => engine.submit(body, { idempotencyKey: 'k-2' })).toThrow(
      expect.objectContaining({ code: 'invalid_request', field: 'client_request_id' }),
    );
    await engine.settled(a.job.id);
    expect(engine.list().length).toBe(1);
  });

  it.each([
    ['relative', 'ws', 'must be an absolute path'],
    ['missing', '/nonexistent/gaffer/ws', 'does not exist'],
    ['root', '/', 'filesystem root'],
  ])('refuses a %s workspace', async (_what, workspace, message) => {
    const engine = await openEngine();
    expect(() => engine.submit({ workspace, tasks: [{ instruction: 'x', command: 'true' }] })).toThrow(message);
    expect(engine.list()).toEqual([]);
  });

  it('refuses the home folder, the data dir, inside it, and a folder containing it', async () => {
    const root = tempDir();
    const engine = await openEngine({ dataDir: join(root, 'data') });
    writeFileSync(join(root, 'x'), '');
    const submit = (workspace: string) => () =>
      engine.submit({ workspace, tasks: [{ instruction: 'x', command: 'true' }] });
    expect(submit(process.env.HOME ?? '/root')).toThrow('home folder');
    expect(submit(join(root, 'data'))).toThrow('data dir');
    expect(submit(join(root, 'data', 'jobs'))).toThrow(/data dir|does not exist/);
    expect(submit(root)).toThrow('must not contain');
    expect(submit(join(root, 'x'))).toThrow('must be a directory');
    expect(existsSync(join(root, 'data', 'jobs'))).toBe(false);
  });
});

describe('wait_for', () => {
  it('resolves phase, event and worker conditions, and refuses anything else listing every form', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w1', instruction: 'x', command: 'echo hello-marker; echo x > x.txt; sleep 0.5' }],
    });
    const [phase, event, worker, done] = await Promise.all([
      engine.waitFor(job.id, 'phase:checking what changed', 30),
      engine.waitFor(job.id, 'event:hello-marker', 30),
      engine.waitFor(job.id, 'worker:*:running', 30),
      engine.waitFor(job.id, 'done', 30),
    ]);
    expect([phase.met, event.met, worker.met, done.met]).toEqual([true, true, true, true]);
    expect(done.state.status).toBe('done');
    // a condition that can no longer hold answers at once
    const never = await engine.waitFor(job.id, 'phase:no such phase', 30);
    expect(never.met).toBe(false);
    expect(never.waited_s).toBeLessThan(1);
    // already met in the history: met at once
    expect((await engine.waitFor(job.id, 'worker:w1:done', 30)).met).toBe(true);
    await expect(engine.waitFor(job.id, 'sometime', 1)).rejects.toThrow(
      /done, changed, phase:<text>, event:<text>, worker:<name\|\*>:<state>/,
    );
    await expect(engine.waitFor(job.id, 'worker:w1:dancing', 1)).rejects.toThrow('unknown state');
    await expect(engine.waitFor('ffffffffffff', 'done', 1)).rejects.toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
  });

  it('a timeout is not an error: met false with how long it waited', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const { job } = engine.submit({ workspace: ws, verify: 'none', tasks: [{ instruction: 'x', command: 'sleep 3' }] });
    const answer = await engine.waitFor(job.id, 'done', 0.3);
    expect(answer).toMatchObject({ met: false, condition: 'done' });
    expect(answer.waited_s).toBeGreaterThanOrEqual(0.3);
    expect(answer.state.wait_again).toBe(true);
    engine.cancel(job.id);
    await engine.settled(job.id);
  });
});

describe('wait_for changed', () => {
  it('resolves when the workspace changes on disk, and not when it does not', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w', instruction: 'x', command: 'sleep 1.2; echo b > b.txt; sleep 5' }],
    });
    await engine.waitFor(job.id, 'worker:w:running', 30);
    const quiet = await engine.waitFor(job.id, 'changed', 0.6);
    expect(quiet.met).toBe(false);
    const changed = await engine.waitFor(job.id, 'changed', 20);
    expect(changed.met).toBe(true);
    expect(changed.waited_s).toBeLessThan(3);
    engine.cancel(job.id);
    await engine.settled(job.id);
    expect((await engine.waitFor(job.id, 'changed', 5)).met).toBe(false);
  });
});
