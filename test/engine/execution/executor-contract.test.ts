import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { BullmqExecutor } from '../../../src/engine/execution/bullmq.js';
import type { Executor } from '../../../src/engine/execution/executor.js';
import { LocalExecutor } from '../../../src/engine/execution/local.js';
import { authenticateNode, mountNodeRoutes, NODE_ROUTES } from '../../../src/interfaces/http/node-routes.js';
import type { Runner } from '../../../src/runners/contract.js';
import { coordinatorDataDir, HAS_REDIS, startNode, startRedis } from '../../cluster/harness.js';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import { CAP, executorContract } from './executor-contract.js';

// registered after the cluster harness's own afterEach: run before it, so each executor lets go before its node and Redis are stopped
const closes: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closes.splice(0).reverse()) await close();
});

executorContract('the local executor', async () => new LocalExecutor(CAP));

/**
 * The BullMQ executor as `gaffer serve --queue` runs it: opened on a redis-server of the test's own,
 * the node routes of its exchange served over HTTP, and one `gaffer node` (the built CLI) taking shell attempts.
 */
async function clusterExecutor(): Promise<Executor> {
  const redis = await startRedis();
  const executor = new BullmqExecutor(
    { queue: redis.url, cap: CAP },
    coordinatorDataDir(tempDir('gaffer-coordinator-')),
  );
  await executor.open();
  closes.push(() => executor.close());
  const app = new Hono<{ Variables: Record<string, unknown> }>();
  app.use(`${NODE_ROUTES}*`, async (c, next) => {
    authenticateNode(c, executor.exchange);
    await next();
  });
  mountNodeRoutes(app, () => executor.exchange);
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  closes.push(() => new Promise((r) => server.close(() => r())));
  executor.advertise(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await startNode(redis.url, 'contract', { slots: CAP });
  return executor;
}

// a CI run must run the Redis-backed contract: a machine without redis-server fails there instead of skipping
if (HAS_REDIS || process.env.CI === 'true')
  executorContract('the BullMQ executor (a redis-server and a gaffer node of its own)', clusterExecutor);
else
  describe.skip('the BullMQ executor keeps the Executor contract (skipped: redis-server is not installed — apt-get install redis-server)', () =>
    it('needs redis-server', () => undefined));

describe('the local executor, its own rules', () => {
  it("a runner that throws is the attempt's panic report, never the executor's throw (spec 01)", async () => {
    const broken: Runner = {
      key: 'broken',
      canResume: false,
      run: () => Promise.reject(new Error('a bug in the runner')),
    };
    const ws = makeWorkspace({ 'README.md': 'hi\n' });
    const report = await new LocalExecutor(1).run(broken, {
      workspace: ws,
      signal: new AbortController().signal,
    } as Parameters<Runner['run']>[0]);
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'panic',
      stopReason: 'runner_error',
      error: 'runner failed: a bug in the runner',
    });
  });
});
