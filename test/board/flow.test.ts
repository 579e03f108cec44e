import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { hasChromium, openBoard } from './harness.js';

const POLL = { timeout: 30_000, interval: 100 };

describe.skipIf(!hasChromium)('the board end to end (issue 16)', () => {
  it('a job dispatched from New job in one tab appears live on Jobs open in another, and ends done there', async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    // the watcher: Jobs, opened before the job exists, never reloaded
    await board.open('#/jobs');
    const jobs = board.page;
    await jobs.evaluate(() => ((globalThis as { unreloaded?: boolean }).unreloaded = true));
    // the dispatcher: another tab of the same session
    const form = await jobs.context().newPage();
    await form.goto(`${board.url}/#/new`);
    await form.getByLabel('Workspace').fill(ws);
    await form.getByLabel('Runner').selectOption('shell');
    await form.getByLabel('Instruction').fill('echo from the form > form.txt');
    await form.getByLabel('this command').check();
    await form.getByLabel('Verify command').fill('test -f form.txt');
    await form.getByRole('button', { name: 'Dispatch' }).click();
    await expect.poll(() => form.url(), POLL).toMatch(/#\/jobs\/[0-9a-f]+$/);
    const id = decodeURIComponent(form.url().split('#/jobs/')[1] ?? '');

    const row = jobs.locator(`[data-job-id="${id}"]`);
    await expect.poll(() => row.count(), POLL).toBe(1);
    await expect.poll(() => row.getAttribute('data-status'), POLL).toBe('done');
    expect(await row.textContent()).toContain('verification passed');
    expect(await jobs.evaluate(() => (globalThis as { unreloaded?: boolean }).unreloaded)).toBe(true);
    await board.shot('flow-jobs-after-dispatch');
  });
});
