import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { spawnCommand } from '../../src/platform/spawner/spawner.js';
import { createRunners } from '../../src/runners/index.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';

/** The parent pid of a command started the way the engine's git calls are. */
async function parentOf(): Promise<number> {
  const result = await spawnCommand({
    cmd: 'sh',
    args: ['-c', 'echo $PPID'],
    cwd: '/',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    timeoutMs: 10_000,
    input: '',
  });
  return Number(result.stdout.toString().trim());
}

describe('an engine with the spawner (serve, mcp)', () => {
  it('runs its git calls through the helper while open, proves a job the same way, and lets it go on close', async () => {
    const engine = await Engine.open({
      dataDir: join(tempDir('gaffer-data-'), 'data'),
      spawner: true,
      runners: createRunners({ sandbox: 'off' }),
    });
    try {
      expect(await parentOf()).not.toBe(process.pid);
      const ws = makeWorkspace(CALC_FILES);
      const { job } = engine.submit({ workspace: ws, tasks: [{ instruction: 'fix add', command: FIX_ADD }] });
      await engine.settled(job.id);
      const answer = engine.get(job.id);
      expect(answer.status).toBe('done');
      expect((answer.result as { changes: { modified: string[] } }).changes.modified).toEqual(['src/math.js']);
    } finally {
      await engine.close();
    }
    expect(await parentOf()).toBe(process.pid);
  });
});
