import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations } from './harness.js';

describe.skipIf(!hasChromium)('the "Needs your yes (N)" band (issue 16)', () => {
  it("shows every open ask decision-grade on every page; a yes or no per ask with a note; the server's refusal shown; the job starts once answered", async () => {
    const board = await openBoard();
    const { page } = board;
    await board.open('#/jobs');
    await page.getByRole('heading', { level: 1, name: 'Jobs' }).waitFor();
    const band = page.getByRole('region', { name: /^Needs your yes/ });
    expect(await band.count()).toBe(0);
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));

    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const res = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      title: 'two tasks that need a yes',
      approval: 'required',
      verify: 'none',
      tasks: [
        {
          name: 'alpha',
          instruction: 'write alpha.txt',
          files: ['alpha.txt'],
          runner: 'shell',
          command: 'echo a > alpha.txt',
        },
        { name: 'beta', instruction: 'write anything', runner: 'shell', command: 'echo b > beta.txt' },
      ],
    });
    const id = res.json.id as string;

    // it appears without a reload, counting the asks
    await band.getByRole('heading', { name: 'Needs your yes (2)' }).waitFor();
    const [alpha, beta] = (await board.server.call('GET', '/api/asks')).json.asks.map(
      (a: { ask: Record<string, unknown> }) => a.ask,
    );
    const alphaItem = band.getByRole('group', { name: /^alpha:/ });
    const betaItem = band.getByRole('group', { name: /^beta:/ });
    // every field the ask carries
    for (const [item, ask] of [
      [alphaItem, alpha],
      [betaItem, beta],
    ] as const) {
      const text = await item.innerText();
      for (const field of ['issue', 'why', 'route', 'recommendation'] as const)
        expect(text).toContain(String(ask[field]));
      for (const p of ask.pros as string[]) expect(text).toContain(p);
      for (const c of ask.cons as string[]) expect(text).toContain(c);
      expect(text).toContain('judge abstained');
      expect(text).toMatch(/Blocking\s*yes/);
    }
    expect((beta.cons as string[]).length).toBeGreaterThan(0);
    expect(await band.getByRole('link', { name: 'two tasks that need a yes' }).getAttribute('href')).toBe(
      `#/jobs/${id}`,
    );
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('asks');

    // on every page
    for (const [link, url] of [
      ['New job', '#/new'],
      ['Stats', '#/stats'],
      ['Runners', '#/runners'],
    ] as const) {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: link }).click();
      await expect.poll(() => page.url()).toContain(url);
      await band.getByRole('heading', { name: 'Needs your yes (2)' }).waitFor();
    }
    await band.getByRole('link', { name: 'two tasks that need a yes' }).click();
    await expect.poll(() => page.url()).toContain(`#/jobs/${id}`);
    await band.getByRole('heading', { name: 'Needs your yes (2)' }).waitFor();

    // a refusal by the server is shown in its words (a note over 2,000 characters)
    const long = 'n'.repeat(2_001);
    const refused = await board.server.call('POST', `/api/jobs/${id}/approve`, {
      approve: { alpha: true },
      note: long,
    });
    expect(refused.status).toBe(400);
    await alphaItem.getByLabel('Note (optional)').fill(long);
    await alphaItem.getByRole('button', { name: 'Yes, run alpha' }).click();
    expect(await alphaItem.getByRole('alert').innerText()).toBe(refused.json.error.message);
    expect(board.engine.get(id).status).toBe('awaiting_approval');

    // yes to one: the other is still asked
    await alphaItem.getByLabel('Note (optional)').fill('alpha is scoped');
    await alphaItem.getByRole('button', { name: 'Yes, run alpha' }).click();
    await band.getByRole('heading', { name: 'Needs your yes (1)' }).waitFor();
    expect(await alphaItem.count()).toBe(0);
    expect(board.engine.get(id).status).toBe('awaiting_approval');
    // no to the other: the band goes, and the job starts
    await betaItem.getByRole('button', { name: "No, don't run beta" }).click();
    await band.waitFor({ state: 'detached' });
    await board.engine.settled(id);
    const answered = board.engine.get(id);
    expect(answered.asks?.map((a) => [a.task, a.answer, a.note ?? null])).toEqual([
      ['alpha', true, 'alpha is scoped'],
      ['beta', false, null],
    ]);
    expect(answered.status).not.toBe('awaiting_approval');
    expect(board.engine.events(id).events.some((e) => e.name === 'alpha' && e.event === 'started')).toBe(true);
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
  }, 40_000);

  it('"Yes to all" answers every ask of a job at once, and the job runs to its end on the Jobs page', async () => {
    const board = await openBoard({ width: 390, height: 844 });
    const { page } = board;
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = board.engine.submit({
      workspace: ws,
      title: 'a fan-out asked together',
      approval: 'required',
      verify: 'none',
      tasks: [
        { name: 'one', instruction: 'write one.txt', files: ['one.txt'], runner: 'shell', command: 'echo 1 > one.txt' },
        { name: 'two', instruction: 'write two.txt', files: ['two.txt'], runner: 'shell', command: 'echo 2 > two.txt' },
      ],
    });
    await board.open('#/jobs');
    const band = page.getByRole('region', { name: /^Needs your yes/ });
    await band.getByRole('heading', { name: 'Needs your yes (2)' }).waitFor();
    await page.locator(`tr[data-job-id="${job.id}"] .status`, { hasText: 'awaiting approval' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('asks-phone');
    await band.getByRole('button', { name: 'Yes to all 2' }).click();
    await band.waitFor({ state: 'detached' });
    await page.locator(`tr[data-job-id="${job.id}"] .status`, { hasText: /^(done|partial)$/ }).waitFor();
    expect(board.engine.get(job.id).asks?.map((a) => a.answer)).toEqual([true, true]);
  }, 40_000);
});
