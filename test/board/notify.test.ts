import { describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { hasChromium, openBoard } from './harness.js';

const POLL = { timeout: 30_000, interval: 100 };

describe.skipIf(!hasChromium)('browser notifications (issue 16 point 4)', () => {
  it('are off until turned on; then only a job ended done and a new ask notify — not a failed job, not a start', async () => {
    const board = await openBoard();
    const { page } = board;
    await page.context().grantPermissions(['notifications'], { origin: board.url });
    // every Notification the page makes is recorded (headless Chromium shows none)
    await page.addInitScript(() => {
      const shown: { title: string; tag: string | undefined }[] = [];
      (globalThis as { shown?: typeof shown }).shown = shown;
      class Recorded {
        static permission = 'granted';
        static requestPermission = () => Promise.resolve('granted');
        constructor(title: string, opts?: { tag?: string }) {
          shown.push({ title, tag: opts?.tag });
        }
      }
      (globalThis as { Notification?: unknown }).Notification = Recorded;
    });
    await board.open('#/jobs');
    // the login left the page at /: a hash change is no new document, so load one for the script
    await page.reload();
    const shown = () => page.evaluate(() => (globalThis as { shown?: { title: string; tag?: string }[] }).shown ?? []);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const submit = async (body: object) => {
      const res = await board.server.call('POST', '/api/jobs', { workspace: ws, verify: 'none', ...body });
      expect(res.status, res.text).toBe(202);
      await board.engine.settled(res.json.id as string);
      return res.json.id as string;
    };

    // off: a done job says nothing
    const quiet = await submit({
      tasks: [{ name: 'quiet', runner: 'shell', instruction: 'x', command: 'echo q > q.txt' }],
    });
    await expect.poll(() => page.locator(`[data-job-id="${quiet}"]`).getAttribute('data-status'), POLL).toBe('done');
    expect(await shown()).toEqual([]);

    const toggle = page.getByRole('button', { name: 'Notify me' });
    await toggle.click();

    await expect
      .poll(() => page.getByRole('button', { name: 'Notifications on' }).getAttribute('aria-pressed'), POLL)
      .toBe('true');

    const failed = await submit({ tasks: [{ name: 'fails', runner: 'shell', instruction: 'x', command: 'exit 3' }] });
    const done = await submit({
      tasks: [{ name: 'works', runner: 'shell', instruction: 'x', command: 'echo w > w.txt' }],
    });
    await expect.poll(async () => (await shown()).map((n) => n.tag), POLL).toContain(`done-${done}`);
    expect((await shown()).map((n) => n.tag)).not.toContain(`done-${failed}`);

    const asking = await board.server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      approval: 'required',
      tasks: [{ name: 'asks', runner: 'shell', instruction: 'x', command: 'true' }],
    });
    expect(asking.status, asking.text).toBe(202);
    await expect.poll(async () => (await shown()).map((n) => n.tag), POLL).toContain(`ask-${asking.json.id as string}`);
    // exactly one for each: the done job, the ask
    expect((await shown()).map((n) => n.tag).sort()).toEqual(
      [`ask-${asking.json.id as string}`, `done-${done}`].sort(),
    );
    expect((await shown()).find((n) => n.tag === `done-${done}`)?.title).toContain('gaffer: done');
  });
});
