import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { objectiveEvidenceOf } from '../../src/domain/objectives.js';
import { parseJobRequest } from '../../src/domain/request.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';

// spec 07: the evidence a job leaves each objective it named, in a real SQLite file.

const evidence = (job: string, workspace: string, status: 'done' | 'partial', ts: number, ids = ['OBJ-1', 'OBJ-2']) =>
  objectiveEvidenceOf(ids, { id: job, workspace, status, filesChanged: ['src/a.ts'], ts });

describe('objective evidence in the store', () => {
  it("is migration 0008, and lists a job's records or an objective's across jobs, oldest first", () => {
    expect(existsSync(new URL('../../src/store/migrations/0008_objective_evidence.sql', import.meta.url))).toBe(true);
    const dir = tempDir();
    const store = new Store(dir);
    store.recordObjectiveEvidence(evidence('job-a', '/ws', 'done', 100), null);
    store.recordObjectiveEvidence(evidence('job-b', '/ws', 'partial', 200, ['OBJ-2']), 'alice');
    store.recordObjectiveEvidence(evidence('job-c', '/other', 'done', 300, ['OBJ-2']), null);

    expect(store.listObjectiveEvidence({ jobId: 'job-a' })).toEqual(evidence('job-a', '/ws', 'done', 100));
    expect(
      store
        .listObjectiveEvidence({ workspace: '/ws', objective: 'OBJ-2' })
        .map((e) => [e.job_id, e.status, e.confidence]),
    ).toEqual([
      ['job-a', 'done', 0.6],
      ['job-b', 'partial', 0.4],
    ]);
    expect(store.listObjectiveEvidence({ workspace: '/ws' }).map((e) => `${e.job_id} ${e.objective}`)).toEqual([
      'job-a OBJ-1',
      'job-a OBJ-2',
      'job-b OBJ-2',
    ]);
    store.close();

    // another connection (another gaffer process) reads them as written
    const again = new Store(dir);
    expect(again.listObjectiveEvidence({ jobId: 'job-b' })).toEqual(
      evidence('job-b', '/ws', 'partial', 200, ['OBJ-2']),
    );
    again.close();
  });

  it('a job records each objective once: a second write keeps the first', () => {
    const store = new Store(tempDir());
    store.recordObjectiveEvidence(evidence('job-a', '/ws', 'done', 100), null);
    store.recordObjectiveEvidence(evidence('job-a', '/ws', 'partial', 200), null);
    store.recordObjectiveEvidence([], null);
    expect(store.listObjectiveEvidence({ jobId: 'job-a' }).map((e) => [e.objective, e.status])).toEqual([
      ['OBJ-1', 'done'],
      ['OBJ-2', 'done'],
    ]);
    store.close();
  });

  it("the checkpoint's spec patch (objectives, an impact order) is written over the job's spec", () => {
    const store = new Store(tempDir());
    const spec = parseJobRequest(
      { workspace: '/ws', tasks: [{ name: 'a', instruction: 'OBJ-1', command: 'true' }] },
      { defaultRunner: null, available: ['shell'] },
    );
    store.insertJob({
      id: 'cccccccccccc',
      owner: null,
      spec,
      created: 1,
      idemKey: null,
      requestHash: null,
      idemWindowS: 3600,
      pid: process.pid,
      pidStart: 0,
    });
    const objectives = {
      file: '.gaffer/objectives.json',
      named: [{ id: 'OBJ-1', title: 't', impact: 0.5 }],
      warnings: [],
    };
    store.updateJob('cccccccccccc', { spec: { ...spec, objectives } });
    expect(store.getJob('cccccccccccc')?.spec).toEqual({ ...spec, objectives });
    store.close();
  });
});
