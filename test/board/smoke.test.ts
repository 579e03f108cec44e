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
});
