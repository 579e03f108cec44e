import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type GafferConfig } from '../../src/config/config.js';
import { parseRoster } from '../../src/domain/roster.js';
import { hasChromium, openBoard, seriousViolations } from './harness.js';

const POLL = { timeout: 20_000, interval: 100 };
const entry = (id: string, cost: string, more: Record<string, unknown> = {}) => ({
  id,
  runner: 'shell',
  provider: 'local',
  billing: 'free',
  cost,
  tasks: ['fix'],
  ...more,
});

/** Three rungs for `fix` (mid falls back to dear), an api entry for `design`, an entry on a runner this build lacks; learning on at 0.7. */
const CONFIG: GafferConfig = {
  ...DEFAULT_CONFIG,
  roster: parseRoster(
    {
      entries: [
        entry('cheap', 'free'),
        entry('mid', 'low', { fallback: 'dear' }),
        entry('dear', 'high', { provider: 'backup' }),
        entry('paid', 'mid', { provider: 'cloud', billing: 'api', tasks: ['design'] }),
        entry('elsewhere', 'low', { runner: 'nope', tasks: ['design'] }),
      ],
    },
    'config board test',
  ),
  routing: { learn: true, min_acceptance: 0.7 },
};

describe.skipIf(!hasChromium)('the board: Roster', () => {
  it('shows the roster and its source, each ladder with where a task starts, what learning skipped and why, and who asks first', async () => {
    const board = await openBoard({ engine: { config: CONFIG } });
    // cheap failed `fix` 30 times: the learner passes over it
    for (let i = 0; i < 30; i++) {
      board.engine.store.recordOutcome(
        {
          ts: new Date().toISOString(),
          job: `old-${i}`,
          task: 't',
          rung: 1,
          type: 'fix',
          runner: 'shell',
          model: null,
          provider: 'local',
          entry: 'cheap',
          status: 'failed',
          gates_passed: false,
          escalated_to: null,
          returned: false,
          attempts: 1,
          cost_usd: 0,
        },
        null,
      );
    }
    const { page } = board;
    await board.open('#/jobs');
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Roster' }).click();
    await page.getByRole('heading', { name: 'Roster', level: 1 }).waitFor();
    expect(page.url()).toMatch(/#\/roster$/);

    const entries = page.getByRole('region', { name: 'Roster entries' }).locator('tbody tr');
    await expect.poll(() => entries.count(), POLL).toBe(5);
    expect(
      await page
        .locator('section', { has: page.locator('#roster-entries-h') })
        .locator('p')
        .first()
        .innerText(),
    ).toBe(`5 entries from config board test — a workspace's gaffer.roster.json is not read while this one is set.`);
    expect(await page.locator('tr[data-entry="mid"]').innerText()).toMatch(
      /mid\s+shell\s+the runner's default\s+free\s+low\s+local\s+fix\s+fallback: dear/,
    );
    expect(await page.locator('tr[data-entry="elsewhere"] .roster-warn').innerText()).toContain(
      'runner "nope" is not one this build runs',
    );

    const fix = page.locator('li[data-type="fix"]');
    expect(
      await fix.getByRole('list', { name: 'Ladder of fix, cheapest first' }).locator('li').allInnerTexts(),
    ).toEqual([
      expect.stringMatching(/^cheap\s*skipped by learning\s*0\/30 accepted$/),
      expect.stringMatching(/^mid\s*starts here\s*0\/0 accepted$/),
      expect.stringMatching(/^dear\s*0\/0 accepted$/),
    ]);
    expect(await fix.locator('.roster-why').innerText()).toMatch(
      /^learned: skipped cheap \(0\/30 accepted, upper bound 0\.\d+ < 0\.7\); mid has 0 outcomes/,
    );
    expect(await page.locator('li[data-type="design"] .roster-start').innerText()).toContain('paid');
    expect(await page.locator('section', { has: page.locator('#roster-learning-h') }).innerText()).toContain(
      'a rung is skipped once 30 or more outcomes of the type show its acceptance below 0.7',
    );
    expect(await page.locator('section', { has: page.locator('#roster-approval-h') }).innerText()).toContain(
      'Asks first: paid (bills api).',
    );
    expect(await page.locator('main').innerText()).not.toMatch(/\b(spec|issue) \d+/i);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('roster');

    await page.setViewportSize({ width: 390, height: 844 });
    await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth), POLL).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    await board.shot('roster-phone');
  });

  it('says so when there is no roster, and where a task runs instead', async () => {
    const board = await openBoard({ engine: { defaultRunner: 'shell' } });
    await board.open('#/roster');
    const { page } = board;
    await page.getByRole('heading', { name: 'Roster', level: 1 }).waitFor();
    await expect
      .poll(() => page.locator('section', { has: page.locator('#roster-entries-h') }).innerText(), POLL)
      .toContain('No roster: none in the config or at');
    expect(await page.locator('section', { has: page.locator('#roster-entries-h') }).innerText()).toContain(
      'the default runner shell',
    );
    expect(await page.locator('section', { has: page.locator('#roster-learning-h') }).innerText()).toContain(
      'Off (routing.learn)',
    );
    expect(await seriousViolations(page)).toEqual([]);
  });
});
