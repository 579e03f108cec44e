import { afterEach, describe, expect, it } from 'vitest';
import { compactJobSchema } from '../../src/domain/answer-schema.js';
import type { JobStatus } from '../../src/domain/status.js';
import { parseJobRequest } from '../../src/domain/request.js';
import { CEILING_RAISE_MAX, PACE_WINDOW, paceOf } from '../../src/engine/queries/ceiling.js';
import { JobQueries } from '../../src/engine/queries/queries.js';
import { renderCompact, renderStats } from '../../src/interfaces/cli/render.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';

// spec 07 "Adaptive ceiling and health": a real SQLite store in a temp data dir; past jobs are
// written as rows with the wall-clock they took, so no job needs to run for hours.

/** A one-task job: 900 s worker + 300 s verification × (1 + 1 fix round) + a 900 s fixer. */
const COMPUTED = 900 + 300 * 2 + 900;
const NOW = Date.now() / 1000;

/** Store that counts its duration reads: the ceiling must not cost a query per answer. */
class CountingStore extends Store {
  durationReads = 0;
  override recentDurations(workspace: string, limit: number): number[] {
    this.durationReads++;
    return super.recentDurations(workspace, limit);
  }
}

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function open(): { store: CountingStore; queries: JobQueries } {
  const store = new CountingStore(tempDir());
  stores.push(store);
  return { store, queries: new JobQueries(store, new Map(), 2) };
}

let ids = 0;
/** Inserts a job in `workspace`; with `took`, one that ran that many seconds and ended `status`. */
function addJob(
  store: Store,
  workspace: string,
  opts: { took?: number; status?: JobStatus; endedAgo?: number; owner?: string } = {},
): string {
  const id = `job${String(++ids).padStart(9, '0')}`;
  const spec = parseJobRequest(
    { workspace, tasks: [{ instruction: 'x', command: 'true' }] },
    { defaultRunner: null, available: ['shell'] },
  );
  store.insertJob({
    id,
    owner: opts.owner ?? null,
    spec,
    created: NOW - 1e5,
    idemKey: null,
    requestHash: null,
    idemWindowS: 3600,
    pid: process.pid,
    pidStart: 0,
  });
  if (opts.took !== undefined) {
    const finished = NOW - (opts.endedAgo ?? 1000);
    store.updateJob(id, { status: opts.status ?? 'done', started: finished - opts.took, finished });
  } else if (opts.status !== undefined) store.updateJob(id, { status: opts.status });
  return id;
}

