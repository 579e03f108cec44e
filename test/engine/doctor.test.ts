import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDoctor, type DoctorReport } from '../../src/engine/maintenance/doctor.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp.js';

/*
 * Doctor looks and changes nothing (issue 12): it never makes the store, and never migrates one.
 */

const MIGRATIONS = join(import.meta.dirname, '..', '..', 'src', 'store', 'migrations');

const sqliteCheck = (report: DoctorReport) =>
  report.checks.find((c) => c.name === 'sqlite') ?? expect.unreachable('no sqlite check');
const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const tablesOf = (db: Database.Database) =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();

/** A gaffer.db as the first gaffer left it: only migration 0001, user_version 1. */
function versionOneStore(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'gaffer.db');
  const db = new Database(path);
  const first =
    readdirSync(MIGRATIONS)
      .filter((f) => f.endsWith('.sql'))
      .sort()[0] ?? expect.unreachable('no migrations');
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
    expect(report.checks.find((c) => c.name === 'data dir')).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/does not exist yet .* is writable/),
    });
    expect(existsSync(join(dataDir, 'gaffer.db'))).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('on an old-schema store it says the next start migrates it, and does not: same bytes, same version, same tables', async () => {
    const dataDir = join(tempDir('gaffer-doctor-'), 'data');
    const path = versionOneStore(dataDir);
    const before = digest(path);
    const latest = readdirSync(MIGRATIONS).filter((f) => f.endsWith('.sql')).length;

    const report = await runDoctor({ dataDir, endpointTimeoutMs: 500 });
    expect(sqliteCheck(report)).toMatchObject({
      status: 'ok',
      detail: `${path}: integrity_check ok; schema 1 of ${latest}: the next start migrates it`,
    });

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
    expect(sqliteCheck(report)).toMatchObject({
      status: 'ok',
      detail: `${join(dataDir, 'gaffer.db')}: integrity_check ok; schema ${latest}`,
    });
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

describe('gaffer doctor checks the endpoints roster entries name', () => {
  it("each entry's models.<name>: unknown, the wrong API for builtin, no model, a model the endpoint does not list; the judge said as such; no key printed", async () => {
    const { startModelServer } = await import('../support/model-server/index.js');
    const gateway = await startModelServer({ models: ['big-1', 'gateway-default'] });
    try {
      const dir = tempDir();
      const dataDir = join(dir, 'data');
      mkdirSync(dataDir, { recursive: true });
      const key = 'sk-doctor-gateway-SECRET-77';
      writeFileSync(
        join(dir, 'gaffer.config.json'),
        JSON.stringify({
          models: {
            gateway: { url: `${gateway.url}/v1`, key, model: 'gateway-default' },
            bare: { url: `${gateway.url}/v1` },
            gem: { url: `${gateway.url}/v1beta`, api: 'gemini' },
          },
        }),
      );
      // a roster file: config load does not see it, so doctor is where a wrong name shows before a job
      const entry = (id: string, extra: object) => ({
        id,
        runner: 'builtin',
        provider: 'gateway',
        billing: 'free',
        cost: 'free',
        tasks: ['fix'],
        ...extra,
      });
      writeFileSync(
        join(dataDir, 'gaffer.roster.json'),
        JSON.stringify({
          entries: [
            entry('listed', { model: 'big-1', endpoint: 'gateway' }),
            entry('own', { endpoint: 'gateway' }),
            entry('unlisted', { model: 'huge-9', endpoint: 'gateway' }),
            entry('lost', { endpoint: 'nowhere' }),
            entry('nomodel', { endpoint: 'bare' }),
            entry('wrongapi', { model: 'g', endpoint: 'gem' }),
            entry('judge', { model: 'big-1', endpoint: 'gateway', tasks: ['judge'] }),
          ],
          judge: { entry: 'judge' },
        }),
      );
      const report = await runDoctor({
        dataDir,
        configPath: join(dir, 'gaffer.config.json'),
        env: {},
        endpointTimeoutMs: 2000,
      });
      const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
      expect(byName['roster entry listed']).toMatchObject({
        status: 'ok',
        detail: expect.stringMatching(
          /^builtin on models\.gateway \(openai-compatible http:\/\/127\.0\.0\.1:\d+\/v1\), model big-1 \(listed\)$/,
        ),
      });
      expect(byName['roster entry own']).toMatchObject({
        status: 'ok',
        detail: expect.stringContaining('model gateway-default (its listing: the endpoint gateway line)'),
      });
      expect(byName['roster entry unlisted']).toMatchObject({
        status: 'warn',
        detail: expect.stringContaining('model huge-9 is not listed (it lists big-1, gateway-default'),
      });
      expect(byName['roster entry lost']).toMatchObject({
        status: 'fail',
        detail: 'endpoint "nowhere" is not a model endpoint (models: gateway, bare, gem)',
      });
      expect(byName['roster entry nomodel']).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining('no model — the entry names none and models.bare has none'),
      });
      expect(byName['roster entry wrongapi']).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining('the builtin agent speaks openai-compatible or anthropic'),
      });
      expect(byName['roster judge judge']).toMatchObject({ status: 'ok' });
      // one listing per endpoint for the three entries that need it, besides the endpoint lines' own (gateway, bare); the key is in no check
      expect(gateway.hits.filter((h) => h.path === '/v1/models')).toHaveLength(3);
      expect(JSON.stringify(report)).not.toContain(key);
    } finally {
      await gateway.close();
    }
  });
});
