import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CALC_FILES, makeWorkspace, tempDir } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations, type Board } from './harness.js';

// the calc example's `add adds` fails at the checkpoint (pre-existing); this breaks `multiply multiplies` (new)
const BREAK_MULTIPLY = "sed -i 's/return a \\* b;/return a * b + 1;/' src/math.js";
const IS_FIXER = 'grep -q "verification of this work failed" "$GAFFER_INSTRUCTION_FILE"';

/** A job whose verification fails with one new and one pre-existing failure, after a fix round that changed nothing. */
async function failingVerificationJob(board: Board): Promise<string> {
  const ws = makeWorkspace(CALC_FILES, { git: true });
  const { job } = board.engine.submit({
    workspace: ws,
    title: 'break multiply',
    verify: 'node --test test/',
    fix_rounds: 1,
    tasks: [
      {
        name: 'mult',
        instruction: 'In src/math.js make multiply() add one to its product.',
        files: ['src/math.js'],
        runner: 'shell',
        command: `if ${IS_FIXER}; then echo cannot; else ${BREAK_MULTIPLY}; echo broke-it; fi`,
      },
    ],
  });
  await board.engine.settled(job.id);
  return job.id;
}

const headerStatus = (page: Page, status: string) =>
  page.locator('.job-pills > .status', { hasText: new RegExp(`^${status}$`) });
const card = (page: Page, worker: string) => page.locator(`li[data-worker="${worker}"]`);
const cardStatus = (page: Page, worker: string, status: string) =>
  card(page, worker).locator('h3 .status', { hasText: new RegExp(`^${status}$`) });

