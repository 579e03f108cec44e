import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations } from './harness.js';

const row = (page: Page, id: string) => page.locator(`tr[data-job-id="${id}"]`);
const rowStatus = (page: Page, id: string, status: string) =>
  row(page, id).locator('.status', { hasText: new RegExp(`^${status.replace(/_/g, ' ')}$`) });
const shownIds = (page: Page) =>
  page.locator('tr[data-job-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-job-id')));
const waitForGo = (go: string, then: string) => `echo waiting; while [ ! -f '${go}' ]; do sleep 0.1; done; ${then}`;

describe.skipIf(!hasChromium)('the Jobs page (issue 16)', () => {
  it('a job dispatched through the API appears live, newest first; its workers by state and its status change live without a reload', async () => {
    const board = await openBoard();
    const { page } = board;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const older = board.engine.submit({
      workspace: ws,
      title: 'an older job',
      verify: 'none',
      tasks: [{ name: 'w', instruction: 'write w.txt', files: ['w.txt'], runner: 'shell', command: 'echo w > w.txt' }],
    }).job.id;
    await board.engine.settled(older);
    await board.open('#/jobs');
    await rowStatus(page, older, 'done').waitFor();
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));

    const go = join(tempDir(), 'go');
    const res = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      title: 'two workers, one told to wait',
      verify: 'none',
      parallel: true,
      tasks: [
        { name: 'quick', instruction: 'write q.txt', files: ['q.txt'], runner: 'shell', command: 'echo q > q.txt' },
        {
          name: 'slow',
          instruction: 'write s.txt once told to go',
          files: ['s.txt'],
          runner: 'shell',
          command: waitForGo(go, 'echo s > s.txt'),
        },
      ],
    });
    expect(res.status).toBe(202);
    const id = res.json.id as string;

    // it appears without a reload, on top, linking to its page, with its workspace and runner
    await rowStatus(page, id, 'running').waitFor();
    expect(await shownIds(page)).toEqual([id, older]);
    const link = row(page, id).getByRole('link', { name: 'two workers, one told to wait' });
    expect(await link.getAttribute('href')).toBe(`#/jobs/${id}`);
    expect(await row(page, id).locator('.jobs-ws').innerText()).toBe(ws);
    expect(await row(page, id).locator('.jobs-runners').innerText()).toMatch(/shell/);
    // the live count of workers by state follows the `progress` events: quick ends, slow runs
    await row(page, id).locator('.jobs-workers li[data-state="running"]', { hasText: '1 running' }).waitFor();
    await row(page, id).locator('.jobs-workers li[data-state="done"]', { hasText: '1 done' }).waitFor();
    // and the phase it is in
    await row(page, id).locator('.jobs-line', { hasText: 'workers running' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('jobs');

    writeFileSync(go, '');
    await rowStatus(page, id, 'done').waitFor();
    // ended: the verdict line, a duration, and no live worker counts
    await expect.poll(() => row(page, id).locator('.jobs-line').innerText()).toMatch(/2\/2 workers done/);
    expect(await row(page, id).locator('.jobs-workers').count()).toBe(0);
    expect(await row(page, id).locator('.jobs-duration').innerText()).toMatch(/^\d+s$/);
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
  }, 40_000);

  it('filters by status and workspace through labelled selects kept in the hash; a job that ends leaves the live filter live', async () => {
    const board = await openBoard();
    const { page } = board;
    const wsA = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const wsB = makeWorkspace({ 'b.txt': 'b\n' }, { git: true });
    const fine = board.engine.submit({
      workspace: wsA,
      title: 'fine in A',
      verify: 'none',
      tasks: [
        { name: 'ok', instruction: 'write ok.txt', files: ['ok.txt'], runner: 'shell', command: 'echo ok > ok.txt' },
      ],
    }).job.id;
    const broken = board.engine.submit({
      workspace: wsB,
      title: 'broken in B',
      verify: 'none',
      tasks: [{ name: 'bad', instruction: 'fail', files: ['x.txt'], runner: 'shell', command: 'echo no; exit 3' }],
    }).job.id;
    await Promise.all([board.engine.settled(fine), board.engine.settled(broken)]);
    const brokenStatus = board.engine.get(broken).status;
    expect(brokenStatus).not.toBe('done');
    const go = join(tempDir(), 'go');
    const waiting = board.engine.submit({
      workspace: wsB,
      title: 'waiting in B',
      verify: 'none',
      tasks: [
        {
          name: 'wait',
          instruction: 'write w.txt once told to go',
          files: ['w.txt'],
          runner: 'shell',
          command: waitForGo(go, 'echo w > w.txt'),
        },
      ],
    }).job.id;

    await board.open('#/jobs');
    await rowStatus(page, waiting, 'running').waitFor();
    expect(await shownIds(page)).toEqual([waiting, broken, fine]);
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));

    const status = page.getByRole('combobox', { name: 'Status' });
    const workspace = page.getByRole('combobox', { name: 'Workspace' });
    await status.selectOption('done');
    await expect.poll(() => shownIds(page)).toEqual([fine]);
    expect(page.url()).toContain('#/jobs?status=done');
    await status.selectOption(brokenStatus);
    await expect.poll(() => shownIds(page)).toEqual([broken]);
    await status.selectOption('');
    await workspace.selectOption(wsB);
    await expect.poll(() => shownIds(page)).toEqual([waiting, broken]);
    expect(new URL(page.url()).hash).toBe(`#/jobs?workspace=${encodeURIComponent(wsB)}`);
    await status.selectOption('live');
    await expect.poll(() => shownIds(page)).toEqual([waiting]);
    expect(await page.getByRole('status').innerText()).toBe('1 of 3 jobs match the filters');
    expect(await seriousViolations(page)).toEqual([]);

    // the live filter follows the stream: the job ends and leaves it
    writeFileSync(go, '');
    await expect.poll(() => shownIds(page), { timeout: 20_000 }).toEqual([]);
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);

    // a shared link opens filtered; Clear filters shows all
    await board.open(`#/jobs?status=done&workspace=${encodeURIComponent(wsA)}`);
    await expect.poll(() => shownIds(page)).toEqual([fine]);
    expect(await status.inputValue()).toBe('done');
    expect(await workspace.inputValue()).toBe(wsA);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => shownIds(page)).toEqual([waiting, broken, fine]);
  }, 40_000);

  it('is readable on a phone (390 px): one card per job, no sideways scroll', async () => {
    const board = await openBoard({ width: 390, height: 844 });
    const { page } = board;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const go = join(tempDir(), 'go');
    const done = board.engine.submit({
      workspace: ws,
      title: 'write a greeting file',
      verify: 'none',
      tasks: [
        {
          name: 'hello',
          instruction: 'write hello.txt',
          files: ['hello.txt'],
          runner: 'shell',
          command: 'echo hello > hello.txt',
        },
      ],
    }).job.id;
    await board.engine.settled(done);
    const live = board.engine.submit({
      workspace: ws,
      title: 'a longer job still running',
      verify: 'none',
      tasks: [
        {
          name: 'wait',
          instruction: 'wait for go',
          files: ['w.txt'],
          runner: 'shell',
          command: waitForGo(go, 'echo w > w.txt'),
        },
      ],
    }).job.id;
    await board.open('#/jobs');
    await rowStatus(page, live, 'running').waitFor();
    await row(page, live).locator('.jobs-workers li', { hasText: '1 running' }).waitFor();
    await rowStatus(page, done, 'done').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('jobs-phone');
    writeFileSync(go, '');
    await board.engine.settled(live);
  }, 40_000);
});
