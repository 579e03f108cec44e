import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunners } from '../../src/runners/index.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations, SHOTS_DIR, type Board } from './harness.js';

/** Blocks until the test creates `file`: the worker is live for as long as the test needs, no timing involved. */
const until = (file: string) => `until [ -f ${file} ]; do sleep 0.05; done`;

/** Writes out.txt (two lines) and changes a.txt; told in its instruction that line 2 should be three, writes that instead. */
const WRITE_OUT = `if grep -q 'should be three' "$GAFFER_INSTRUCTION_FILE"; then printf 'one\\nthree\\n' > out.txt; else printf 'one\\ntwo\\n' > out.txt; fi; printf 'alpha\\nBETA\\ngamma\\n' > a.txt`;

/** A finished shell job that added out.txt and modified a.txt. */
async function finishedShellJob(board: Board): Promise<{ id: string; ws: string }> {
  const ws = makeWorkspace({ 'a.txt': 'alpha\nbeta\ngamma\n' }, { git: true });
  const res = await board.server.call('POST', '/api/jobs', {
    workspace: ws,
    title: 'write out.txt',
    verify: 'test -f out.txt',
    tasks: [
      {
        name: 'write',
        runner: 'shell',
        instruction: 'write out.txt and capitalise beta in a.txt',
        command: WRITE_OUT,
        files: ['out.txt', 'a.txt'],
      },
    ],
  });
  expect(res.status).toBe(202);
  const id = String(res.json.id);
  await board.engine.settled(id);
  expect(board.engine.get(id).status).toBe('done');
  return { id, ws };
}

