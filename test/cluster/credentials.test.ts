import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { NODE_CREDENTIALS_FILE } from '../../src/config/node-credentials.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, gaffer } from '../reliability/helpers.js';
import {
  credentialOf,
  eventsOf,
  HAS_REDIS,
  NODE_TOKEN,
  startCoordinator,
  startNode,
  startRedis,
  waitFor,
} from './harness.js';

const env = { ...process.env, GAFFER_URL: '', GAFFER_NODE_TOKEN: '' };

/** Each node has its own credential: issued on the coordinator, kept there as a digest, revoked there. */
describe.skipIf(!HAS_REDIS)('node credentials (needs redis-server)', () => {
  it('gaffer nodes issue prints a node’s credential once and keeps its digest only; a node started with it in --token-file works; revoked, it is refused at once', async () => {
    const redis = await startRedis();
    const server = await startCoordinator(redis.url);
    // the harness's credential for w1 first, so the one issued below is w1's live one (issuing again replaces)
    credentialOf('w1');
    const issued = await gaffer(server.dataDir, ['nodes', 'issue', 'w1'], env);
    expect(issued.code, issued.stderr).toBe(0);
    const credential = issued.stdout.trim();
    expect(credential).toMatch(/^w1\.[A-Za-z0-9_-]{32,}$/);
    expect(issued.stderr).toContain('shown once');
    const file = join(server.dataDir, NODE_CREDENTIALS_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).not.toContain(credential.split('.')[1]);
    const listed = await gaffer(server.dataDir, ['nodes', 'credentials'], env);
    expect(listed.stdout).toMatch(/^w1 {2}issued \S+ {2}live$/m);
    expect(listed.stdout).not.toContain(credential.split('.')[1]);

    // the node takes its name from its credential, read from --token-file
    const tokenFile = join(tempDir('gaffer-token-'), 'w1.token');
    writeFileSync(tokenFile, `${credential}\n`, { mode: 0o600 });
    await startNode(redis.url, 'w1', { args: ['--token-file', tokenFile], env: { GAFFER_NODE_TOKEN: '' } });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      runner: 'shell',
      verify: 'grep -qx b a.txt',
      tasks: [{ name: 'edit', instruction: 'edit', command: 'echo b > a.txt' }],
    });
    const answer = (await waitFor(server, res.json.id, 'done', 60)).state;
    expect(answer.status, answer.verdict).toBe('done');
    const taken = (await eventsOf(server, res.json.id)).filter((e) => e.event === 'node' && e.node_event === 'taken');
    expect(taken.map((e) => e.node)).toEqual(['w1']);

    const hello = (c: string) =>
      call(server.url, 'GET', '/api/node/hello', undefined, { authorization: `Bearer ${c}` });
    expect((await hello(credential)).status).toBe(200);
    const revoked = await gaffer(server.dataDir, ['nodes', 'revoke', 'w1'], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    // the running coordinator reads the file again: refused from the next request on, saying what is wanted
    const refused = await hello(credential);
    expect(refused.status).toBe(401);
    expect(refused.json.error.message).toContain('gaffer nodes issue NAME');
    expect(refused.text).not.toContain(server.dataDir);
    expect((await gaffer(server.dataDir, ['nodes', 'credentials'], env)).stdout).toMatch(/^w1 .* revoked \S+$/m);
    const again = await gaffer(server.dataDir, ['nodes', 'revoke', 'w1'], env);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('node w1 has no live credential');
  }, 90_000);

  it('the shared node token of old is refused with the fix: set for gaffer serve, and given to gaffer node', async () => {
    const dataDir = join(tempDir(), 'data');
    const serve = await gaffer(dataDir, ['serve', '--port', '0', '--queue', 'redis://127.0.0.1:1'], {
      ...env,
      GAFFER_NODE_TOKEN: NODE_TOKEN,
    });
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('GAFFER_NODE_TOKEN is set for the coordinator: the shared node token is gone');
    expect(serve.stderr).toContain('gaffer nodes issue NAME');
    expect(serve.stderr).not.toContain(NODE_TOKEN);
    const node = await gaffer(dataDir, ['node', '--queue', 'redis://127.0.0.1:1'], {
      ...env,
      GAFFER_NODE_TOKEN: NODE_TOKEN,
    });
    expect(node.code).toBe(2);
    expect(node.stderr).toContain('GAFFER_NODE_TOKEN holds no node credential (NAME.SECRET)');
    expect(node.stderr).toContain('gaffer nodes issue NAME');
    expect(node.stderr).not.toContain(NODE_TOKEN);
    const named = await gaffer(dataDir, ['node', '--queue', 'redis://127.0.0.1:1', '--name', 'other'], {
      ...env,
      GAFFER_NODE_TOKEN: credentialOf('w2'),
    });
    expect(named.code).toBe(2);
    expect(named.stderr).toContain('--name other is not the node its credential names (w2)');
  }, 60_000);

  it('the runner queues of the shared-token era (runner-<key>) are removed with their entries when a coordinator starts, and it says so', async () => {
    const redis = await startRedis();
    const old = new Queue('runner-shell', {
      connection: { url: redis.url, maxRetriesPerRequest: null },
      prefix: 'gaffer',
    });
    await old.add('shell', { entry: { v: 2, key: 'j.w.1' }, sig: '0'.repeat(64) }, { jobId: 'j.w.1' });
    await old.close();
    const client = new Redis(redis.url);
    try {
      expect(await client.keys('gaffer:runner-shell:*')).not.toEqual([]);
      const server = await startCoordinator(redis.url);
      expect(await client.keys('gaffer:runner-shell:*')).toEqual([]);
      expect(server.stderr()).toContain('removed the queue runner-shell of the shared node token');
    } finally {
      client.disconnect();
    }
  }, 60_000);
});
