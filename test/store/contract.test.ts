import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
    expect(() => store.getJob('job00000000d')).toThrow(
      /jobs\.result_json holds "\{\\"files\\":1\}", expected a job result/,
    );
    store.db.prepare('UPDATE jobs SET result_json = NULL, status = ? WHERE id = ?').run('sleeping', 'job00000000d');
    expect(() => store.getJob('job00000000d')).toThrow(/jobs\.status holds "sleeping", expected one of queued/);
    store.close();
  });
});

describe('the SQLite store migrations', () => {
  it('a version-2 db (with the never-read tasks table) opens at the latest version: the table is gone, its jobs read as before', () => {
    const dir = tempDir();
    const migrations = new URL('../../src/store/migrations/', import.meta.url);
    const old = new Database(join(dir, 'gaffer.db'));
    for (const file of ['0001_init.sql', '0002_job_processes.sql'])
      old.exec(readFileSync(new URL(file, migrations), 'utf8'));
    old.pragma('user_version = 2');
    const job = newJob('job00000000e');
    old
      .prepare(`INSERT INTO jobs (id, title, workspace, status, created, spec_json) VALUES (?, ?, ?, 'done', ?, ?)`)
      .run(job.id, job.spec.title, '/w', job.created, JSON.stringify(job.spec));
    old
      .prepare(
        `INSERT INTO tasks (job_id, idx, name, type, runner, instruction, spec_json) VALUES (?, 0, 'worker-1', 'implement', 'shell', 'x', '{}')`,
      )
      .run(job.id);
    old.close();
    const store = new Store(dir);
    expect(
      store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'tasks'`).get(),
    ).toBeUndefined();
    expect(store.db.pragma('user_version', { simple: true })).toBe(
      readdirSync(migrations).filter((f) => f.endsWith('.sql')).length,
    );
    expect(store.getJob(job.id)?.spec.tasks.map((t) => t.name)).toEqual(['worker-1', 'second']);
    store.close();
  });
});
