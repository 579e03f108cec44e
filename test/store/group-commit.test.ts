import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { newJob } from './new-job.js';

/** A raw connection of its own: what another process sees of the db. */
const otherProcessView = (dir: string) => new Database(join(dir, 'gaffer.db'), { readonly: true });

describe('group commit (an engine connection)', () => {
  it('commits the writes of one turn together, at the turn’s end; this connection reads them at once', async () => {
    const dir = tempDir();
    const store = new Store(dir);
    store.groupCommits();
    const other = otherProcessView(dir);
    const count = () => other.prepare('SELECT count(*) AS n FROM events').get() as { n: number };
    try {
      store.insertJob(newJob('aaaaaaaaaaaa'));
      store.appendEvent('aaaaaaaaaaaa', { name: 'job', event: 'phase', message: 'one' });
      store.updateJob('aaaaaaaaaaaa', { phase: 'two' });
      store.appendEvent('aaaaaaaaaaaa', { name: 'job', event: 'phase', message: 'three' });
      // the same connection sees its turn's writes…
      expect(store.getJob('aaaaaaaaaaaa')?.phase).toBe('two');
      expect(store.listEvents('aaaaaaaaaaaa')).toHaveLength(2);
      // …another sees none of them until the turn ends, then all of them — but the job at once:
      // its id goes out in this turn (an HTTP answer), and whoever is given it must find it
      expect(other.prepare(`SELECT phase FROM jobs WHERE id = 'aaaaaaaaaaaa'`).get()).toEqual({ phase: 'queued' });
      expect(count().n).toBe(0);
      await nextTurn();
      expect(count().n).toBe(2);
      expect(other.prepare(`SELECT phase FROM jobs WHERE id = 'aaaaaaaaaaaa'`).get()).toEqual({ phase: 'two' });
    } finally {
      other.close();
      store.close();
    }
  });

  it('a second connection opened by this process mid-turn neither waits on the group nor misses it', () => {
    const dir = tempDir();
    const store = new Store(dir);
    store.groupCommits();
    store.insertJob(newJob('bbbbbbbbbbbb'));
    const started = Date.now();
    // it migrates under BEGIN IMMEDIATE: it would wait out the busy timeout on this thread's open group
    const second = new Store(dir);
    try {
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(second.getJob('bbbbbbbbbbbb')?.status).toBe('queued');
    } finally {
      second.close();
      store.close();
    }
  });

  it('two grouping connections of one process write in turn, never waiting on each other’s open group', () => {
    const dir = tempDir();
    const first = new Store(dir);
    const second = new Store(dir);
    first.groupCommits();
    second.groupCommits();
    try {
      first.insertJob(newJob('cccccccccccc'));
      second.insertJob(newJob('dddddddddddd'));
      const started = Date.now();
      // each opens its group while the other's is open, in one turn: the other's is committed first
      first.appendEvent('cccccccccccc', { name: 'job', event: 'phase', message: 'one' });
      second.appendEvent('dddddddddddd', { name: 'job', event: 'phase', message: 'two' });
      first.updateJob('cccccccccccc', { phase: 'three' });
      second.insertJob(newJob('eeeeeeeeeeee'));
      first.appendEvent('cccccccccccc', { name: 'job', event: 'phase', message: 'four' });
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(second.getJob('cccccccccccc')?.phase).toBe('three');
      expect(first.getJob('eeeeeeeeeeee')?.status).toBe('queued');
    } finally {
      second.close();
      first.close();
    }
  });

  // the built store (`npm run build`), as the CLI runs it
  it('a process that exits mid-turn (process.exit) keeps what the turn wrote; close commits too', () => {
    const dir = tempDir();
    const script = `
      import { Store } from ${JSON.stringify(new URL('../../dist/store/store.js', import.meta.url).pathname)};
      const store = new Store(${JSON.stringify(dir)});
      store.groupCommits();
      store.insertJob(${JSON.stringify(newJob('cccccccccccc'))});
      store.appendEvent('cccccccccccc', { name: 'job', event: 'phase', message: 'last words' });
      process.exit(0);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const other = otherProcessView(dir);
    try {
      expect(other.prepare(`SELECT message FROM events WHERE job_id = 'cccccccccccc'`).all()).toEqual([
        { message: 'last words' },
      ]);
    } finally {
      other.close();
    }
    const store = new Store(dir);
    store.groupCommits();
    store.updateJob('cccccccccccc', { phase: 'closed' });
    store.close();
    const after = otherProcessView(dir);
    expect(after.prepare(`SELECT phase FROM jobs WHERE id = 'cccccccccccc'`).get()).toEqual({ phase: 'closed' });
    after.close();
  });
});
