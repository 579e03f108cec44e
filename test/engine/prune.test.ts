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
      // a pruned job's folder (its logs and instruction files) goes with it
      const kept = new Set(engine.list({ limit: 100 }).map((j) => j.id));
      expect(readdirSync(join(dataDir, 'jobs')).filter((id) => !kept.has(id))).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
