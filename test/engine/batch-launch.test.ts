import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { Runner } from '../../src/runners/contract.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// spec 06 "Attempts ledger": a launch failure of one worker in a parallel batch stops the ones
// already started in that batch, each closed with the reason. The failure is real: the shell
// runner asked to start its process in a folder that does not exist.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(parallelSafeGates: string[] = [], setup: Record<string, string> = {}): Promise<Engine> {
  const runners = new Map(createRunners({ sandbox: createSandbox('off') }));
  const shell = runners.get('shell') as Runner;
  // the real shell runner, its process started where nothing is: spawn fails
  runners.set('unlaunchable', {
    ...shell,
    key: 'unlaunchable',
    run: (input) => shell.run({ ...input, workspace: join(input.workspace, 'no-such-folder') }),
  });
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    maxParallel: 4,
    runners,
    worktrees: { parallelSafeGates, setup },
  });
  engines.push(engine);
  return engine;
}

const SLOW = {
  name: 'slow',
  instruction: 'take long',
  files: ['slow.txt'],
  command: 'sleep 2; sleep 2; sleep 2; sleep 2; sleep 2; echo late > slow.txt',
};
const BROKEN = {
  name: 'broken',
  instruction: 'cannot start',
  files: ['b.txt'],
  runner: 'unlaunchable',
  command: 'echo b > b.txt',
};

describe('a launch failure in a parallel batch', () => {
  // in a shared workspace shell workers take turns: the sibling waiting for its turn is closed before it starts;
  // in worktrees the two run at once: the sibling already running is stopped
  for (const isolation of ['shared', 'worktree'] as const) {
    it(`stops its siblings, each closed with the reason (${isolation})`, async () => {
      // in worktrees the broken task's setup waits a second, so its sibling is surely running when it fails to launch
      const engine = await open(
        ['exit 0'],
        isolation === 'worktree' ? { '*': 'case "$PWD" in */broken) sleep 1;; esac' } : {},
      );
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const t0 = performance.now();
      const { job } = engine.submit({
        workspace: ws,
        isolation,
        parallel: true,
        verify: 'exit 0',
        tasks: isolation === 'shared' ? [BROKEN, SLOW] : [SLOW, BROKEN],
      });
      await engine.settled(job.id);
      const answer = engine.get(job.id, { full: true });
      const rows = Object.fromEntries((answer.result?.workers ?? []).map((w) => [w.name, w]));
      expect(rows.broken).toMatchObject({ status: 'error', stop_reason: 'spawn_failed' });
      expect(rows.slow).toMatchObject({ status: 'error', stop_reason: 'batch_stopped' });
      expect(rows.slow?.error).toMatch(/^stopped: broken failed to launch: /);
      // stopped, not waited out
      expect(performance.now() - t0).toBeLessThan(8_000);
      // nothing ran in the shared workspace; in worktrees the sibling's work was cut short
      expect(answer.status).toBe(isolation === 'shared' ? 'error' : 'partial');
      const events = engine.events(job.id).events;
      expect(events.some((e) => e.name === 'slow' && e.event === 'started')).toBe(isolation === 'worktree');
    });
  }
});
