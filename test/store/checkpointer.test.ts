import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { newJob } from './new-job.js';

const insert = (store: Store, id: string) => store.insertJob(newJob(id));

const walBytes = (dir: string) =>
  existsSync(join(dir, 'gaffer.db-wal')) ? statSync(join(dir, 'gaffer.db-wal')).size : 0;

/**
 * Waits (bounded) for a pause's checkpoint to be done, however slow the worker is under load: once it
 * is, the next commit starts the WAL over, writing inside the file instead of growing it. Each look
 * is one commit to another job, after a pause long enough for the worker to be asked.
 */
async function untilTheWalStartsOver(store: Store, dir: string): Promise<void> {
  for (let look = 0; look < 60; look++) {
    await sleep(400);
    const before = walBytes(dir);
    store.appendEvent(PROBE, { name: 'job', event: 'phase', message: `look ${look}` });
    if (walBytes(dir) === before) return;
  }
  throw new Error('the WAL never started over: no checkpoint ran at the pauses');
}
const PROBE = 'pppppppppppp';

describe('the background checkpointer', () => {
  it('leaves a one-shot connection to SQLite: a few commits checkpoint by themselves', () => {
    const store = new Store(tempDir());
    insert(store, 'aaaaaaaaaaaa');
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    store.close();
  });

  it('takes over the checkpoints of a connection that keeps writing: at its pauses, so the WAL is reused; the store closes last', async () => {
    const dir = tempDir();
    const store = new Store(dir);
    insert(store, 'bbbbbbbbbbbb');
    insert(store, PROBE);
    const burst = (from: number) => {
      for (let i = 0; i < 300; i++)
        store.appendEvent('bbbbbbbbbbbb', { name: 'job', event: 'phase', message: `step ${from + i}` });
    };
    burst(0);
    // past its first 200 commits the connection no longer checkpoints on a commit of its own
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const afterOne = walBytes(dir);
    await untilTheWalStartsOver(store, dir); // a pause: the worker checkpoints the WAL
    burst(300); // written from the WAL's start again
    const afterTwo = walBytes(dir);
    expect(afterTwo).toBeLessThan(afterOne * 1.3); // unchecked it would hold both bursts
    await untilTheWalStartsOver(store, dir);
    burst(600);
    await untilTheWalStartsOver(store, dir);
    burst(900);
    // unchecked, four bursts of 300 commits would make the WAL four times as long as one
    expect(walBytes(dir)).toBeLessThan(afterTwo * 1.2);
    expect(store.listEvents('bbbbbbbbbbbb', 1198).map((e) => e.message)).toEqual(['step 1198', 'step 1199']);
    store.close();
    // the worker's connection was closed first: the store's close was the last and removed the WAL
    expect(existsSync(join(dir, 'gaffer.db-wal'))).toBe(false);
    const again = new Store(dir);
    expect(again.getJob('bbbbbbbbbbbb')?.seq).toBe(1200);
    again.close();
  });

  it('a long burst with no pause is checkpointed by the store itself every 1000 commits: the WAL stops growing', async () => {
    const dir = tempDir();
    const store = new Store(dir);
    insert(store, 'cccccccccccc');
    const sizes: number[] = [];
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 500; i++)
        store.appendEvent('cccccccccccc', { name: 'job', event: 'phase', message: `${round}.${i}` });
      await new Promise((resolve) => setImmediate(resolve)); // the worker's turn, far shorter than a pause
      await new Promise((resolve) => setTimeout(resolve, 20));
      sizes.push(walBytes(dir));
    }
    // 4000 commits unchecked would grow the WAL all along; checkpointed, it stops growing
    expect(sizes[7]).toBeLessThan(sizes[3]! * 1.5);
    store.close();
  });
});