describe('the adaptive ceiling (spec 07)', () => {
  it('a fresh workspace keeps the computed ceiling and says nothing about it', () => {
    const { store, queries } = open();
    const job = queries.get(addJob(store, '/w'));
    expect(job.ceiling_s).toBe(COMPUTED);
    expect(job.ceiling_why).toBeUndefined();
  });

  it('a workspace whose past jobs took longer than the computed ceiling gets it raised to their p90, and says why', () => {
    const { store, queries } = open();
    for (const took of [3000, 3100, 3200]) addJob(store, '/w', { took });
    const job = queries.get(addJob(store, '/w'));
    expect(job.ceiling_s).toBe(3200);
    expect(job.ceiling_why).toBe(`raised from ${COMPUTED} s to 3200 s: p90 of the last 3 jobs here`);
    expect(compactJobSchema.parse(job)).toEqual(job);
    expect(renderCompact(job)).toContain(`ceiling: 3200 s (still live: wait again)\n    raised from ${COMPUTED} s`);
  });

  it('is raised at most 3× the computed ceiling, however long jobs here took', () => {
    const { store, queries } = open();
    addJob(store, '/w', { took: 50_000 });
    const job = queries.get(addJob(store, '/w'));
    expect(job.ceiling_s).toBe(COMPUTED * CEILING_RAISE_MAX);
    expect(job.ceiling_why).toBe(
      `raised from ${COMPUTED} s to ${COMPUTED * 3} s (the 3× cap): p90 of the last 1 job here took 50000 s`,
    );
  });

  it('a workspace with faster history keeps the computed ceiling: never lowered', () => {
    const { store, queries } = open();
    for (let i = 0; i < 5; i++) addJob(store, '/w', { took: 60 });
    const job = queries.get(addJob(store, '/w'));
    expect(job.ceiling_s).toBe(COMPUTED);
    expect(job.ceiling_why).toBeUndefined();
  });

  it("another workspace's history does not count, nor a nested or enclosing one's", () => {
    const { store, queries } = open();
    for (const ws of ['/other', '/w/sub', '/']) addJob(store, ws, { took: 5000 });
    expect(queries.get(addJob(store, '/w')).ceiling_s).toBe(COMPUTED);
    expect(queries.get(addJob(store, '/other')).ceiling_s).toBe(5000);
  });

  it('cancelled and interrupted jobs do not count; errors do', () => {
    const { store, queries } = open();
    addJob(store, '/w', { took: 5000, status: 'cancelled' });
    addJob(store, '/w', { took: 6000, status: 'interrupted' });
    expect(queries.get(addJob(store, '/w')).ceiling_s).toBe(COMPUTED);
    addJob(store, '/w', { took: 4000, status: 'error' });
    expect(queries.get(addJob(store, '/w')).ceiling_s).toBe(4000);
  });

  it('reads the p90 of the newest 20 jobs: two outliers among 20 and anything older are left out', () => {
    const { store, queries } = open();
    // the oldest 5 were slow; of the newest 20, 18 took 3000 s and 2 took 9000 s
    for (let i = 0; i < 5; i++) addJob(store, '/w', { took: 7000, endedAgo: 90_000 + i });
    for (let i = 0; i < PACE_WINDOW; i++) addJob(store, '/w', { took: i < 2 ? 9000 : 3000, endedAgo: 1000 + i });
    const job = queries.get(addJob(store, '/w'));
    expect(job.ceiling_s).toBe(3000);
    expect(job.ceiling_why).toContain('the last 20 jobs here');
  });

  it('a running job has the raised total less what has passed', () => {
    const { store, queries } = open();
    addJob(store, '/w', { took: 4000 });
    const id = addJob(store, '/w');
    store.updateJob(id, { status: 'running', started: NOW - 1000 });
    const ceiling = queries.get(id).ceiling_s ?? 0;
    expect(ceiling).toBeGreaterThanOrEqual(2998);
    expect(ceiling).toBeLessThanOrEqual(3000);
  });

  it('reads the history once while queued and once at the start, not on every answer; none once final', () => {
    const { store, queries } = open();
    addJob(store, '/w', { took: 4000 });
    const id = addJob(store, '/w');
    for (let i = 0; i < 5; i++) queries.get(id);
    queries.list();
    expect(store.durationReads).toBe(1);
    // the job it waited behind finished slower: the start reads the history again
    addJob(store, '/w', { took: 5000, endedAgo: 10 });
    store.updateJob(id, { status: 'running', started: Date.now() / 1000 });
    for (let i = 0; i < 5; i++) expect(queries.get(id).ceiling_s).toBeGreaterThanOrEqual(4999);
    expect(store.durationReads).toBe(2);
    store.updateJob(id, { status: 'done', finished: Date.now() / 1000 });
    const done = queries.get(id);
    expect(done.ceiling_s).toBeUndefined();
    expect(done.ceiling_why).toBeUndefined();
    expect(store.durationReads).toBe(2);
  });

  it("the workspace's durations are one range of an index, not a scan of jobs", () => {
    const { store } = open();
    const plan = store.db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT finished - started AS s FROM jobs
         WHERE workspace = ? AND finished IS NOT NULL AND started IS NOT NULL AND status IN ('done', 'partial', 'error')
         ORDER BY finished DESC LIMIT ?`,
      )
      .all('/w', PACE_WINDOW)
      .map((r) => String((r as { detail: unknown }).detail));
    expect(plan).toEqual([
      expect.stringMatching(
        /^SEARCH jobs USING COVERING INDEX jobs_workspace_finished \(workspace=\? AND finished>\?\)$/,
      ),
    ]);
  });

  it('the p90 is by nearest rank: the slowest under 10 jobs, the 18th of 20', () => {
    expect(paceOf([])).toBeNull();
    expect(paceOf([5])).toEqual({ p90S: 5, jobs: 1 });
    expect(paceOf([9, 1, 5])).toEqual({ p90S: 9, jobs: 3 });
    expect(paceOf(Array.from({ length: 20 }, (_, i) => i + 1))).toEqual({ p90S: 18, jobs: 20 });
  });
});

describe('recent counts (spec 07)', () => {
  it('a store where no job ran answers jobs: 0 (no signal)', () => {
    const { queries } = open();
    expect(queries.stats().recent).toEqual({ jobs: 0, done: 0, partial: 0, failed: 0, cancelled: 0, live: 0 });
    expect(renderStats(queries.stats())).toContain('recent jobs: 0 (none ran: no signal)');
  });

  it('come from the store alone (these jobs have no files) and count error and interrupted as failed', () => {
    const { store, queries } = open();
    addJob(store, '/w', { took: 10, status: 'done' });
    addJob(store, '/w', { took: 10, status: 'partial' });
    addJob(store, '/w', { took: 10, status: 'error' });
    addJob(store, '/w', { took: 10, status: 'interrupted', owner: 'ann' });
    addJob(store, '/w', { took: 10, status: 'cancelled' });
    addJob(store, '/w', { status: 'running' });
    addJob(store, '/w');
    expect(queries.stats().recent).toEqual({ jobs: 7, done: 1, partial: 1, failed: 2, cancelled: 1, live: 2 });
    expect(queries.stats({ owner: 'ann' }).recent).toEqual({
      jobs: 1,
      done: 0,
      partial: 0,
      failed: 1,
      cancelled: 0,
      live: 0,
    });
    expect(renderStats(queries.stats())).toContain('recent jobs: 7 (done 1, partial 1, failed 2, cancelled 1, live 2)');
  });
});
