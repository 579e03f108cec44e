import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

describe('retention', () => {
  it('pruning old jobs never takes the snapshots of a job submitted while it runs', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir(), 'data'), retentionJobs: 1 });
    try {
      const workspaces = [0, 1, 2].map((i) => makeWorkspace({ [`f${i}.txt`]: 'x' }));
      const statuses: string[] = [];
      for (let i = 0; i < 12; i++) {
        // each job starts the moment the previous settles — while its prune (and gc) is running
        const { job } = engine.submit({ workspace: workspaces[i % 3], verify: 'none', tasks: [{ instruction: 'x', command: `echo ${i} >> f${i % 3}.txt` }] });
        await engine.settled(job.id);
        const answer = engine.get(job.id);
        statuses.push(`${answer.status}${answer.error ? `: ${answer.error}` : ''}`);
      }
      expect(statuses).toEqual(Array.from({ length: 12 }, () => 'done'));
      expect(engine.list({ limit: 100 }).length).toBeLessThanOrEqual(2);
    } finally {
      await engine.close();
    }
  });
});
