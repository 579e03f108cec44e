import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
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

/** The header's "Tasks" fact. */
const tasksFact = (page: Page) =>
  page.locator('.job-facts div', { has: page.locator('dt', { hasText: /^Tasks$/ }) }).locator('dd');

describe.skipIf(!hasChromium)('the Job page of a worktree job, and how tasks ran', () => {
  it("lists each task branch's files and draws each file's diff from its branch; no error, no serious axe violation", async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ ...CALC_FILES, 'README.md': 'x\n' }, { git: true });
    const id = await settledJob(board, {
      workspace: ws,
      title: 'two branches',
      isolation: 'worktree',
      verify: 'exit 0',
      tasks: [
        {
          name: 'fix-add',
          runner: 'shell',
          instruction: 'fix add in src/math.js',
          files: ['src/math.js'],
          command: FIX_ADD,
        },
        {
          name: 'docs',
          runner: 'shell',
          instruction: 'add a line to README.md',
          files: ['README.md', 'NOTES.md'],
          command: 'echo more >> README.md; echo new > NOTES.md',
        },
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
    await expect
      .poll(() => fixAdd.locator('details.review-file > summary').allTextContents(), POLL)
      .toEqual([expect.stringContaining('src/math.js')]);
    expect(await docs.locator('details.review-file > summary').allTextContents()).toEqual([
      expect.stringContaining('NOTES.md'),
      expect.stringContaining('README.md'),
    ]);
    expect(await fixAdd.getByRole('heading').innerText()).toContain(`gaffer/${id}/fix-add`);
    expect(await changes.locator('p', { hasText: 'Each task worked on its own branch' }).count()).toBe(1);

    // each file's diff, read on its task's branch: the workspace itself was left as it was (merge "none")
    const math = fixAdd.locator('.review-diff[data-file="src/math.js"]');
    await math.locator('.d2h-files-diff').waitFor();
    await expect
      .poll(() => math.locator('.d2h-ins').allTextContents(), POLL)
      .toContainEqual(expect.stringContaining('return a + b;'));
    expect(await math.locator('.d2h-del').allTextContents()).toContainEqual(expect.stringContaining('return a - b;'));
    await expect
      .poll(() => docs.locator('.review-diff[data-file="README.md"] .d2h-ins').allTextContents(), POLL)
      .toContainEqual(expect.stringContaining('more'));
    await expect.poll(() => docs.locator('summary', { hasText: 'NOTES.md' }).textContent(), POLL).toContain('added');
    expect(await changes.locator('.error-box').count()).toBe(0);
    expect(diffs.sort()).toEqual([
      'path=NOTES.md&task=docs',
      'path=README.md&task=docs',
      'path=src/math.js&task=fix-add',
    ]);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job-worktree-diff');

    // a comment on a branch's line goes to that branch's task
    await fixAdd.getByRole('button', { name: 'Comment on line 2 of src/math.js' }).click();
    await fixAdd.getByLabel('Comment on src/math.js line 2').fill('keep the minus for subtract');
    await fixAdd.getByRole('button', { name: 'Add comment' }).click();
    await expect.poll(() => changes.locator('.review-send').textContent(), POLL).toContain('Goes to task fix-add');
    expect(await changes.getByRole('combobox', { name: 'Send to task' }).inputValue()).toBe('fix-add');

    // a merge later of one branch points at this job's branches for the diffs, and names what it applied
    const merge = await board.server.call('POST', `/api/jobs/${id}/merge`, { task: 'fix-add' });
    await board.engine.settled(String(merge.json.id));
    await board.open(`#/jobs/${String(merge.json.id)}`);
    const merged = page.getByRole('region', { name: 'Changes' });
    await expect
      .poll(() => merged.locator('p').first().innerText(), POLL)
      .toBe(
        `This job merged the branch of task fix-add of job ${id}: each file's diff is on that job's page, under its task's branch.`,
      );
    expect(await merged.getByRole('link', { name: id }).getAttribute('href')).toBe(`#/jobs/${id}`);
    expect(await merged.getByRole('list', { name: 'Files it applied' }).innerText()).toBe('src/math.js');
    expect(await page.locator('.error-box').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job-merge-changes');
  });

  it('a proved worktree job shows passing branch badges, a known failure excused with why; tasks that ran one after another are not called parallel', async () => {
    const board = await openBoard();
    const ws = makeWorkspace({ ...CALC_FILES, 'README.md': 'x\n' }, { git: true });
    // docs leaves `add adds` failing in its branch (declared known); fix-add fixes it; the merged tree passes
    const id = await settledJob(board, {
      workspace: ws,
      title: 'fix and document',
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify: { command: 'npm test', known_failures: ['add adds'] },
      tasks: [
        {
          name: 'fix-add',
          runner: 'shell',
          instruction: 'fix add in src/math.js',
          files: ['src/math.js'],
          command: FIX_ADD,
        },
        {
          name: 'docs',
          runner: 'shell',
          instruction: 'add a line to README.md',
          files: ['README.md'],
          command: 'echo more >> README.md',
        },
      ],
    });
    const answer = (await board.server.call('GET', `/api/jobs/${id}?full=1`)).json;
    expect(answer.result.proof.verdict).toBe('proved');
    expect(answer.result.worktrees.classes.map((c: { class: string }) => c.class)).toEqual([
      'sequential',
      'sequential',
    ]);
    expect(answer.result.worktrees.tasks.map((t: { verification: unknown }) => t.verification)).toEqual([
      { ok: true, summary: '2 passed', blocking: false },
      { ok: false, summary: '1 failed, 1 passed', blocking: false },
    ]);

    const { page } = board;
    await board.open(`#/jobs/${id}`);
    await page.locator('.job-pills', { hasText: 'proved' }).waitFor();
    const rows = page.getByRole('region', { name: 'Branches' }).locator('tbody tr');
    await expect.poll(() => rows.count(), POLL).toBe(2);
    for (const i of [0, 1]) {
      const cells = rows.nth(i).locator('td');
      expect(await cells.nth(2).locator('.status').innerText()).toBe('pass');
      expect(await cells.nth(3).locator('.status').innerText()).toBe('merged');
    }
    expect(await rows.nth(1).locator('td').nth(2).innerText()).toContain('declared known');
    expect(await page.locator('section[aria-labelledby="job-worktrees-h"] .status.fail').count()).toBe(0);
    // the merged tree's badge too
    expect(await page.locator('section[aria-labelledby="job-worktrees-h"] li .status').allInnerTexts()).toEqual([
      'pass',
    ]);
    // parallel was asked, but `npm test` is no parallel-safe gate: they ran one after another
    await expect.poll(() => tasksFact(page).innerText(), POLL).toBe('2, one after another (parallel was asked)');
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('job-worktree-proved');
  });

  it('a shared job says its tasks ran one after another, also when parallel was asked and its shell workers took turns in the workspace', async () => {
    const board = await openBoard();
    const { page } = board;
    const tasks = ['a', 'b'].map((n) => ({
      name: n,
      runner: 'shell',
      instruction: `write ${n}.txt`,
      files: [`${n}.txt`],
      command: `echo ${n} > ${n}.txt`,
    }));

    const sequential = await settledJob(board, {
      workspace: makeWorkspace({ 'x.txt': 'x\n' }, { git: true }),
      title: 'in order',
      verify: 'none',
      tasks,
    });
    await board.open(`#/jobs/${sequential}`);
    await expect.poll(() => tasksFact(page).innerText(), POLL).toBe('2, one after another');

    // asked parallel, but a shell worker holds the shared workspace alone: the second starts when the first ended
    const turns = await settledJob(board, {
      workspace: makeWorkspace({ 'x.txt': 'x\n' }, { git: true }),
      title: 'asked parallel',
      parallel: true,
      verify: 'none',
      tasks,
    });
    const events = board.engine
      .events(turns)
      .events.filter((e) => ['a', 'b'].includes(e.name) && ['started', 'done'].includes(e.event));
    expect(events.map((e) => `${e.name} ${e.event}`)).toEqual(['a started', 'a done', 'b started', 'b done']);
    await board.open(`#/jobs/${turns}`);
    await expect.poll(() => tasksFact(page).innerText(), POLL).toBe('2, one after another (parallel was asked)');
    await board.shot('job-tasks-one-after-another');
  });

  it('worktree tasks whose gates are parallel-safe ran side by side, and the header says so', async () => {
    const board = await openBoard({ engine: { maxParallel: 4, worktrees: { parallelSafeGates: ['exit 0'] } } });
    // each waits until the other has started: run one after another, neither would write its file
    const gate = tempDir();
    const meet = (me: string, other: string) =>
      `touch ${gate}/${me}; for i in $(seq 200); do [ -f ${gate}/${other} ] && break; sleep 0.05; done; [ -f ${gate}/${other} ] && echo ${me} > ${me}.txt`;
    const side = await settledJob(board, {
      workspace: makeWorkspace({ 'x.txt': 'x\n' }, { git: true }),
      title: 'side by side',
      isolation: 'worktree',
      parallel: true,
      verify: 'exit 0',
      tasks: [
        { name: 'a', runner: 'shell', instruction: 'write a.txt', files: ['a.txt'], command: meet('a', 'b') },
        { name: 'b', runner: 'shell', instruction: 'write b.txt', files: ['b.txt'], command: meet('b', 'a') },
      ],
    });
    expect(board.engine.get(side, { full: true }).result?.worktrees?.classes.map((c) => c.class)).toEqual([
      'parallel',
      'parallel',
    ]);
    expect(board.engine.get(side).status).toBe('done');
    await board.open(`#/jobs/${side}`);
    await expect.poll(() => tasksFact(board.page).innerText(), POLL).toBe('2, in parallel');
  });
});