describe.skipIf(!hasChromium)('the Job page (issue 16)', () => {
  it("a running shell job's worker card and log tail update live, without a reload, until it is done", async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const go = join(tempDir(), 'go');
    const { job } = board.engine.submit({
      workspace: ws,
      title: 'wait, then write',
      verify: 'none',
      tasks: [
        {
          name: 'slow',
          instruction: 'append b to a.txt once told to go',
          files: ['a.txt'],
          runner: 'shell',
          command: `echo waiting-for-go; while [ ! -f '${go}' ]; do sleep 0.1; done; echo b >> a.txt; echo finished-now`,
        },
      ],
    });
    await board.open(`#/jobs/${job.id}`);
    const { page } = board;
    await page.getByRole('heading', { level: 1, name: 'wait, then write' }).waitFor();
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
    await cardStatus(page, 'slow', 'running').waitFor();
    await card(page, 'slow').locator('.job-progress', { hasText: 'Now:' }).waitFor();
    await card(page, 'slow').getByRole('button', { name: 'Show log' }).click();
    await card(page, 'slow').locator('pre', { hasText: 'waiting-for-go' }).waitFor();
    expect(await page.getByRole('button', { name: 'Cancel job' }).isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);

    writeFileSync(go, '');
    await cardStatus(page, 'slow', 'done').waitFor();
    await headerStatus(page, 'done').waitFor();
    // its last words, the shown log grown by its output events, and the timeline up to the end
    await card(page, 'slow').locator('blockquote', { hasText: 'finished-now' }).waitFor();
    await card(page, 'slow').locator('pre', { hasText: 'finished-now' }).waitFor();
    await page.locator('.job-timeline li', { hasText: 'settled' }).waitFor();
    expect(await card(page, 'slow').innerText()).toMatch(/Sandboxed\s*no/i);
    expect(await page.getByRole('button', { name: 'Cancel job' }).count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job');
  }, 40_000);

  it('a failed verification shows new, pre-existing and flaky failures apart, and every round', async () => {
    const board = await openBoard();
    const id = await failingVerificationJob(board);
    await board.open(`#/jobs/${id}`);
    const { page } = board;
    await headerStatus(page, 'partial').waitFor();
    const fresh = page.getByRole('group', { name: /^New failures/ });
    const before = page.getByRole('group', { name: /^Pre-existing failures/ });
    const flaky = page.getByRole('group', { name: /^Flaky/ });
    expect(await fresh.locator('li').allInnerTexts()).toEqual(['multiply multiplies']);
    expect(await before.locator('li').allInnerTexts()).toEqual(['add adds']);
    expect(await flaky.locator('li').count()).toBe(0);
    expect(await fresh.getByRole('heading').innerText()).toBe('New failures (1)');
    // the first run and the one after fix round 1, each with its failures
    const rounds = page.locator('table.job-rounds tbody tr');
    expect(await rounds.count()).toBe(2);
    expect(await rounds.nth(1).innerText()).toContain('after fix round 1');
    expect(await page.locator('#job-verification-h + p').innerText()).toContain('2 failed, 0 passed');
    // the proof's verdict in the header, the fixer's card beside the worker's, the output tail
    expect(await page.locator('.job-pills').innerText()).toMatch(/proof\s*contradicted\s*confidence 100%/);
    await card(page, 'fixer-1').locator('blockquote', { hasText: 'cannot' }).waitFor();
    await page.locator('pre.job-output', { hasText: 'multiply multiplies' }).waitFor();
    // its one task ended done (the verification failed, not the worker): nothing to re-dispatch, nothing to cancel
    expect(await page.getByRole('button', { name: /Cancel job|Re-dispatch/ }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job-verification-failed');
  }, 40_000);

  it('reads on a phone (390 px): one column, nothing wider than the screen', async () => {
    const board = await openBoard({ width: 390, height: 844 });
    const id = await failingVerificationJob(board);
    await board.open(`#/jobs/${id}`);
    const { page } = board;
    await headerStatus(page, 'partial').waitFor();
    await page.getByRole('group', { name: /^New failures/ }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job-phone');
  }, 40_000);

  it('Cancel stops a live job: asked twice, then its status becomes cancelled', async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const { job } = board.engine.submit({
      workspace: ws,
      title: 'sleeps',
      verify: 'none',
      tasks: [{ name: 'sleeper', instruction: 'sleep a while', runner: 'shell', command: 'sleep 60' }],
    });
    await board.open(`#/jobs/${job.id}`);
    const { page } = board;
    await cardStatus(page, 'sleeper', 'running').waitFor();
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.getByRole('button', { name: 'Keep it running' }).click();
    expect(board.engine.get(job.id).status).toBe('running');
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.getByRole('button', { name: 'Yes, cancel it' }).click();
    await headerStatus(page, 'cancelled').waitFor();
    await board.engine.settled(job.id);
    expect(board.engine.get(job.id).status).toBe('cancelled');
    expect(await page.getByRole('button', { name: /Cancel job|Yes, cancel it/ }).count()).toBe(0);
  }, 40_000);

  it('Re-dispatch of a failed job creates a new job of the failed task and goes to it', async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const { job } = board.engine.submit({
      workspace: ws,
      title: 'half works',
      verify: 'none',
      tasks: [
        {
          name: 'good',
          instruction: 'append b to a.txt',
          files: ['a.txt'],
          runner: 'shell',
          command: 'echo b >> a.txt',
        },
        { name: 'broken', instruction: 'fail on purpose', runner: 'shell', command: 'echo giving-up; exit 3' },
      ],
    });
    await board.engine.settled(job.id);
    await board.open(`#/jobs/${job.id}`);
    const { page } = board;
    await headerStatus(page, 'partial').waitFor();
    await cardStatus(page, 'broken', 'error').waitFor();
    expect(await page.locator('#job-redispatch-what').innerText()).toBe('a new job for task broken');
    await page.getByRole('button', { name: 'Re-dispatch the failed part' }).click();
    await expect.poll(() => new URL(page.url()).hash).toMatch(/^#\/jobs\/[0-9a-f]{12}$/);
    await expect.poll(() => new URL(page.url()).hash).not.toBe(`#/jobs/${job.id}`);
    const next = decodeURIComponent(new URL(page.url()).hash.replace('#/jobs/', ''));
    await page.getByRole('heading', { level: 1, name: `half works (re-dispatch of ${job.id})` }).waitFor();
    expect(board.engine.get(next).tasks.map((t) => t.name)).toEqual(['broken']);
    await card(page, 'broken').waitFor();
    expect(await card(page, 'good').count()).toBe(0);
    await board.engine.settled(next);
  }, 40_000);
});
