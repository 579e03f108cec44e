import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { eventually } from '../reliability/helpers.js';
import { coordinatorDataDir, HAS_REDIS, startNode, startRedis } from '../cluster/harness.js';
import { hasChromium, openBoard, seriousViolations } from './harness.js';

describe.skipIf(!hasChromium)('the board: Nodes', () => {
  it('on one machine, says the server runs every attempt itself', async () => {
    const board = await openBoard();
    await board.open('#/nodes');
    await board.page.getByRole('heading', { name: 'Nodes', level: 1 }).waitFor();
    await board.page.getByText('This server runs every attempt itself: it has no nodes.').waitFor();
  });

  it.skipIf(!HAS_REDIS)(
    'a coordinator’s live node with its runners, slots, running attempt and heartbeat, the runner queue, and the node on the job page',
    async () => {
      const redis = await startRedis();
      const board = await openBoard({
        engine: { dataDir: coordinatorDataDir(join(tempDir('gaffer-data-'), 'data')), cluster: { queue: redis.url } },
      });
      board.engine.cluster?.advertise(board.url);
      await startNode(redis.url, 'n1', { slots: 2 });
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const res = await board.server.call('POST', '/api/jobs', {
        workspace: ws,
        runner: 'shell',
        verify: 'none',
        tasks: [{ name: 'work', instruction: 'work', command: 'sleep 30' }],
      });
      const id = res.json.id as string;
      await eventually(
        async () => (await board.server.call('GET', `/api/jobs/${id}`)).json.result?.workers?.[0]?.node === 'n1',
        20_000,
        'the attempt on n1',
      );
      const { page } = board;
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Nodes', exact: true }).click();
      const node = page.locator('tr[data-node="n1"]');
      await expect.poll(() => node.innerText(), { timeout: 10_000 }).toMatch(/n1\s+shell\s+2\s+1/);
      expect(await node.innerText()).toContain(`${id}.`);
      expect(await page.locator('tr[data-queue="shell"]').innerText()).toMatch(/shell\s+0\s+—\s+1\s+n1/);
      await page.getByText('healthy').waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await board.open(`#/jobs/${id}`);
      await page.getByText('Node', { exact: true }).waitFor();
      await expect.poll(() => page.locator('body').innerText(), { timeout: 10_000 }).toMatch(/\bNODE\s+n1\b/i);
      await board.server.call('POST', `/api/jobs/${id}/cancel`);
    },
    60_000,
  );
});
