import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type GafferConfig } from '../../src/config/config.js';
import { parseRoster } from '../../src/domain/roster.js';
import { describeSpine } from '../../src/engine/maintenance/doctor-spine.js';
import { inProcess, openEngine } from './helpers.js';

const entry = (id: string, cost: string, more: Record<string, unknown> = {}) => ({
  id,
  runner: 'shell',
  provider: 'local',
  billing: 'free',
  cost,
  tasks: ['fix'],
  ...more,
});

/** Three rungs for `fix`, an api entry for `design`, learning on at 0.7. */
const CONFIG: GafferConfig = {
  ...DEFAULT_CONFIG,
  roster: parseRoster(
    {
      entries: [
        entry('cheap', 'free'),
        entry('mid', 'low', { fallback: 'dear' }),
        entry('dear', 'high', { provider: 'backup' }),
        entry('paid', 'mid', { provider: 'cloud', billing: 'api', tasks: ['design'] }),
      ],
    },
    'config test',
  ),
  routing: { learn: true, min_acceptance: 0.7 },
};

describe('GET /api/roster', () => {
  it("answers doctor's roster, each type's ladder, what learned routing skips and why, and who asks first", async () => {
    const engine = await openEngine({ config: CONFIG });
    const { call } = inProcess(engine);
    // cheap failed `fix` 30 times: enough outcomes for the learner to pass over it
    for (let i = 0; i < 30; i++) {
      engine.store.recordOutcome(
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
    const res = await call('GET', '/api/roster');
    expect(res.status).toBe(200);
    const spine = describeSpine(CONFIG, engine.dataDir);
    expect(res.json).toEqual({
      roster: spine.roster,
      ladders: spine.ladders,
      learning: spine.learning,
      approval: spine.approval,
      store_note: spine.store_note,
    });

    expect(res.json.roster).toMatchObject({
      source: 'config test',
      entries: [
        { entry: 'cheap' },
        { entry: 'mid', fallback: 'dear' },
        { entry: 'dear' },
        { entry: 'paid', billing: 'api' },
      ],
    });
    const fix = res.json.ladders.find((l: { type: string }) => l.type === 'fix');
    expect(fix).toMatchObject({ rungs: ['cheap', 'mid', 'dear'], starts_on: 'mid' });
    expect(fix.why).toMatch(
      /^learned: skipped cheap \(0\/30 accepted, upper bound 0\.\d+ < 0\.7\); mid has 0 outcomes/,
    );
    expect(res.json.learning).toMatchObject({ on: true, min_acceptance: 0.7, min_samples: 30 });
    expect(res.json.learning.figures).toContainEqual({
      type: 'fix',
      entries: [
        { entry: 'cheap', accepted: 0, total: 30 },
        { entry: 'mid', accepted: 0, total: 0 },
        { entry: 'dear', accepted: 0, total: 0 },
      ],
    });
    expect(res.json.approval.asks).toEqual([{ entry: 'paid', why: 'bills api' }]);
    // what the stats answer already says (budgets, the breaker) is not repeated here
    expect(Object.keys(res.json).sort()).toEqual(['approval', 'ladders', 'learning', 'roster', 'store_note']);
  });

  it("an engine given no config shows the data dir's roster file, or says there is none and where tasks run instead", async () => {
    const bare = await openEngine({ defaultRunner: 'shell' });
    const none = (await inProcess(bare).call('GET', '/api/roster')).json;
    expect(none.roster).toMatchObject({ source: null, entries: [] });
    expect(none.roster.note).toContain('the default runner shell');
    expect(none.ladders).toEqual([]);
    expect(none.learning.on).toBe(false);

    const filed = await openEngine();
    writeFileSync(join(filed.dataDir, 'gaffer.roster.json'), JSON.stringify({ entries: [entry('only', 'free')] }));
    const answer = (await inProcess(filed).call('GET', '/api/roster')).json;
    expect(answer.roster.source).toContain(join(filed.dataDir, 'gaffer.roster.json'));
    expect(answer.ladders).toEqual([{ type: 'fix', rungs: ['only'], starts_on: 'only', why: expect.any(String) }]);
  });
});
