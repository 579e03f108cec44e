import { describe, expect, it } from 'vitest';
import { hasChromium, openBoard, seriousViolations } from './harness.js';

describe.skipIf(!hasChromium)('the board (issue 16): served, logged in, navigable', () => {
  it('serves the built board at / with a strict CSP, and every page is reachable from the nav', async () => {
    const board = await openBoard();
    const res = await board.server.call('GET', '/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    await board.page.getByRole('link', { name: 'Stats' }).click();
    await expect.poll(() => board.page.url()).toContain('#/stats');
    expect(await seriousViolations(board.page)).toEqual([]);
  });

  it('no page cites a spec or issue number: the board says the thing itself', async () => {
    const board = await openBoard();
    const { page } = board;
    const nav = page.getByRole('navigation', { name: 'Pages' });
    for (const [name, hash] of [
      ['Jobs', '#/jobs'],
      ['New job', '#/new'],
      ['Stats', '#/stats'],
      ['Runners', '#/runners'],
      ['Roster', '#/roster'],
      ['Nodes', '#/nodes'],
    ] as const) {
      await nav.getByRole('link', { name, exact: true }).click();
      await expect.poll(() => new URL(page.url()).hash).toBe(hash);
      await page.getByRole('heading', { level: 1 }).waitFor();
      expect([name, await page.locator('body').innerText()]).not.toEqual([
        name,
        expect.stringMatching(/\b(spec|issue) \d+/i),
      ]);
    }
  });
});
