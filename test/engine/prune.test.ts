import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

describe('retention', () => {
  it('pruning old jobs never takes the snapshots of a job submitted while it runs', async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, retentionJobs: 1 });
    try {
      const workspaces = [0, 1, 2].map((i) => makeWorkspace({ [`f${i}.txt`]: 'x' }));
      const statuses: string[] = [];
      for (let i = 0; i < 12; i++) {
        // each job starts the moment the previous settles — while its prune (and gc) is running
        const { job } = engine.submit({
          workspace: workspaces[i % 3],
          verify: 'none',
          tasks: [{ instruction: 'x', command: `echo ${i} >> f${i % 3}.txt` }],
        });
        await engine.settled(job.id);
        const answer = engine.get(job.id);
        statuses.push(`${answer.status}${answer.error ? `: ${answer.error}` : ''}`);
      }
      expect(statuses).toEqual(Array.from({ length: 12 }, () => 'done'));
      expect(engine.list({ limit: 100 }).length).toBeLessThanOrEqual(2);
      // a pruned job's folder (its logs and instruction files) goes with it, in the background
      await engine.maintenanceDone();
      const kept = new Set(engine.list({ limit: 100 }).map((j) => j.id));
      expect(readdirSync(join(dataDir, 'jobs')).filter((id) => !kept.has(id))).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it('while jobs run, retention looks every few dozen ends, and prunes to the limit once none is live', async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, retentionJobs: 2, maxParallel: 4 });
    try {
      const workspaces = [0, 1, 2, 3].map((i) => makeWorkspace({ [`f${i}.txt`]: 'x' }));
      const ids = Array.from(
        { length: 12 },
        (_, i) =>
          engine.submit({
            workspace: workspaces[i % 4],
            verify: 'none',
            tasks: [{ instruction: 'x', command: 'true' }],
          }).job.id,
      );
      await Promise.all(ids.map((id) => engine.settled(id)));
      await engine.maintenanceDone();
      expect(engine.list({ limit: 100 }).length).toBe(2);
      const kept = new Set(engine.list({ limit: 100 }).map((j) => j.id));
      expect(readdirSync(join(dataDir, 'jobs')).filter((id) => !kept.has(id))).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
