import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { newJob, storeContract } from './store-contract.js';

storeContract('the SQLite store', () => new Store(tempDir()));

describe('the SQLite store codecs', () => {
  it('a damaged JSON column is refused naming the table, the column and the value, not handed on untyped', () => {
    const store = new Store(tempDir());
    store.insertJob(newJob('job00000000d'));
    store.db.prepare('UPDATE jobs SET result_json = ? WHERE id = ?').run('{"files":1}', 'job00000000d');
    expect(() => store.getJob('job00000000d')).toThrow(/jobs\.result_json holds "\{\\"files\\":1\}", expected a job result/);
    store.db.prepare('UPDATE jobs SET result_json = NULL, status = ? WHERE id = ?').run('sleeping', 'job00000000d');
    expect(() => store.getJob('job00000000d')).toThrow(/jobs\.status holds "sleeping", expected one of queued/);
    store.close();
  });
});
