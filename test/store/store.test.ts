import Database from 'better-sqlite3';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownProcessIdentity } from '../../src/platform/process/process-identity.js';
import { Store, workspacesCollide } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { newJob } from './new-job.js';

const insert = (store: Store, id: string, workspace = '/w', extra: Partial<Parameters<Store['insertJob']>[0]> = {}) =>
  store.insertJob(newJob(id, workspace, extra));

describe('the store', () => {
  it('is a WAL-mode SQLite file that a second connection reads at once', () => {
    const dir = tempDir();
    const a = new Store(dir);
    const b = new Store(dir);
    expect(a.db.pragma('journal_mode', { simple: true })).toBe('wal');
    insert(a, 'aaaaaaaaaaaa');
    expect(b.getJob('aaaaaaaaaaaa')?.status).toBe('queued');
    a.close();
    b.close();
    const raw = new Database(join(dir, 'gaffer.db'));
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(raw.pragma('user_version', { simple: true })).toBe(
      readdirSync(new URL('../../src/store/migrations/', import.meta.url)).filter((f) => f.endsWith('.sql')).length,
    );
    raw.close();
  });

  it('numbers events per job and keeps their extra fields', () => {
    const store = new Store(tempDir());
    insert(store, 'bbbbbbbbbbbb');
    const first = store.appendEvent('bbbbbbbbbbbb', { name: 'job', event: 'phase', message: 'queued' });
    const second = store.appendEvent('bbbbbbbbbbbb', {
      name: 'w',
      event: 'state',
      message: 'x',
      state: 'rate_limited',
    });
    expect([first.seq, second.seq]).toEqual([1, 2]);
    expect(store.listEvents('bbbbbbbbbbbb', 1)).toEqual([second]);
    expect(store.getJob('bbbbbbbbbbbb')?.seq).toBe(2);
    store.close();
  });

  it('keeps the newest 5,000 events of a job', () => {
    const store = new Store(tempDir());
    insert(store, 'cccccccccccc');
    for (let i = 0; i < 5_600; i++)
      store.appendEvent('cccccccccccc', { name: 'w', event: 'output', message: String(i) });
    const events = store.listEvents('cccccccccccc', 0, 10_000);
    expect(events.length).toBeLessThanOrEqual(5_500);
    expect(events.length).toBeGreaterThanOrEqual(5_000);
    expect(events.at(-1)?.seq).toBe(5_600);
    store.close();
  });

  it('an idempotency key returns the job that holds it, within the window', () => {
    const store = new Store(tempDir());
    const first = insert(store, 'dddddddddddd', '/w', { idemKey: 'k' });
    const again = insert(store, 'eeeeeeeeeeee', '/w', { idemKey: 'k' });
    expect(first.created).toBe(true);
    expect(again).toMatchObject({ created: false, job: { id: 'dddddddddddd' } });
    const later = insert(store, 'ffffffffffff', '/w', { idemKey: 'k', created: Date.now() / 1000 + 7200 });
    expect(later.created).toBe(true);
    store.close();
  });

  it('locks one job per workspace, nested paths colliding, and names a dead holder for recovery', () => {
    const store = new Store(tempDir());
    expect(store.tryLockWorkspace('/a/b', 'j1', process.pid, readStart())).toEqual({ ok: true });
    expect(store.tryLockWorkspace('/a/b/c', 'j2', process.pid, readStart())).toMatchObject({
      ok: false,
      holder: { jobId: 'j1' },
    });
    expect(store.tryLockWorkspace('/a', 'j2', process.pid, readStart())).toMatchObject({ ok: false });
    expect(store.tryLockWorkspace('/a/bc', 'j3', process.pid, readStart())).toEqual({ ok: true });
    expect(store.tryLockWorkspace('/a/b/c', 'j2', process.pid, readStart())).toMatchObject({
      ok: false,
      isHolderDead: false,
    });
    // a holder whose process is gone (pid 2^22 + 1 never exists) is named, not freed: recovery frees it (engine/maintenance/recovery.ts)
    store.db.prepare('UPDATE workspace_locks SET pid = ? WHERE job_id = ?').run(4_194_305, 'j1');
    expect(store.tryLockWorkspace('/a/b/c', 'j2', process.pid, readStart())).toMatchObject({
      ok: false,
      holder: { jobId: 'j1' },
      isHolderDead: true,
    });
    // this process's pid with another start time: an earlier process that had the same pid, gone
    store.db
      .prepare('UPDATE workspace_locks SET pid = ?, pid_start = ? WHERE job_id = ?')
      .run(process.pid, readStart() - 1000, 'j1');
    expect(store.tryLockWorkspace('/a/b/c', 'j2', process.pid, readStart())).toMatchObject({ isHolderDead: true });
    store.releaseLock('/a/b', 'j1');
    expect(store.tryLockWorkspace('/a/b/c', 'j2', process.pid, readStart())).toEqual({ ok: true });
    store.close();
  });

  it('tells nested paths apart from siblings that share a prefix', () => {
    expect(workspacesCollide('/a/b', '/a/b/c')).toBe(true);
    expect(workspacesCollide('/a/b/c', '/a/b')).toBe(true);
    expect(workspacesCollide('/a/b', '/a/bc')).toBe(false);
    expect(workspacesCollide('/a/b', '/a/b')).toBe(true);
  });
});

function readStart(): number {
  return ownProcessIdentity().start;
}
