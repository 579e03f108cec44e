import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import type { Attempt } from '../../src/domain/attempt-machine.js';
import { againstTable } from '../helpers/attempt-table.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, startServe } from '../reliability/helpers.js';
import {
  bareRemote,
  eventsOf,
  HAS_REDIS,
  remoteFile,
  startCoordinator,
  startNode,
  startRedis,
  waitFor,
} from './harness.js';

/**
 * spec 09 "Remote workspaces": a job names a remote repository (`"repo": {"url", "ref"}`) instead of
 * a workspace. The coordinator checks the ref out for the job; its node fetches from the remote,
 * pushes the attempt's branch `gaffer/<job>/<task>` to it, and the coordinator fetches that branch
 * back and makes the evidence, verification and proof on its own checkout.
 */
describe.skipIf(!HAS_REDIS)('jobs on a remote repository (needs Debian redis-server; skipped without it)', () => {
  it('a job on a bare remote: its branch is pushed there, the coordinator verifies and proves it from its own checkout, which goes when the job ends; a fix round’s base comes from the coordinator', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const nodes = [await startNode(redis.url, 'r1')];
    const bare = bareRemote({ 'README.md': 'remote\n', 'seed.txt': 'seed\n' });
    const body = {
      repo: { url: bare, ref: 'main' },
      runner: 'shell',
      verify: "grep -qx 'second run' out.txt",
      // the first run fails the verification; the fix round runs it again on the first run's work, which only the coordinator has
      tasks: [
        {
          name: 'write',
          instruction: 'write out.txt',
          command:
            'if [ -f tried ]; then echo "second run" > out.txt; else touch tried; echo "first run" > out.txt; fi; rm -f seed.txt',
        },
      ],
    };
    const res = await call(server.url, 'POST', '/api/jobs', body, { 'idempotency-key': 'remote-1' });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const id = res.json.id as string;
    // idempotent submission: the same key and request give the same job (its checkout's path is the job's own)
    const again = await call(server.url, 'POST', '/api/jobs', body, { 'idempotency-key': 'remote-1' });
    expect([again.status, again.json.id]).toEqual([200, id]);
    const answer = (await waitFor(server, id, 'done', 60)).state;
    expect(answer.status, answer.verdict).toBe('done');
    expect(answer.result.verification).toMatchObject({ ran: true, ok: true });
    expect(answer.result.proof.verdict).not.toBe('contradicted');
    expect(answer.result.changes).toMatchObject({
      source: 'checkpoint',
      added: ['out.txt', 'tried'],
      deleted: ['seed.txt'],
    });
    // the first attempt's branch is on the remote, for review, with what the node committed
    expect(remoteFile(bare, `gaffer/${id}/write`, 'out.txt')).toBe('first run\n');
    expect(remoteFile(bare, `gaffer/${id}/write`, 'seed.txt')).toBeNull();
    const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
    const fixer = full.result.fixers?.[0] ?? full.result.workers.find((w: { role?: string }) => w.role === 'fixer');
    expect(fixer, JSON.stringify(full.result.workers)).toBeDefined();
    expect(remoteFile(bare, `gaffer/${id}/${fixer.name}`, 'out.txt')).toBe('second run\n');
    // the first attempt started from main as the remote had it; the fix round from the first run's work, exported by the coordinator
    const rev = (...args: string[]) => execFileSync('git', ['--git-dir', bare, ...args], { encoding: 'utf8' }).trim();
    expect(rev('rev-parse', `gaffer/${id}/write^`)).toBe(rev('rev-parse', 'main'));
    expect(rev('log', '-1', '--format=%s', `gaffer/${id}/${fixer.name}^`)).toBe(
      'gaffer: the workspace as exported to a node',
    );
    // main is untouched, and the coordinator's checkout of the job is gone
    expect(remoteFile(bare, 'main', 'seed.txt')).toBe('seed\n');
    const jobs = readdirSync(join(server.dataDir, 'remotes')).map((h) => join(server.dataDir, 'remotes', h, 'jobs'));
    await eventually(
      () => jobs.flatMap((d) => (existsSync(d) ? readdirSync(d) : [])).length === 0,
      5_000,
      "the job's checkout to go",
    );
    // its diff is read from its snapshots, whose objects the cache of the remote lends: still there with the checkout gone
    const diff = await call(server.url, 'GET', `/api/jobs/${id}/diff?path=seed.txt`);
    expect(diff.text, diff.text).toContain('-seed');
    const events = await eventsOf(server, id);
    expect(events.some((e) => e.event === 'phase' && e.message.startsWith(`checked out main of ${bare} at `))).toBe(
      true,
    );
    for (const n of nodes) expect(n.child.exitCode).toBeNull();
    // issue 34: the attempts on the remote checkout and the nodes carried out the table's effects, no others
    const db = new Database(join(server.dataDir, 'gaffer.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT machine_json FROM attempts WHERE job_id = ?').all(id) as {
        machine_json: string;
      }[];
      expect(rows.map((r) => JSON.parse(r.machine_json) as Attempt).flatMap(againstTable)).toEqual([]);
      expect(rows).toHaveLength(2);
    } finally {
      db.close();
    }
  }, 90_000);

  it('a push the remote refuses: the commit goes to the coordinator as a bundle instead, and the worker says why', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    await startNode(redis.url, 'p1');
    const bare = bareRemote({ 'a.txt': 'a\n' });
    // a branch named `gaffer` leaves no room for `gaffer/<job>/<task>`: every push is refused
    execFileSync('git', ['--git-dir', bare, 'branch', 'gaffer', 'main']);
    const res = await call(server.url, 'POST', '/api/jobs', {
      repo: { url: `file://${bare}` },
      runner: 'shell',
      verify: 'grep -qx b b.txt',
      tasks: [{ name: 'b', instruction: 'b', command: 'echo b > b.txt' }],
    });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const answer = (await waitFor(server, res.json.id, 'done', 60)).state;
    expect(answer.status, answer.verdict).toBe('done');
    expect(answer.result.changes.added).toEqual(['b.txt']);
    const full = (await call(server.url, 'GET', `/api/jobs/${res.json.id}?full=1`)).json;
    expect(full.result.workers[0].error).toMatch(
      /the push to file:\/\/.* failed, the commit went to the coordinator instead/,
    );
  }, 90_000);

  it('a remote that cannot be fetched ends the job in error naming the URL; a repo without a cluster, or with a workspace too, is refused', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const missing = join(tempDir('gaffer-remote-'), 'nothing.git');
    const res = await call(server.url, 'POST', '/api/jobs', {
      repo: { url: missing, ref: 'main' },
      runner: 'shell',
      verify: 'none',
      tasks: [{ instruction: 'x', command: 'true' }],
    });
    expect(res.status).toBe(202);
    const answer = (await waitFor(server, res.json.id, 'done', 30)).state;
    expect(answer.status).toBe('error');
    expect(answer.error).toContain(`main of ${missing} could not be fetched`);
    const both = await call(server.url, 'POST', '/api/jobs', {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }, { git: true }),
      repo: { url: missing },
      runner: 'shell',
      tasks: [{ instruction: 'x', command: 'true' }],
    });
    expect(both.status).toBe(400);
    expect(both.json.error).toMatchObject({ code: 'invalid_request', field: 'repo' });
    const alone = await startServe(join(tempDir(), 'alone'), { env: { ...process.env, GAFFER_URL: '' } });
    const single = await call(alone.url, 'POST', '/api/jobs', {
      repo: { url: missing },
      runner: 'shell',
      tasks: [{ instruction: 'x', command: 'true' }],
    });
    expect(single.json.error).toMatchObject({
      code: 'not_supported',
      field: 'repo',
      message: expect.stringContaining('gaffer serve --queue'),
    });
    const helper = await call(server.url, 'POST', '/api/jobs', {
      repo: { url: 'ext::sh -c touch% /tmp/pwned' },
      runner: 'shell',
      tasks: [{ instruction: 'x', command: 'true' }],
    });
    expect(helper.status).toBe(400);
    expect(helper.json.error.field).toBe('repo.url');
  }, 60_000);
});
