import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { parseJobRequest } from '../../src/domain/request.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';

const spec = parseJobRequest({ workspace: '/w', tasks: [{ instruction: 'x', command: 'true' }] }, { defaultRunner: null, available: ['shell'] });
const insert = (store: Store, id: string) =>
  store.insertJob({ id, owner: null, spec, created: Date.now() / 1000, idemKey: null, requestHash: null, idemWindowS: 3600, pid: process.pid, pidStart: 0 });
const walBytes = (dir: string) => (existsSync(join(dir, 'gaffer.db-wal')) ? statSync(join(dir, 'gaffer.db-wal')).size : 0);

describe('the background checkpointer', () => {
  it('leaves a one-shot connection to SQLite: a few commits checkpoint by themselves', () => {
    const store = new Store(tempDir());
    insert(store, 'aaaaaaaaaaaa');
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    store.close();
  });

  it('takes over the checkpoints of a connection that keeps writing, keeps the WAL bounded, and lets the store close last', async () => {
    const dir = tempDir();
    const store = new Store(dir);
    insert(store, 'bbbbbbbbbbbb');
    for (let i = 0; i < 300; i++) store.appendEvent('bbbbbbbbbbbb', { name: 'job', event: 'phase', message: `step ${i}` });
    // past its first 200 commits the connection no longer checkpoints on a commit of its own
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    let peak = 0;
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 150; i++) store.appendEvent('bbbbbbbbbbbb', { name: 'job', event: 'phase', message: `round ${round} ${i}` });
      await sleep(20); // the worker's turn
      peak = Math.max(peak, walBytes(dir));
    }
    // 3300 commits of ~3 pages each would be ~40 MB of WAL unchecked; the checkpoints let it be reused
    expect(peak).toBeLessThan(12 * 1024 * 1024);
    expect(store.listEvents('bbbbbbbbbbbb', 3290).map((e) => e.message)).toEqual(['round 19 140', 'round 19 141', 'round 19 142', 'round 19 143', 'round 19 144', 'round 19 145', 'round 19 146', 'round 19 147', 'round 19 148', 'round 19 149']);
    store.close();
    // the worker's connection was closed first: the store's close was the last and removed the WAL
    expect(existsSync(join(dir, 'gaffer.db-wal'))).toBe(false);
    const again = new Store(dir);
    expect(again.getJob('bbbbbbbbbbbb')?.seq).toBe(3300);
    again.close();
  });
});