const jobIdOf = (url: string): string => decodeURIComponent(/#\/jobs\/([^/?]+)/.exec(url)?.[1] ?? '');

let models: ModelServer;
beforeAll(async () => {
  models = await startModelServer();
});
afterAll(async () => {
  await models.close();
});

describe.skipIf(!hasChromium)('the Job page: changes, review that feeds back, steering (issue 16)', () => {
  it('a finished job’s diff renders per file, side by side and unified; the view is remembered; no serious axe violation', async () => {
    const board = await openBoard();
    const { id } = await finishedShellJob(board);
    const { page } = board;
    await board.open(`#/jobs/${id}`);
    const changes = page.getByRole('region', { name: 'Changes' });
    await expect
      .poll(() => changes.locator('details.review-file > summary').allTextContents())
      .toEqual([expect.stringContaining('a.txt'), expect.stringContaining('out.txt')]);
    await expect.poll(() => changes.locator('summary').filter({ hasText: 'out.txt' }).textContent()).toContain('added');

    // side by side (the laptop default): two tables per file, the new side's lines are buttons
    const aDiff = changes.locator('.review-diff[data-file="a.txt"]');
    await aDiff.locator('.d2h-files-diff').waitFor();
    expect(await aDiff.locator('table.d2h-diff-table').count()).toBe(2);
    await expect
      .poll(() => aDiff.locator('.d2h-del').allTextContents())
      .toContainEqual(expect.stringContaining('beta'));
    await expect
      .poll(() => aDiff.locator('.d2h-ins').allTextContents())
      .toContainEqual(expect.stringContaining('BETA'));
    await changes.getByRole('button', { name: 'Comment on line 2 of out.txt' }).waitFor();
    await changes.getByRole('button', { name: 'Comment on line 2 of a.txt' }).waitFor();
    expect(await changes.getByRole('radio', { name: 'Side by side' }).isChecked()).toBe(true);
    await board.shot('job-diff-side-by-side');
    expect(await seriousViolations(page)).toEqual([]);

    // unified: one table per file, both line numbers in one column
    await changes.getByRole('radio', { name: 'Unified' }).check();
    await aDiff.locator('.d2h-file-diff').waitFor();
    expect(await aDiff.locator('.d2h-files-diff').count()).toBe(0);
    expect(await aDiff.locator('table.d2h-diff-table').count()).toBe(1);
    await changes.getByRole('button', { name: 'Comment on line 2 of a.txt' }).waitFor();
    await board.shot('job-diff-unified');
    expect(await seriousViolations(page)).toEqual([]);

    // remembered across a reload; a file collapses and expands
    await page.reload();
    await changes.locator('.review-diff[data-file="a.txt"] .d2h-file-diff').waitFor();
    expect(await changes.getByRole('radio', { name: 'Unified' }).isChecked()).toBe(true);
    await changes.getByRole('button', { name: 'Collapse all' }).click();
    await expect.poll(() => changes.locator('details.review-file[open]').count()).toBe(0);
    await changes.locator('summary').filter({ hasText: 'out.txt' }).click();
    await changes.getByRole('button', { name: 'Comment on line 1 of out.txt' }).waitFor();
  });

  it('a big job starts collapsed and fetches a file’s diff when it is opened; on a phone the diff is unified and fits the screen', async () => {
    const board = await openBoard({ width: 390, height: 844 });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const command =
      'for i in 1 2 3 4 5 6 7 8; do printf "line one of $i\\nline two\\n" > "file-$i.txt"; done; echo b > a.txt';
    const res = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'many', runner: 'shell', instruction: 'write eight files', command }],
    });
    const id = String(res.json.id);
    await board.engine.settled(id);
    const { page } = board;
    const diffs: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/diff?path=')) diffs.push(decodeURIComponent(r.url().split('path=')[1] ?? ''));
    });
    await board.open(`#/jobs/${id}`);
    const changes = page.getByRole('region', { name: 'Changes' });
    await expect.poll(() => changes.locator('details.review-file').count()).toBe(9);
    expect(await changes.locator('details.review-file[open]').count()).toBe(0);
    expect(await changes.getByRole('radio', { name: 'Unified' }).isChecked()).toBe(true);
    expect(diffs).toEqual([]);

    await changes.locator('summary').filter({ hasText: 'file-3.txt' }).click();
    await changes.getByRole('button', { name: 'Comment on line 2 of file-3.txt' }).waitFor();
    expect(diffs).toEqual(['file-3.txt']);
    await changes.locator('summary').filter({ hasText: 'a.txt' }).press('Enter');
    await changes.locator('.review-diff[data-file="a.txt"] .d2h-file-diff').waitFor();
    // nothing wider than the screen but the diff's own scroller
    expect(await page.locator('html').evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await changes.screenshot({ path: join(SHOTS_DIR, 'job-diff-phone.png') });
  });

  it('a line comment and a note start a follow-up of the task: linked, opened, a new session told the diff (shell), verified and done', async () => {
    const board = await openBoard();
    const { id, ws } = await finishedShellJob(board);
    const { page } = board;
    await board.open(`#/jobs/${id}`);
    const changes = page.getByRole('region', { name: 'Changes' });
    const send = changes.getByRole('button', { name: 'Send back to the worker' });
    await changes.getByRole('button', { name: 'Comment on line 2 of out.txt' }).waitFor();
    expect(await send.isDisabled()).toBe(true);

    // the line's button opens the comment, focused; the form quotes the line
    await changes.getByRole('button', { name: 'Comment on line 2 of out.txt' }).click();
    const comment = changes.getByLabel('Comment on out.txt line 2');
    await expect.poll(() => comment.evaluate((el) => el.matches(':focus'))).toBe(true);
    await expect.poll(() => changes.locator('.review-quote').textContent()).toContain('two');
    await comment.fill('should be three');
    await changes.getByRole('button', { name: 'Add comment' }).click();
    await changes.getByRole('list', { name: 'Pending comments' }).getByText('should be three').waitFor();
    await changes.getByRole('button', { name: 'Comment on line 2 of out.txt (1 pending comment)' }).waitFor();

    // the typed-line fallback: a comment on a.txt line 1, then removed again
    await changes.getByRole('button', { name: 'Comment on a line of a.txt…' }).click();
    await changes.getByLabel('Line', { exact: true }).fill('1');
    await changes.getByLabel('Comment on a.txt line 1').fill('not this one');
    await changes.getByRole('button', { name: 'Add comment' }).click();
    await changes.getByRole('button', { name: 'Remove the comment on a.txt line 1' }).click();
    await expect.poll(() => changes.getByRole('list', { name: 'Pending comments' }).locator('li').count()).toBe(1);

    await changes.getByLabel('General note').fill('keep the first line');
    await expect.poll(() => changes.locator('.review-send').textContent()).toContain('a new session of shell');
    expect(await send.isEnabled()).toBe(true);
    await board.shot('review-follow-up');
    expect(await seriousViolations(page)).toEqual([]);

    await send.click();
    // the board opens the follow-up job, which says where it came from and that it did not resume
    await expect.poll(() => jobIdOf(page.url())).not.toBe(id);
    const followId = jobIdOf(page.url());
    expect(followId).toMatch(/^[0-9a-f]{12}$/);
    // (the Job page's header says what it follows up, and how)
    const origin = page.locator('p', { hasText: `Follow-up of task write of job ${id}` });
    await expect.poll(() => origin.textContent()).toContain('new session');
    expect(await origin.getByRole('link', { name: id }).getAttribute('href')).toBe(`#/jobs/${id}`);

    await board.engine.settled(followId);
    const follow = await board.server.call('GET', `/api/jobs/${followId}`);
    expect(follow.json).toMatchObject({ status: 'done', follow_up: { job: id, task: 'write', resumed: false } });
    expect(follow.json.result.verification).toMatchObject({ ran: true, ok: true });
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\nthree\n');
    const instruction = readFileSync(join(board.engine.dataDir, 'jobs', followId, 'write.instruction.txt'), 'utf8');
    expect(instruction).toContain('out.txt:2: should be three');
    expect(instruction).toContain('keep the first line');
    expect(instruction).toContain('diff --git a/out.txt b/out.txt');
    // the page follows the job to its end (its own Changes now show the follow-up's diff)
    await page
      .getByRole('region', { name: 'Changes' })
      .locator('.review-diff[data-file="out.txt"] .d2h-files-diff')
      .waitFor();
    await board.shot('review-follow-up-sent');
    // the draft went with it: the first job's review is empty again
    await board.open(`#/jobs/${id}`);
    await page.getByRole('region', { name: 'Changes' }).getByText('No line comments yet').waitFor();
  });

  it("a comment on a builtin worker's diff resumes its session: the model's next request carries the first run's conversation and the comment", async () => {
    const board = await openBoard({
      engine: {
        runners: createRunners({
          sandbox: 'off',
          builtin: {
            endpoint: { api: 'openai-compatible', url: `${models.url}/v1`, key: 'sk-test', model: 'qwen3:8b' },
          },
        }),
      },
    });
    models.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
      { text: 'Wrote it.\nFiles changed:\nhello.txt' },
    ]);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'test -f hello.txt',
      tasks: [{ name: 'greet', runner: 'builtin', files: ['hello.txt'], instruction: 'write hello.txt saying hi' }],
    });
    const id = String(res.json.id);
    await board.engine.settled(id);
    expect(board.engine.get(id).status).toBe('done');

    const { page } = board;
    await board.open(`#/jobs/${id}`);
    const changes = page.getByRole('region', { name: 'Changes' });
    await changes.getByRole('button', { name: 'Comment on line 1 of hello.txt' }).click();
    await changes.getByLabel('Comment on hello.txt line 1').fill('say hello, not hi');
    await changes.getByRole('button', { name: 'Add comment' }).click();
    await expect
      .poll(() => changes.locator('.review-send').textContent())
      .toContain('it resumes the session of its last worker (greet, builtin)');

    const before = models.requests.length;
    models.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\n' } }] },
      { text: 'Changed it.\nFiles changed:\nhello.txt' },
    ]);
    await changes.getByRole('button', { name: 'Send back to the worker' }).click();
    await expect.poll(() => jobIdOf(page.url())).not.toBe(id);
    const followId = jobIdOf(page.url());
    await expect
      .poll(() => page.locator('p', { hasText: `Follow-up of task greet of job ${id}` }).textContent())
      .toContain('resumed');

    await board.engine.settled(followId);
    const follow = board.engine.get(followId);
    expect(follow).toMatchObject({ status: 'done', follow_up: { job: id, task: 'greet', resumed: true } });
    const resumed = models.requests[before];
    const wire = JSON.stringify(resumed?.body.messages);
    expect(wire).toContain('write hello.txt saying hi');
    expect(wire).toContain('Wrote it.');
    expect(resumed?.lastText).toContain('hello.txt:1: say hello, not hi');
    expect(resumed?.lastText).not.toContain('diff against its checkpoint');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello\n');
  });

  it('steering a live shell worker says it was queued as the next follow-up; review waits for the job to end', async () => {
    const board = await openBoard();
    const go = join(tempDir(), 'go');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          name: 'slow',
          runner: 'shell',
          instruction: 'wait, then write b.txt',
          command: `${until(go)}; echo b > b.txt`,
        },
      ],
    });
    const id = String(res.json.id);
    await board.engine.waitFor(id, 'worker:slow:running', 30);

    const { page } = board;
    await board.open(`#/jobs/${id}`);
    const box = page.getByLabel('Message to the worker of slow');
    await box.fill('also write c.txt');
    await page.getByRole('button', { name: 'Send to the worker' }).click();
    const sent = page.getByRole('list', { name: 'Messages sent to slow' });
    await expect.poll(() => sent.textContent()).toContain('Queued as the next follow-up');
    expect(await sent.textContent()).toContain('takes no input mid-run');
    expect(await box.inputValue()).toBe('');
    const received = board.engine.events(id).events.filter((e) => e.event === 'steer_received');
    expect(received).toEqual([
      expect.objectContaining({ task: 'slow', delivery: 'queued_as_follow_up', text: 'also write c.txt' }),
    ]);

    // a live job's review cannot be sent yet, and the board says why
    const changes = page.getByRole('region', { name: 'Changes' });
    await changes.getByLabel('General note').fill('later');
    expect(await changes.getByRole('button', { name: 'Send back to the worker' }).isDisabled()).toBe(true);
    expect(await changes.locator('.review-why').textContent()).toContain('still running');
    await board.shot('job-steer');
    expect(await seriousViolations(page)).toEqual([]);

    // the job ends: the queued message becomes its follow-up job, and the steer box goes with the live worker
    writeFileSync(go, '');
    await board.engine.settled(id);
    const delivered = board.engine.events(id).events.find((e) => e.event === 'steer_delivered');
    const followId = String(delivered?.follow_up_job);
    expect(board.engine.get(followId).follow_up).toEqual({ job: id, task: 'slow', resumed: false });
    await board.engine.settled(followId);
    await expect.poll(() => page.getByLabel('Message to the worker of slow').count()).toBe(0);
    await expect.poll(() => changes.getByRole('button', { name: 'Send back to the worker' }).isEnabled()).toBe(true);
  });

  it('steering a live builtin worker says it is delivered at its next turn, and the next model request carries it', async () => {
    const board = await openBoard({
      engine: {
        runners: createRunners({
          sandbox: 'off',
          builtin: {
            endpoint: { api: 'openai-compatible', url: `${models.url}/v1`, key: 'sk-test', model: 'qwen3:8b' },
          },
        }),
      },
    });
    const go = join(tempDir(), 'go');
    models.script([
      // the worker is inside this tool call until the test lets it go
      { toolCalls: [{ name: 'run_command', args: { command: until(go) } }] },
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hello\n' } }] },
      { text: 'Wrote it.\nFiles changed:\nhello.txt' },
    ]);
    const before = models.requests.length;
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'test -f hello.txt',
      tasks: [{ name: 'greet', runner: 'builtin', files: ['hello.txt'], instruction: 'write hello.txt' }],
    });
    const id = String(res.json.id);
    await models.waitForRequests(before + 1);

    const { page } = board;
    await board.open(`#/jobs/${id}`);
    await page.getByLabel('Message to the worker of greet').fill('indent with tabs');
    await page.getByRole('button', { name: 'Send to the worker' }).click();
    const sent = page.getByRole('list', { name: 'Messages sent to greet' });
    await expect.poll(() => sent.textContent()).toContain('Delivered at its next turn');
    expect(await sent.textContent()).not.toContain('follow-up');

    writeFileSync(go, '');
    await board.engine.settled(id);
    expect(board.engine.get(id).status).toBe('done');
    expect(models.requests[before + 1]?.lastText).toContain('indent with tabs');
    // read in the run: no follow-up job
    expect(board.engine.list()).toHaveLength(1);
  });
});
