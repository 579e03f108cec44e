import { existsSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, processesWith } from '../reliability/helpers.js';
import { signEntry, type QueueEntry } from '../../src/engine/execution/wire.js';
import { writeNodeRecord } from '../../src/engine/execution/node-record.js';
import { credentialDigest } from '../../src/config/node-credentials.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import {
  bareRemote,
  credentialOf,
  eventsOf,
  HAS_REDIS,
  NODE_TOKEN,
  remoteFile,
  startCoordinator,
  startNode,
  startRedis,
  waitFor,
} from './harness.js';

/**
 * spec 09 / issue 17: a coordinator (`gaffer serve --queue`) and worker nodes (`gaffer node`) as
 * separate processes with their own data and work dirs, on a redis-server of the test's own. The
 * nodes get each workspace as a git bundle and send their work back as one; the coordinator makes
 * the evidence, verification and proof from its own disk.
 */
describe.skipIf(!HAS_REDIS)('a cluster on BullMQ/Redis (needs Debian redis-server; skipped without it)', () => {
  it('a coordinator and two nodes run 10 shell jobs: each done, its change on the coordinator’s disk, verified and proved there; at most --runner-limit at once', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url, ['--runner-limit', 'shell=3']);
    const nodes = await Promise.all([startNode(redis.url, 'n1'), startNode(redis.url, 'n2')]);
    // BullMQ's own count of the nodes' running attempts (each node has its queue), looked at throughout: 2 nodes × 2 slots, held to 3
    const queues = ['n1', 'n2'].map(
      (n) => new Queue(`node-${n}`, { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix: 'gaffer' }),
    );
    let mostActive = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const counts = await Promise.all(queues.map((q) => q.getActiveCount()));
        mostActive = Math.max(
          mostActive,
          counts.reduce((a, b) => a + b, 0),
        );
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const jobs = Array.from({ length: 10 }, (_, i) => {
      // HEAD plus uncommitted work: the node must see the dirty file too
      const ws = makeWorkspace({ 'README.md': `job ${i}\n`, 'seed.txt': 'seed\n' }, { git: true });
      return { i, ws };
    });
    for (const { ws, i } of jobs) writeFileSync(join(ws, 'dirty.txt'), `dirty ${i}\n`);
    const submitted = await Promise.all(
      jobs.map(async ({ i, ws }) => {
        const body = {
          workspace: ws,
          title: `cluster job ${i}`,
          runner: 'shell',
          // the verification is the coordinator's, run on its own disk after the node's commit was applied
          verify: `grep -qx 'job ${i} from dirty ${i}' out.txt`,
          tasks: [
            {
              name: 'write',
              instruction: 'write out.txt',
              command: `sleep 1; echo "job ${i} from $(cat dirty.txt)" > out.txt; rm seed.txt; echo wrote`,
            },
          ],
        };
        const res = await call(server.url, 'POST', '/api/jobs', body, { 'idempotency-key': `cluster-${i}` });
        expect(res.status).toBe(202);
        return { i, ws, id: res.json.id as string, body };
      }),
    );
    // idempotent submission is unchanged: the same key gives the same job
    const again = await call(server.url, 'POST', '/api/jobs', submitted[0]?.body, { 'idempotency-key': 'cluster-0' });
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(submitted[0]?.id);

    const started = Date.now();
    const ends = await Promise.all(
      submitted.map(async (s) => ({ ...s, answer: (await waitFor(server, s.id, 'done', 80)).state })),
    );
    const seconds = (Date.now() - started) / 1000;
    const takenBy = new Map<string, number>();
    for (const { i, ws, id, answer } of ends) {
      expect(answer.status, `job ${i}: ${answer.verdict}`).toBe('done');
      // the evidence is the coordinator's snapshot of its own workspace: the node's change is on its disk
      expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe(`job ${i} from dirty ${i}\n`);
      expect(existsSync(join(ws, 'seed.txt'))).toBe(false);
      expect(answer.result.changes).toMatchObject({
        source: 'checkpoint',
        added: ['out.txt'],
        deleted: ['seed.txt'],
        modified: [],
      });
      expect(answer.result.verification).toMatchObject({ ran: true, ok: true });
      expect(answer.result.proof.verdict).toBe('proved');
      const events = await eventsOf(server, id);
      const taken = events.filter((e) => e.event === 'node' && e.node_event === 'taken');
      expect(taken).toHaveLength(1);
      const node = taken[0]?.node as string;
      takenBy.set(node, (takenBy.get(node) ?? 0) + 1);
      // the node's output reached the job's own event stream
      expect(events.some((e) => e.name === 'write' && e.event === 'output' && e.message.includes('wrote'))).toBe(true);
      expect(events.filter((e) => e.name === 'write' && e.event === 'done')).toHaveLength(1);
    }
    watching = false;
    await watch;
    for (const q of queues) await q.close();
    expect([...takenBy.keys()].sort()).toEqual(['n1', 'n2']);
    expect(mostActive).toBeGreaterThanOrEqual(2);
    expect(mostActive).toBeLessThanOrEqual(3);
    console.log(
      `cluster: 10 jobs on 2 nodes (2 slots each, shell limited to 3) in ${seconds.toFixed(1)} s; taken ${JSON.stringify(Object.fromEntries(takenBy))}; at most ${mostActive} at once`,
    );
    for (const n of nodes) expect(n.child.exitCode).toBeNull();
  }, 90_000);

  it('three nodes, 30 jobs on a bare remote repository, one node SIGKILLed mid-run: every job done with its evidence and its branch pushed; only the killed node’s attempts are retried, once', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const nodes = await Promise.all(['m1', 'm2', 'm3'].map((n) => startNode(redis.url, n, { stallS: 4 })));
    // each node's own queue: the coordinator puts there what it offers that node
    const queues = new Map(
      nodes.map((n) => [
        n.name,
        new Queue(`node-${n.name}`, { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix: 'gaffer' }),
      ]),
    );
    // spec 09: the jobs name a bare repository as their remote; the nodes fetch from it and push their branches to it
    const bare = bareRemote({ 'README.md': 'remote\n' });
    const started = Date.now();
    const submitted = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const res = await call(server.url, 'POST', '/api/jobs', {
          repo: { url: bare, ref: 'main' },
          runner: 'shell',
          verify: `grep -qx 'job ${i}' out.txt`,
          tasks: [{ name: 'write', instruction: 'write', command: `echo begun; sleep 1.5; echo 'job ${i}' > out.txt` }],
        });
        expect(res.status).toBe(202);
        return { i, id: res.json.id as string };
      }),
    );
    // the victim is killed while it runs attempts, once a few jobs are through
    const victim = nodes[1] as (typeof nodes)[number];
    const victimQueue = queues.get(victim.name) as Queue;
    let victimHad: string[] = [];
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      const completed = await Promise.all([...queues.values()].map((q) => q.getCompletedCount()));
      if (completed.reduce((a, b) => a + b, 0) < 4) continue;
      // taken under 0.7 s ago: it cannot finish (a 1.5 s task) before the kill lands
      victimHad = (await victimQueue.getActive())
        .filter((j) => j.processedBy === victim.name && Date.now() - (j.processedOn ?? 0) < 700)
        .map((j) => j.id ?? '');
      if (victimHad.length > 0) break;
    }
    expect(victimHad.length).toBeGreaterThan(0);
    victim.child.kill('SIGKILL');
    const ends = await Promise.all(
      submitted.map(async (s) => ({ ...s, answer: (await waitFor(server, s.id, 'done', 85)).state })),
    );
    const seconds = (Date.now() - started) / 1000;
    for (const q of queues.values()) await q.close();
    let retried = 0;
    let claimedLost = 0;
    for (const { i, id, answer } of ends) {
      expect(answer.status, `job ${i}: ${answer.verdict} ${JSON.stringify(answer.workers)}`).toBe('done');
      expect(answer.result.changes.added).toEqual(['out.txt']);
      expect(answer.result.proof.verdict).toBe('proved');
      const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
      const rows = full.result.workers.map(
        (w: { name: string; status: string; stop_reason: string }) => `${w.name}:${w.status}:${w.stop_reason}`,
      );
      const events = await eventsOf(server, id);
      const taken = events.filter((e) => e.event === 'node' && e.node_event === 'taken');
      // the work's branch on the remote (a retry takes the lost attempt's work over, and its branch) holds what ended done
      expect(remoteFile(bare, `gaffer/${id}/write`, 'out.txt')).toBe(`job ${i}\n`);
      if (rows.length === 2) {
        retried++;
        expect(rows).toEqual(['write:error:node_lost', 'write+node:done:complete']);
        // the lost attempt's take is the victim's when it said it: one killed between taking the entry and its word has none
        for (const e of taken.filter((t) => t.name === 'write')) expect(e.node).toBe(victim.name);
      } else expect(rows).toEqual(['write:done:complete']);
      // an entry the victim held is retried as a new attempt once the victim had claimed it (its `taken`);
      // one it took from its queue but was killed before claiming (a loaded machine widens that window) was
      // never its attempt to the coordinator: it is offered again as the same attempt, and ends done once
      if (victimHad.some((key) => key.startsWith(`${id}.`)) && taken.some((e) => e.node === victim.name)) {
        claimedLost++;
        expect(rows).toHaveLength(2);
      }
      // nothing reported twice: one end per attempt
      expect(events.filter((e) => e.event === 'done' || e.event === 'error')).toHaveLength(rows.length);
      // the work a dead node lost goes to the living
      expect(taken.filter((e) => e.name === 'write+node' && e.node === victim.name)).toEqual([]);
    }
    // the attempts the victim had at its death, and only attempts it had (an older one may have been there too)
    expect(retried).toBeGreaterThanOrEqual(claimedLost);
    expect(retried).toBeLessThanOrEqual(2);
    console.log(
      `cluster: 30 jobs on 3 nodes (2 slots each), one SIGKILLed mid-run with ${victimHad.length} attempt(s): all done in ${seconds.toFixed(1)} s; ${retried} retried once`,
    );
    // the run's own waits are bounded (60 s for the kill, 85 s for the ends): ~25 s alone under two CPU
    // burners, but it once ran out of 90 s on a machine loaded far past that
  }, 150_000);

  it('a node SIGKILLed mid-task: its work goes to the other node as one new attempt, which finishes it; nothing is reported twice', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const nodes = await Promise.all([
      startNode(redis.url, 'k1', { stallS: 4 }),
      startNode(redis.url, 'k2', { stallS: 4 }),
    ]);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'grep -qx finished k.txt',
      tasks: [{ name: 'slow', instruction: 'slow', command: 'echo begun; sleep 5; echo finished >> k.txt' }],
    });
    expect(res.status).toBe(202);
    const id = res.json.id as string;
    await waitFor(server, id, 'event:begun', 30);
    const first = (await eventsOf(server, id)).find((e) => e.event === 'node' && e.node_event === 'taken');
    const victim = nodes.find((n) => n.name === first?.node);
    expect(victim).toBeDefined();
    // the victim's worker: its shell, working in the victim's work dir
    const workersOf = (node: typeof victim) =>
      processesWith('echo begun; sleep 5').filter((pid) => {
        try {
          return readlinkSync(`/proc/${pid}/cwd`).startsWith(node?.workDir ?? '\0');
        } catch {
          return false;
        }
      });
    expect(workersOf(victim)).not.toEqual([]);
    const killedAt = Date.now();
    victim?.child.kill('SIGKILL');
    // a node that dies takes its sandboxed workers with it (bubblewrap's --die-with-parent): nothing of the lost attempt runs on
    // (an unsandboxed worker, where bubblewrap does not work, lives on until it ends: nothing reports it)
    if (probeSandbox().available)
      await eventually(() => workersOf(victim).length === 0, 3_000, "the dead node's worker to end");
    const answer = (await waitFor(server, id, 'done', 70)).state;
    const seconds = (Date.now() - killedAt) / 1000;
    expect(answer.status, answer.verdict).toBe('done');
    expect(readFileSync(join(ws, 'k.txt'), 'utf8')).toBe('finished\n');
    const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
    const rows = full.result.workers.map(
      (w: { name: string; attempt: number; status: string; stop_reason: string }) => [
        w.name,
        w.attempt,
        w.status,
        w.stop_reason,
      ],
    );
    expect(rows).toEqual([
      ['slow', 1, 'error', 'node_lost'],
      ['slow+node', 2, 'done', 'complete'],
    ]);
    const events = await eventsOf(server, id);
    const taken = events.filter((e) => e.event === 'node' && e.node_event === 'taken').map((e) => [e.name, e.node]);
    const survivor = nodes.find((n) => n !== victim)?.name;
    expect(taken).toEqual([
      ['slow', victim?.name],
      ['slow+node', survivor],
    ]);
    // one end per attempt: the lost one's error, the new one's done — never a second report of either
    expect(events.filter((e) => e.event === 'done' || e.event === 'error').map((e) => [e.name, e.event])).toEqual([
      ['slow', 'error'],
      ['slow+node', 'done'],
    ]);
    console.log(
      `cluster: a SIGKILLed node's task reassigned and finished ${seconds.toFixed(1)} s after the kill (stall 4 s, a 5 s task)`,
    );
  }, 90_000);

  it('a task whose second node is lost too: its attempt ends error with BullMQ’s reason, and no third attempt is made', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const nodes = await Promise.all(['s1', 's2', 's3'].map((n) => startNode(redis.url, n, { stallS: 4 })));
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'none',
      tasks: [{ name: 'slow', instruction: 'slow', command: 'echo begun; sleep 60' }],
    });
    const id = res.json.id as string;
    // each attempt's node is killed once it runs the worker (its output has arrived)
    for (const worker of ['slow', 'slow+node']) {
      let taker: string | undefined;
      await eventually(
        async () => {
          const events = await eventsOf(server, id);
          taker = events.find((e) => e.name === worker && e.event === 'node' && e.node_event === 'taken')?.node as
            string | undefined;
          const tookAt = events.findIndex((e) => e.name === worker && e.event === 'node' && e.node === taker);
          return taker !== undefined && events.slice(tookAt).some((e) => e.name === worker && e.event === 'output');
        },
        40_000,
        `${worker} running on a node`,
      );
      nodes.find((n) => n.name === taker)?.child.kill('SIGKILL');
    }
    const answer = (await waitFor(server, id, 'done', 60)).state;
    // spec 01: a job whose attempts got processes is partial, not error; the task's attempt is the error
    expect(answer.status).toBe('partial');
    const full = (await call(server.url, 'GET', `/api/jobs/${id}?full=1`)).json;
    expect(
      full.result.workers.map((w: { name: string; status: string; stop_reason: string }) => [
        w.name,
        w.status,
        w.stop_reason,
      ]),
    ).toEqual([
      ['slow', 'error', 'node_lost'],
      ['slow+node', 'error', 'node_lost_again'],
    ]);
    expect(full.result.workers[1].error).toContain('job stalled more than allowable limit');
  }, 90_000);

  it('cancel reaches the node within 5 s: its worker process is gone and the job ends cancelled', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    await startNode(redis.url, 'c1');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const marker = `gaffer-cluster-cancel-${process.pid}-${Date.now()}`;
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'none',
      tasks: [{ name: 'long', instruction: 'long', command: `echo begun; sleep 60; : ${marker}` }],
    });
    const id = res.json.id as string;
    await waitFor(server, id, 'event:begun', 30);
    expect(processesWith(marker).length).toBeGreaterThanOrEqual(1);
    const asked = Date.now();
    expect((await call(server.url, 'POST', `/api/jobs/${id}/cancel`)).status).toBe(200);
    while (processesWith(marker).length > 0 && Date.now() - asked < 10_000) await new Promise((r) => setTimeout(r, 25));
    const gone = (Date.now() - asked) / 1000;
    const answer = (await waitFor(server, id, 'done', 30)).state;
    expect(processesWith(marker)).toEqual([]);
    expect(gone).toBeLessThan(5);
    expect(answer.status).toBe('cancelled');
    expect(answer.result.workers[0]).toMatchObject({ status: 'cancelled', outcome: 'cancelled' });
    console.log(`cluster: cancel reached the node and its worker was gone ${gone.toFixed(2)} s after the request`);
  }, 90_000);

  it("a node's word is never evidence: a node that claims a change it did not send changes nothing, and its claim is named", async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    const credential = credentialOf('liar');
    const auth = { authorization: `Bearer ${credential}`, 'content-type': 'application/json' };
    let second = '';
    // a node that lies, with a credential of its own, speaking the wire protocol itself: it claims what it is offered,
    // reports a file it never changed, and sends no commit
    const records = new Redis(redis.url);
    const record = () =>
      writeNodeRecord(records, 'gaffer', {
        name: 'liar',
        host: 'test',
        pid: process.pid,
        runners: ['shell'],
        slots: 1,
        stall_s: 120,
        running: [],
        started: new Date().toISOString(),
        beat: new Date().toISOString(),
        cannot: null,
      });
    await record();
    const liar = new Worker(
      'node-liar',
      async (job) => {
        const { entry } = job.data as { entry: QueueEntry };
        const at = `${server.url}/api/node/attempts/${encodeURIComponent(entry.key)}`;
        const claimed = await fetch(`${at}/claim`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ once: entry.once }),
        });
        const { attempt } = (await claimed.json()) as { attempt: { ticket: string } };
        const report = {
          status: 'done',
          outcome: 'success',
          exitCode: 0,
          signal: null,
          timedOut: false,
          isCancelled: false,
          stopReason: 'complete',
          error: null,
          summary: 'wrote src/claimed.js',
          filesChanged: ['src/claimed.js'],
          makesClaims: true,
          rounds: 0,
          toolCalls: 0,
          failedCalls: 0,
          inputTokens: 0,
          outputTokens: 0,
          costUsd: null,
          durationMs: 5,
          session: null,
          modelServed: null,
          detection: null,
          refusals: [],
          sandboxed: true,
        };
        // the second job's node names a commit whose bundle it never sent
        const commit = entry.key.startsWith(`${second}.`) ? 'a'.repeat(40) : null;
        const sent = await fetch(`${at}/report`, {
          method: 'POST',
          headers: { ...auth, 'gaffer-ticket': attempt.ticket },
          body: JSON.stringify({ v: 1, node: 'liar', report, commit, upload: commit ? 'never-sent-upload' : null }),
        });
        expect(sent.status).toBe(200);
        return { v: 1 };
      },
      { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix: 'gaffer' },
    );
    try {
      const ws = makeWorkspace({ 'src/a.js': 'a\n' }, { git: true });
      const one = await call(server.url, 'POST', '/api/jobs', {
        workspace: ws,
        runner: 'shell',
        verify: 'none',
        tasks: [{ name: 'claim', instruction: 'x', command: 'true' }],
      });
      const first = (await waitFor(server, one.json.id, 'done', 30)).state;
      expect(first.result.files_changed).toEqual([]);
      expect(first.result.claimed_only).toEqual(['src/claimed.js']);
      expect(first.status).not.toBe('done');
      await record();
      const ws2 = makeWorkspace({ 'src/a.js': 'a\n' }, { git: true });
      const two = await call(server.url, 'POST', '/api/jobs', {
        workspace: ws2,
        runner: 'shell',
        verify: 'none',
        tasks: [{ name: 'claim', instruction: 'x', command: 'true' }],
      });
      second = two.json.id;
      const end = (await waitFor(server, second, 'done', 30)).state;
      expect(end.result.workers[0]).toMatchObject({ status: 'error', stop_reason: 'result_not_applied' });
      expect(end.result.workers[0].error).toContain('its bundle never arrived');
      expect(end.result.files_changed).toEqual([]);
    } finally {
      await liar.close();
      records.disconnect();
    }
    // the node routes take a node's own credential and the attempt's ticket, and nothing else does
    const noTicket = await call(server.url, 'GET', '/api/node/attempts/x.y.1/base', undefined, {
      authorization: `Bearer ${credential}`,
    });
    expect(noTicket.status).toBe(401);
    const wrongTicket = await call(server.url, 'GET', '/api/node/attempts/x.y.1/base', undefined, {
      authorization: `Bearer ${credential}`,
      'gaffer-ticket': 'nope',
    });
    expect(wrongTicket.status).toBe(404);
    const userSecret = await call(server.url, 'GET', '/api/node/attempts/x.y.1/base');
    expect(userSecret.status).toBe(401);
    const oldToken = await call(server.url, 'GET', '/api/node/hello', undefined, {
      authorization: `Bearer ${NODE_TOKEN}`,
    });
    expect(oldToken.status).toBe(401);
    const nodeOnApi = await call(server.url, 'GET', '/api/jobs', undefined, { authorization: `Bearer ${credential}` });
    expect(nodeOnApi.status).toBe(401);
  }, 90_000);
  it('a node runs only what the coordinator signed: an entry written straight to Redis, unsigned or signed with another token, runs nothing and reaches no one', async () => {
    const redis = await startRedis();
    // a coordinator the node can serve: a node that cannot takes nothing at all
    await startCoordinator(redis.url);
    const node = await startNode(redis.url, 'n1');
    // a listener where a forged entry would send the node's token to fetch its base
    let asked = 0;
    const bait = http.createServer((_req, res) => {
      asked++;
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => bait.listen(0, '127.0.0.1', r));
    const port = (bait.address() as { port: number }).port;
    const attempt = (key: string): QueueEntry => ({
      v: 3,
      id: key,
      key,
      prefix: 'gaffer',
      runner: 'shell',
      node: 'n1',
      coordinator: `http://127.0.0.1:${port}`,
      expires: Date.now() + 3_600_000,
      once: 'o'.repeat(43),
    });
    // the node's own queue, where only the coordinator should put anything
    const queue = new Queue('node-n1', {
      connection: { url: redis.url, maxRetriesPerRequest: null },
      prefix: 'gaffer',
    });
    try {
      await queue.add('shell', { entry: attempt('bare') }, { jobId: 'bare', attempts: 1 });
      await queue.add('shell', signEntry(attempt('other'), 'another-coordinators-token-0123456789'), {
        jobId: 'other',
        attempts: 1,
      });
      // signed with another node's key (its credential's digest, which a coordinator of its own would hold)
      await queue.add('shell', signEntry(attempt('foreign'), credentialDigest(credentialOf('n2'))), {
        jobId: 'foreign',
        attempts: 1,
      });
      for (const id of ['bare', 'other', 'foreign']) {
        await eventually(
          async () => ((await queue.getJob(id))?.failedReason ?? '').includes('refused queue entry'),
          30_000,
          `the node's refusal of ${id}`,
        );
      }
      expect((await queue.getJob('bare'))?.failedReason).toContain('not a signed gaffer attempt');
      expect((await queue.getJob('other'))?.failedReason).toContain("not the coordinator's");
      expect((await queue.getJob('foreign'))?.failedReason).toContain("not the coordinator's");
      // nothing was claimed from the address the entry names: the node sent its token nowhere
      expect(asked).toBe(0);
      expect(node.child.exitCode).toBeNull();
    } finally {
      await queue.close();
      bait.close();
    }
  }, 90_000);
});
