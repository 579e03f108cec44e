import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { Runner, RunnerInput } from '../../src/runners/contract.js';
import type { RunnerReport } from '../../src/domain/runner-report.js';
import { ShellRunner } from '../../src/runners/shell/shell-runner.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

/** A real shell runner that declares it can share a workspace, as the builtin agent will. */
class SharingShellRunner implements Runner {
  readonly key = 'shell';
  readonly canResume = false;
  readonly sharesWorkspace = true;
  readonly #shell = new ShellRunner();
  run(input: RunnerInput): Promise<RunnerReport> {
    return this.#shell.run(input);
  }
}

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function spans(runner: Runner, parallel: boolean, cap: number) {
  const engine = await Engine.open({
    dataDir: join(tempDir(), 'data'),
    maxParallel: cap,
    runners: new Map([['shell', runner]]),
  });
  engines.push(engine);
  const ws = makeWorkspace({ 'a.txt': 'a' });
  const { job } = engine.submit({
    workspace: ws,
    verify: 'none',
    parallel,
    tasks: ['a', 'b', 'c'].map((n) => ({ name: n, instruction: n, command: `sleep 0.6; echo ${n} > ${n}.out` })),
  });
  await engine.settled(job.id);
  const final = engine.get(job.id);
  expect(final.status).toBe('done');
  return engine.store.listAttempts(job.id).map((a) => [a.started as number, a.finished as number] as const);
}

const maxOverlap = (s: (readonly [number, number])[]) =>
  Math.max(...s.map(([start]) => s.filter(([a, b]) => a <= start + 0.01 && start + 0.01 < b).length));

describe('parallel tasks', () => {
  it('run at once up to the worker cap when the runner can share a workspace', async () => {
    expect(maxOverlap(await spans(new SharingShellRunner(), true, 2))).toBe(2);
  });

  it('run one at a time for runners that cannot share a workspace (shell, spec 06)', async () => {
    expect(maxOverlap(await spans(new ShellRunner(), true, 2))).toBe(1);
  });

  it('run in order when the job is sequential', async () => {
    const s = await spans(new SharingShellRunner(), false, 2);
    expect(maxOverlap(s)).toBe(1);
    expect(s.map(([a]) => a)).toEqual([...s.map(([a]) => a)].sort());
  });
});
