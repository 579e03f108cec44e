import { describe, expect, it } from 'vitest';
import { CALC_FILES, FIX_ADD, makeWorkspace } from '../helpers/temp.js';
import { hasChromium, openBoard, seriousViolations, type Board } from './harness.js';

const POLL = { timeout: 20_000, interval: 100 };

/** A job submitted through the API and run to its end; its id. */
async function settledJob(board: Board, body: Record<string, unknown>): Promise<string> {
  const res = await board.server.call('POST', '/api/jobs', body);
  expect(res.status, res.text).toBe(202);
  const id = String(res.json.id);
  await board.engine.settled(id);
  return id;
}

describe.skipIf(!hasChromium)('the Job page of a worktree job', () => {
  it("lists each task branch's files and draws each file's diff from its branch; no error, no serious axe violation", async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ ...CALC_FILES, 'README.md': 'x\n' }, { git: true });
    const id = await settledJob(board, {
      workspace: ws,
      title: 'two branches',
      isolation: 'worktree',
      verify: 'exit 0',
      tasks: [
        { name: 'fix-add', runner: 'shell', instruction: 'fix add in src/math.js', files: ['src/math.js'], command: FIX_ADD },
        { name: 'docs', runner: 'shell', instruction: 'add a line to README.md', files: ['README.md', 'NOTES.md'], command: 'echo more >> README.md; echo new > NOTES.md' },
      ],
    });
    const { page } = board;
    const diffs: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/diff?')) diffs.push(decodeURIComponent(r.url().split('?')[1] ?? ''));
    });
    await board.open(`#/jobs/${id}`);
    const changes = page.getByRole('region', { name: 'Changes' });
    const fixAdd = changes.getByRole('region', { name: /^Task fix-add/ });
    const docs = changes.getByRole('region', { name: /^Task docs/ });
    await expect.poll(() => fixAdd.locator('details.review-file > summary').allTextContents(), POLL).toEqual([expect.stringContaining('src/math.js')]);
    expect(await docs.locator('details.review-file > summary').allTextContents()).toEqual([expect.stringContaining('NOTES.md'), expect.stringContaining('README.md')]);
    expect(await fixAdd.getByRole('heading').innerText()).toContain(`gaffer/${id}/fix-add`);
    expect(await changes.locator('p', { hasText: 'Each task worked on its own branch' }).count()).toBe(1);

    // each file's diff, read on its task's branch: the workspace itself was left as it was (merge "none")
    const math = fixAdd.locator('.review-diff[data-file="src/math.js"]');
    await math.locator('.d2h-files-diff').waitFor();
    await expect.poll(() => math.locator('.d2h-ins').allTextContents(), POLL).toContainEqual(expect.stringContaining('return a + b;'));
    expect(await math.locator('.d2h-del').allTextContents()).toContainEqual(expect.stringContaining('return a - b;'));
    await expect.poll(() => docs.locator('.review-diff[data-file="README.md"] .d2h-ins').allTextContents(), POLL).toContainEqual(expect.stringContaining('more'));
    await expect.poll(() => docs.locator('summary', { hasText: 'NOTES.md' }).textContent(), POLL).toContain('added');
    expect(await changes.locator('.error-box').count()).toBe(0);
    expect(diffs.sort()).toEqual(['path=NOTES.md&task=docs', 'path=README.md&task=docs', 'path=src/math.js&task=fix-add']);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job-worktree-diff');

    // a comment on a branch's line goes to that branch's task
    await fixAdd.getByRole('button', { name: 'Comment on line 2 of src/math.js' }).click();
    await fixAdd.getByLabel('Comment on src/math.js line 2').fill('keep the minus for subtract');
    await fixAdd.getByRole('button', { name: 'Add comment' }).click();
    await expect.poll(() => changes.locator('.review-send').textContent(), POLL).toContain('Goes to task fix-add');
    expect(await changes.getByRole('combobox', { name: 'Send to task' }).inputValue()).toBe('fix-add');
  });
});
