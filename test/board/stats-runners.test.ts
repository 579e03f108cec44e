import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations, type Board } from './harness.js';

const POLL = { timeout: 20_000, interval: 100 };

/** Runs a one-task shell job to its end through the API; its outcome is logged for the acceptance rate. */
async function runShellJob(board: Board, ws: string, name: string, command: string): Promise<string> {
  const res = await board.server.call('POST', '/api/jobs', {
    workspace: ws,
    verify: 'none',
    tasks: [{ name, runner: 'shell', instruction: command }],
  });
  expect(res.status).toBe(202);
  await board.engine.settled(res.json.id);
  return res.json.id as string;
}

describe.skipIf(!hasChromium)('the board: Stats and Runners (spec 08)', () => {
  it('Stats shows the acceptance per (type, model) as a table and a chart, recent outcomes and spend against a budget, and follows new outcomes live', async () => {
    const board = await openBoard({
      engine: {
        operations: {
          budgets: [{ provider: 'shell', entry: null, window: 'week', unit: 'seconds', limit: 600, pace_margin: 0.2 }],
        },
      },
    });
    const { page } = board;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    await runShellJob(board, ws, 'good', 'echo ok > ok.txt');
    await runShellJob(board, ws, 'bad', 'echo no; exit 3');
    const stats = (await board.server.call('GET', '/api/stats')).json;
    const row = stats.acceptance['implement/(shell default)'];
    expect(row).toMatchObject({ accepted: 1, total: 2 });

    await board.open('#/stats');
    await page.getByRole('heading', { name: 'Stats', level: 1 }).waitFor();
    const table = page.getByRole('table', { name: /Acceptance rate per \(type, model\)/ });
    const tableRow = table.getByRole('row', { name: /implement/ });
    await expect.poll(() => tableRow.textContent(), POLL).toMatch(/implement.*shell default.*50\.0%\s*1\s*2\s*shell/);
    // the chart: a canvas chart.js drew on, named for a screen reader, the table its text
    const chart = page.getByRole('img', { name: /Bar chart: acceptance rate per \(type, model\), 1 row/ });
    await chart.waitFor();
    await expect.poll(() => chart.evaluate((c) => (c as HTMLCanvasElement).width), POLL).toBeGreaterThan(0);
    await expect.poll(() => page.locator('.stats-outcomes li').count(), POLL).toBe(2);
    // spend per provider against its budget and window
    const budget = page.getByRole('table', { name: 'Budgets of shell' });
    expect(await budget.textContent()).toMatch(
      /shell week budget \(600 seconds\).*ISO week \(UTC\).*\/ 600 seconds.*ok/s,
    );
    expect(await page.getByRole('meter').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);

    // a job that ends while the page is open is counted without a reload (the all-jobs stream)
    await runShellJob(board, ws, 'good-2', 'echo ok > ok2.txt');
    await expect.poll(() => tableRow.textContent(), POLL).toMatch(/66\.7%\s*2\s*3/);
    await expect.poll(() => page.locator('.stats-outcomes li').count(), POLL).toBe(3);
    await board.shot('stats');

    await page.setViewportSize({ width: 390, height: 844 });
    // the page fits the screen (chart.js redraws to the narrower width); a table wider than it scrolls in its own region
    await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth), POLL).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('stats-phone');
  });

  it('Runners lists every runner with its install state, sandbox state and install hint', async () => {
    const board = await openBoard();
    const { page } = board;
    const rows = (await board.server.call('GET', '/api/runners')).json.runners as {
      key: string;
      sandbox: boolean;
      installed: boolean;
      install_hint: string | null;
    }[];
    await board.open('#/runners');
    await page.getByRole('heading', { name: 'Runners', level: 1 }).waitFor();
    for (const key of ['shell', 'builtin']) {
      const api = rows.find((r) => r.key === key);
      expect(api).toBeDefined();
      const row = page.locator(`tr[data-runner="${key}"]`);
      await row.waitFor();
      const text = (await row.textContent()) ?? '';
      expect(text).toContain('installed');
      expect(text).toContain(api?.sandbox ? 'sandboxed' : 'not sandboxed');
      if (!api?.sandbox) expect(text).toContain('not sandboxed');
    }
    // an agent CLI not installed here: said so, with the command that installs it
    const missing = rows.find((r) => !r.installed && r.install_hint);
    if (missing) {
      const text = (await page.locator(`tr[data-runner="${missing.key}"]`).textContent()) ?? '';
      expect(text).toContain('not installed');
      expect(text).toContain(missing.install_hint);
    }
    expect(await page.locator('tbody tr').count()).toBe(rows.length);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('runners');

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('runners-phone');
  });
});
