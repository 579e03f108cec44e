import type { Locator } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations } from './harness.js';

/** The text a control is described by (its hint and what the server said about it), as a screen reader reads it. */
function description(control: Locator): Promise<string> {
  return control.evaluate((el) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' '),
  );
}

const POLL = { timeout: 20_000, interval: 100 };

describe.skipIf(!hasChromium)('the board: New job (spec 08)', () => {
  it('lints the request as it is typed, keeps every value when the server refuses a field, and opens the dispatched job', async () => {
    const board = await openBoard();
    const { page } = board;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    await board.open('#/new');
    await page.getByRole('heading', { name: 'New job', level: 1 }).waitFor();
    // the runner list comes from GET /api/runners: agent CLIs not installed here are shown, not offered
    const runner = page.getByLabel('Runner');
    await expect
      .poll(() => runner.locator('option').allTextContents(), POLL)
      .toContain('shell — shell command (sh -c in the workspace)');
    expect(await runner.locator('option', { hasText: 'codex' }).getAttribute('disabled')).not.toBeNull();

    const missing = `${ws}-missing`;
    await page.getByLabel('Workspace').fill(missing);
    await runner.selectOption('shell');
    const instruction = page.getByLabel('Instruction');
    await instruction.fill('echo hi');

    // spec lint, by the field it is about: a two-word instruction, no scope named, nothing that proves it
    await expect.poll(() => description(instruction), POLL).toContain('Lint: the instruction has 2 word(s)');
    await expect
      .poll(() => description(page.getByLabel('Files')), POLL)
      .toContain('no file, folder or symbol is named');
    await expect
      .poll(() => page.locator('.form-lint').textContent(), POLL)
      .toMatch(/3 things to add.*too_short.*no_scope.*no_verify/s);
    await board.shot('new-job-lint');

    // typing on clears what no longer applies: the instruction's length finding goes, the verify one stays while verify is auto
    await instruction.fill('echo hello > out.txt; echo done with out.txt');
    await expect.poll(() => description(instruction), POLL).not.toContain('word(s)');
    await expect.poll(() => page.locator('.form-lint').textContent(), POLL).toContain('no_verify');
    await page.getByLabel('this command').check();
    await page.getByLabel('Verify command').fill('test -f out.txt');
    await expect.poll(() => page.locator('.form-lint').textContent(), POLL).toContain('Nothing to add');
    expect(await seriousViolations(page)).toEqual([]);

    // a field the server refuses: its message, by that field; nothing started; every value kept
    await page.getByRole('button', { name: 'Dispatch' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent(), POLL).toContain('Not dispatched');
    const refusal = (await alert.textContent()) ?? '';
    expect(refusal).toContain('invalid_request, field workspace');
    expect(refusal).toContain(
      `workspace: does not exist — create it or give an existing directory, got ${JSON.stringify(missing)}`,
    );
    const workspace = page.getByLabel('Workspace');
    expect(await workspace.getAttribute('aria-invalid')).toBe('true');
    expect(await description(workspace)).toContain('Refused: workspace:');
    expect(await workspace.inputValue()).toBe(missing);
    expect(await instruction.inputValue()).toBe('echo hello > out.txt; echo done with out.txt');
    expect(await runner.inputValue()).toBe('shell');
    expect(await page.getByLabel('Verify command').inputValue()).toBe('test -f out.txt');
    expect((await board.server.call('GET', '/api/jobs')).json.jobs).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
    // the refusal takes the person to its field
    await page.getByRole('button', { name: 'Go to the field' }).click();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('job-workspace');

    // the refusal was of the value as it was: once the field changes it goes
    await workspace.fill(ws);
    await expect.poll(() => alert.count(), POLL).toBe(0);
    expect(await workspace.getAttribute('aria-invalid')).toBeNull();
    await page.getByLabel('Name').fill('make-out');
    await board.shot('new-job');
    await page.getByRole('button', { name: 'Dispatch' }).click();
    await expect.poll(() => page.url(), POLL).toMatch(/#\/jobs\/[0-9a-f]+$/);
    const id = decodeURIComponent(page.url().split('#/jobs/')[1] ?? '');
    const job = await board.server.call('GET', `/api/jobs/${id}`);
    expect(job.status).toBe(200);
    expect(job.json).toMatchObject({
      id,
      workspace: ws,
      verify: 'test -f out.txt',
      tasks: [expect.objectContaining({ name: 'make-out', runner: 'shell' })],
    });
    await board.engine.settled(id);
    expect((await board.server.call('GET', `/api/jobs/${id}`)).json.status).toBe('done');
  });

  it("carries a task's done means, receipts and gates into the request it dispatches, and the job keeps them", async () => {
    const board = await openBoard();
    const { page } = board;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    await board.open('#/new');
    await page.getByRole('heading', { name: 'New job', level: 1 }).waitFor();
    await expect
      .poll(() => page.getByLabel('Runner').locator('option').allTextContents(), POLL)
      .toContain('shell — shell command (sh -c in the workspace)');
    await page.getByLabel('Workspace').fill(ws);
    await page.getByLabel('Runner').selectOption('shell');
    await page.getByLabel('Name').fill('make-out');
    await page.getByLabel('Instruction').fill('write hello to out.txt, and nothing else anywhere');
    await page.getByLabel('Command', { exact: true }).fill('echo hello > out.txt');
    await page.getByLabel('Files').fill('out.txt');
    await page.getByLabel('this command').check();
    await page.getByLabel('Verify command').fill('test -f out.txt');

    const handoff = page.getByRole('group', { name: 'Done means, receipts and gates' });
    await handoff.getByLabel('Done means').fill('out.txt says hello\n\n  test -f out.txt passes  ');
    await handoff.getByLabel('Receipts').fill('a.txt:1');
    await handoff.getByLabel('Gate commands').fill('grep -qx hello out.txt\ntest -s out.txt');
    await handoff.getByLabel('Diff scope gate').fill('out.txt, notes/');
    await handoff.getByLabel("Check the worker's claims against what changed").check();
    await handoff.getByLabel('Confirm each done-means item by a check that passed').check();
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('new-job-handoff');

    const sent = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/jobs');
    await page.getByRole('button', { name: 'Dispatch' }).click();
    const body = (await sent).postDataJSON() as { tasks: Record<string, unknown>[] };
    expect(body.tasks).toEqual([
      {
        name: 'make-out',
        instruction: 'write hello to out.txt, and nothing else anywhere',
        runner: 'shell',
        command: 'echo hello > out.txt',
        files: ['out.txt'],
        done_means: ['out.txt says hello', 'test -f out.txt passes'],
        receipts: ['a.txt:1'],
        gates: [
          'grep -qx hello out.txt',
          'test -s out.txt',
          { kind: 'diff-scope', paths: ['out.txt', 'notes/'] },
          { kind: 'claims' },
          { kind: 'done_means' },
        ],
      },
    ]);
    await expect.poll(() => page.url(), POLL).toMatch(/#\/jobs\/[0-9a-f]+$/);
    const id = decodeURIComponent(page.url().split('#/jobs/')[1] ?? '');
    // the server took each of them onto the job's task
    const task = board.engine.store.getJob(id)?.spec.tasks[0];
    expect(task?.brief).toMatchObject({
      done_means: ['out.txt says hello', 'test -f out.txt passes'],
      receipts: ['a.txt:1'],
    });
    expect(task?.gates).toEqual([
      { kind: 'command', command: 'grep -qx hello out.txt' },
      { kind: 'command', command: 'test -s out.txt' },
      { kind: 'diff-scope', paths: ['out.txt', 'notes/'] },
      { kind: 'claims' },
      { kind: 'done_means' },
    ]);
    board.engine.cancel(id);
    await board.engine.settled(id);
  });

  it('is readable on a phone, with the lint above the form and no serious axe violation', async () => {
    const board = await openBoard({ width: 390, height: 844 });
    const { page } = board;
    await board.open('#/new');
    await page.getByRole('heading', { name: 'New job', level: 1 }).waitFor();
    await page.getByLabel('Workspace').fill('/tmp');
    await page.getByLabel('Runner').selectOption('shell');
    await page.getByLabel('Instruction').fill('refactor the parser');
    await expect.poll(() => page.locator('.form-lint').textContent(), POLL).toContain('vague_verb');
    // nothing wider than the screen: the form is one column
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.getByRole('button', { name: 'Add a task' }).click();
    await page.getByRole('group', { name: /Task 2/ }).waitFor();
    // a task just added is not linted (nor refused) until it has an instruction: the findings of task 1 stay
    await expect.poll(() => page.locator('.form-lint').textContent(), POLL).toContain('Task 2 is still blank');
    expect(await page.locator('.form-lint').textContent()).toContain('vague_verb');
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('new-job-phone');
    // removing a task by keyboard leaves the focus in the task list, not on the page's body
    await page.getByRole('button', { name: 'Remove task 2' }).press('Enter');
    await expect.poll(() => page.getByRole('group', { name: /Task 2/ }).count(), POLL).toBe(0);
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent), POLL).toBe('Add a task');
  });
});
