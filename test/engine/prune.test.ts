import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { shadowGitDir, workspaceHash } from '../../src/evidence/paths.js';
import { SPARE_DIR, sparesAtHand } from '../../src/platform/files/spare-entries.js';
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

  it('one job at a time past the limit: snapshots go a few prunes at a time and at close, not after each job', async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, retentionJobs: 3 });
    const ws = makeWorkspace({ 'a.txt': 'x' });
    const gitDir = shadowGitDir(dataDir, ws);
    const jobsWithRefs = () =>
      new Set(
        execFileSync('git', [`--git-dir=${gitDir}`, 'for-each-ref', '--format=%(refname)'], { encoding: 'utf8' })
          .split('\n')
          .filter((r) => r !== '')
          .map((r) => r.split('/')[3]),
      );
    const ids: string[] = [];
    const run = async (): Promise<void> => {
      const { job } = engine.submit({
        workspace: ws,
        verify: 'none',
        tasks: [{ instruction: 'x', type: 'research', command: 'true' }],
      });
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');
      await engine.maintenanceDone();
      ids.push(job.id);
    };
    let closed = false;
    try {
      for (let i = 0; i < 4; i++) await run();
      // the first job's row and folder are gone; its snapshots wait for two more (retention.jobs, 3, are owed)
      expect(engine.list({ limit: 100 }).map((j) => j.id)).not.toContain(ids[0]);
      expect(readdirSync(join(dataDir, 'jobs'))).not.toContain(ids[0]);
      expect([...jobsWithRefs()].sort()).toEqual([...ids].sort());
      await run();
      await run();
      expect([...jobsWithRefs()].sort()).toEqual(ids.slice(3).sort());
      await run();
      expect(jobsWithRefs().has(ids[3])).toBe(true);
      await engine.close();
      closed = true;
      // what was still owed goes when the engine closes (a one-shot CLI prunes as it did)
      expect([...jobsWithRefs()].sort()).toEqual(ids.slice(4).sort());
    } finally {
      if (!closed) await engine.close();
    }
  });

  it("a job's folders and instruction file are spares renamed into place, and a pruned job's come back as spares", async () => {
    const dataDir = join(tempDir(), 'data');
    const engine = await Engine.open({ dataDir, retentionJobs: 1 });
    const ws = makeWorkspace({ 'a.txt': 'x' });
    const gitDir = shadowGitDir(dataDir, ws);
    const spares = () =>
      new Set(readdirSync(join(dataDir, SPARE_DIR)).map((n) => lstatSync(join(dataDir, SPARE_DIR, n)).ino));
    const made = (id: string) => ({
      job: statSync(join(dataDir, 'jobs', id)).ino,
      instruction: statSync(join(dataDir, 'jobs', id, 'w1.instruction.txt')).ino,
      refs: statSync(join(gitDir, 'refs', 'gaffer', workspaceHash(ws), id)).ino,
    });
    const run = async (): Promise<string> => {
      const { job } = engine.submit({
        workspace: ws,
        verify: 'none',
        tasks: [{ name: 'w1', instruction: 'x', type: 'research', command: 'true' }],
      });
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');
      await engine.maintenanceDone();
      return job.id;
    };
    const refs = () =>
      execFileSync('git', [`--git-dir=${gitDir}`, 'for-each-ref', '--format=%(refname)'], { encoding: 'utf8' });
    try {
      await run(); // the shadow repository's first folders are made the ordinary way
      await sparesAtHand(dataDir); // the ones being made are there
      const before = spares();
      const first = await run();
      const firstMade = made(first);
      for (const [what, ino] of Object.entries(firstMade)) expect(before.has(ino), what).toBe(true);
      const second = await run();
      // the first job is pruned: its folders and instruction file are spares again, its refs gone
      expect(readdirSync(join(dataDir, 'jobs'))).toEqual([second]);
      const after = spares();
      for (const [what, ino] of Object.entries(firstMade)) expect(after.has(ino), what).toBe(true);
      expect(refs()).not.toContain(first);
      expect(refs()).toContain(`${second}/pre`);
      execFileSync('git', [`--git-dir=${gitDir}`, 'cat-file', '-e', `refs/gaffer/${workspaceHash(ws)}/${second}/post`]);
      // the prune's gc left the kept refs loose: their folder is there for the next prune to take back
      expect(lstatSync(join(gitDir, 'refs', 'gaffer', workspaceHash(ws), second, 'post')).isFile()).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
