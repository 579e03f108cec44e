import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDoctor, type DoctorReport } from '../../src/engine/doctor.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';

/*
 * Doctor looks and changes nothing (issue 12): it never makes the store, and never migrates one.
 */

const MIGRATIONS = join(import.meta.dirname, '..', '..', 'src', 'store', 'migrations');

const sqliteCheck = (report: DoctorReport) => report.checks.find((c) => c.name === 'sqlite') ?? expect.unreachable('no sqlite check');
const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const tablesOf = (db: Database.Database) => db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();

/** A gaffer.db as the first gaffer left it: only migration 0001, user_version 1. */
function versionOneStore(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'gaffer.db');
  const db = new Database(path);
  const first = readdirSync(MIGRATIONS).filter((f) => f.endsWith('.sql')).sort()[0] ?? expect.unreachable('no migrations');
  db.exec(readFileSync(join(MIGRATIONS, first), 'utf8'));
  db.pragma('user_version = 1');
  db.close();
  return path;
}

describe('gaffer doctor reads the store without touching it', () => {
  it('on a fresh data dir it says there is no store yet and leaves nothing behind, not even the dir', async () => {
    const dataDir = join(tempDir('gaffer-doctor-'), 'data');
    const report = await runDoctor({ dataDir, endpointTimeoutMs: 500 });
    expect(sqliteCheck(report)).toMatchObject({ status: 'ok', detail: expect.stringContaining('no store yet') });
    expect(report.checks.find((c) => c.name === 'data dir')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/does not exist yet .* is writable/) });
    expect(existsSync(join(dataDir, 'gaffer.db'))).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('on an old-schema store it says the next start migrates it, and does not: same bytes, same version, same tables', async () => {
    const dataDir = join(tempDir('gaffer-doctor-'), 'data');
    const path = versionOneStore(dataDir);
    const before = digest(path);
    const latest = readdirSync(MIGRATIONS).filter((f) => f.endsWith('.sql')).length;

    const report = await runDoctor({ dataDir, endpointTimeoutMs: 500 });
    expect(sqliteCheck(report)).toMatchObject({ status: 'ok', detail: `${path}: integrity_check ok; schema 1 of ${latest}: the next start migrates it` });

    expect(digest(path)).toBe(before);
    const db = new Database(path, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(1);
    // 0002 adds job_processes and 0003 drops tasks: neither happened
    expect(tablesOf(db)).toContain('tasks');
    expect(tablesOf(db)).not.toContain('job_processes');
    db.close();
  });

  it('on a current store: integrity_check ok at the latest schema', async () => {
    const dataDir = join(tempDir('gaffer-doctor-'), 'data');
    new Store(dataDir).close();
    const latest = readdirSync(MIGRATIONS).filter((f) => f.endsWith('.sql')).length;
    const report = await runDoctor({ dataDir, endpointTimeoutMs: 500 });
    expect(sqliteCheck(report)).toMatchObject({ status: 'ok', detail: `${join(dataDir, 'gaffer.db')}: integrity_check ok; schema ${latest}` });
  });

  it('a store it cannot read is a failure that says what to do', async () => {
    const dataDir = join(tempDir('gaffer-doctor-'), 'data');
    mkdirSync(dataDir, { recursive: true });
    const path = join(dataDir, 'gaffer.db');
    // not a database: the first page is text
    writeFileSync(path, 'this is not a sqlite file, only text that is long enough to be a header of one');
    const report = await runDoctor({ dataDir, endpointTimeoutMs: 500 });
    expect(sqliteCheck(report)).toMatchObject({ status: 'fail', fix: expect.stringContaining('moved aside') });
    expect(readFileSync(path, 'utf8')).toContain('this is not a sqlite file');
  });
});
