import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { Router } from '../../src/engine/routing/router.js';
import type { Runner, RunnerInput } from '../../src/runners/contract.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

/** The real shell runner under another key, running its own command line instead of the task's. */
function shellRunning(key: string, command: string): Runner {
  const shell = createRunners({ sandbox: createSandbox('off') }).get('shell') as Runner;
  return { key, canResume: false, run: (input: RunnerInput) => shell.run({ ...input, command }) };
}

describe('the pipeline on attempts', () => {
  it('a fix attempt carries the route the Router gave it: another runner and model than the first attempt', async () => {
    const runners = createRunners({ sandbox: createSandbox('off') });
    runners.set('repair', shellRunning('repair', FIX_ADD));
    const seen: { task: string; attempts: number[] }[] = [];
    // first attempts on the task's own runner; a fix attempt one "rung" up, from the history it is given
    const router: Partial<Router> = {
      route(task, history) {
        seen.push({ task: task.name, attempts: history.map((e) => e.attempt.number) });
        return history.length === 0
          ? { runner: task.runner, model: task.model, entry: null, provider: null }
          : { runner: 'repair', model: 'fixer-model', entry: 'test-rung-2', provider: 'test' };
      },
    };
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), runners, router });
    engines.push(engine);
    const ws = makeWorkspace(CALC_FILES, { git: true });
    // the first attempt changes a file but not the bug; the explicit command blocks, so a fix attempt follows
    const { job } = engine.submit({
      workspace: ws,
      verify: 'npm test',
      fix_rounds: 1,
      tasks: [{ name: 'calc', instruction: 'make add add', command: 'echo tried > notes.txt' }],
    });
    await engine.settled(job.id);

    const answer = engine.get(job.id, { full: true });
    expect(answer.status).toBe('done');
    expect(readFileSync(join(ws, 'src/math.js'), 'utf8')).toContain('return a + b;');
    expect(seen).toEqual([
      { task: 'calc', attempts: [] },
      { task: 'calc', attempts: [1] },
    ]);
    const rows = engine.store
      .listAttempts(job.id)
      .map((a) => [a.worker, a.task, a.attempt, a.role, a.runner, a.model, a.status]);
    expect(rows).toEqual([
      ['calc', 'calc', 1, 'worker', 'shell', null, 'done'],
      ['fixer-1', 'calc', 2, 'fixer', 'repair', 'fixer-model', 'done'],
    ]);
  });

  it('a job whose only runner is gone is refused at its attempt, and the job status comes from that attempt: error', async () => {
    const runners = createRunners({ sandbox: createSandbox('off') });
    // admission knows the runner; the route the Router gives names one the engine has not got
    const router: Partial<Router> = { route: () => ({ runner: 'vanished', model: null, entry: null, provider: null }) };
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data'), runners, router });
    engines.push(engine);
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'nothing', command: 'true', type: 'research' }],
    });
    await engine.settled(job.id);
    const answer = engine.get(job.id);
    expect(answer.status).toBe('error');
    expect(answer.error).toContain('runner "vanished" is not available');
    expect(engine.store.listAttempts(job.id).map((a) => [a.runner, a.status, a.outcome])).toEqual([
      ['vanished', 'refused', 'expected_error'],
    ]);
  });
});
