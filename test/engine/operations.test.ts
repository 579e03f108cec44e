import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { windowOf } from '../../src/domain/budget.js';
import { parseRoster } from '../../src/domain/roster.js';
import { epochS } from '../../src/engine/clock.js';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { resultOf } from '../helpers/answer.js';
import { startModelServer, type ModelServer, type ScriptStep as ModelTurn } from '../support/model-server/index.js';
import { refusal } from '../helpers/refusal.js';

// issue 15 through real jobs: spend recorded honestly, budgets refusing before anything starts and
// rolling over with the clock, a provider suspended by a 429 holding every attempt for it without a
// slot (or moving them to the roster's fallback), and the unattended breaker.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(opts: Partial<EngineOptions> = {}): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox: createSandbox('off') }),
    ...opts,
  });
  engines.push(engine);
  return engine;
}

describe('budgets (spec 07, issue 15)', () => {
  it('a day budget spent by a first job refuses the second with pause_until at the UTC day’s end; the window rolls over with the clock', async () => {
    let offsetS = 0;
    const now = () => epochS() + offsetS;
    const roster = parseRoster(
      {
        entries: [
          { id: 'local', runner: 'shell', provider: 'box', billing: 'free', cost: 'free', tasks: ['implement'] },
        ],
      },
      'config test',
    );
    const engine = await open({
      roster,
      operations: {
        budgets: [{ provider: 'box', entry: null, window: 'day', unit: 'seconds', limit: 0.2, pace_margin: 1 }],
        now,
      },
    });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const first = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'slow', type: 'implement', instruction: 'sleep 0.4; echo done > out.txt' }],
    });
    await engine.settled(first.job.id);
    const row = resultOf(engine.get(first.job.id, { full: true })).workers[0];
    expect(row?.spend).toMatch(/^0\.[4-9]\d* s \(free\)$|^\d+(\.\d)? s \(free\)$/);

    const body = {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'next', type: 'implement', instruction: 'echo next > next.txt' }],
    };
    const refused = refusal(() => engine.submit(body));
    expect(refused.code).toBe('budget_paused');
    const end = windowOf('day', now()).end;
    expect(refused.extra.pause_until).toBe(end);
    expect(refused.extra.retry_after_s).toBeGreaterThan(0);
    expect(Math.abs((refused.extra.retry_after_s as number) - (end - now()))).toBeLessThan(2);
    expect(String(refused.extra.reason)).toMatch(/box day budget \(0\.2 seconds\) is spent/);
    // nothing half-started: no second job stored
    expect(engine.list({ limit: 10 }).length).toBe(1);
    // the stats say where the provider stands
    const box = engine.stats().providers.find((p) => p.provider === 'box');
    expect(box?.budgets[0]).toMatchObject({ state: 'spent', limit: 0.2, pause_until: end });

    // the next UTC day: the window rolled over, the job runs
    offsetS = end - epochS() + 60;
    const second = engine.submit(body);
    await engine.settled(second.job.id);
    expect(engine.get(second.job.id).status).toBe('done');
  });

  it('ahead of pace: an unattended job is refused, an interactive one runs with a warning', async () => {
    const roster = parseRoster(
      {
        entries: [
          { id: 'local', runner: 'shell', provider: 'box', billing: 'free', cost: 'free', tasks: ['implement'] },
        ],
      },
      'config test',
    );
    // at 01:00 UTC, 1/24 of the day is gone; a job's few tenths of a second are over half of a 0.5 s limit
    const oneAm = windowOf('day', epochS()).start + 3600;
    const offset = oneAm - epochS();
    const engine = await open({
      roster,
      operations: {
        budgets: [{ provider: 'box', entry: null, window: 'day', unit: 'seconds', limit: 0.5, pace_margin: 0.2 }],
        now: () => epochS() + offset,
      },
    });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const first = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w', type: 'implement', instruction: 'sleep 0.3; echo 1 > one.txt' }],
    });
    await engine.settled(first.job.id);
    const body = {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w2', type: 'implement', instruction: 'echo 2 > two.txt' }],
    };
    const refused = refusal(() => engine.submit({ ...body, unattended: true }));
    expect(refused.code).toBe('budget_paused');
    expect(String(refused.extra.reason)).toMatch(/ahead of pace/);
    const interactive = engine.submit(body);
    expect(interactive.job.warnings?.[0]).toMatch(/ahead of pace: .*this interactive job runs anyway/);
    await engine.settled(interactive.job.id);
    expect(engine.get(interactive.job.id).status).toBe('done');
  });
});

describe('an unattended job behind an interactive one (spec 07)', () => {
  it('waits while an interactive job is live on the same provider, then runs', async () => {
    const engine = await open({ maxParallel: 2 });
    const interactive = engine.submit({
      workspace: makeWorkspace({ 'a.txt': 'a\n' }, { git: true }),
      verify: 'none',
      tasks: [{ name: 'i', runner: 'shell', instruction: 'sleep 1.5; echo i > i.txt' }],
    });
    await engine.waitFor(interactive.job.id, 'worker:i:running', 10);
    const unattended = engine.submit({
      workspace: makeWorkspace({ 'b.txt': 'b\n' }, { git: true }),
      verify: 'none',
      unattended: true,
      tasks: [{ name: 'u', runner: 'shell', instruction: 'echo u > u.txt' }],
    });
    const held = await engine.waitFor(unattended.job.id, 'worker:u:budget_paused', 10);
    expect(held.met).toBe(true);
    expect(held.state.progress?.u?.why).toMatch(
      new RegExp(`unattended: waits while interactive job ${interactive.job.id} is live on provider shell`),
    );
    await engine.settled(unattended.job.id);
    const iDone = engine.store.listAttempts(interactive.job.id)[0]?.finished ?? 0;
    const uStarted = engine.store.listAttempts(unattended.job.id)[0]?.started ?? 0;
    expect(uStarted).toBeGreaterThanOrEqual(iDone);
    expect(engine.get(unattended.job.id).status).toBe('done');
  });
});

describe('spend in the answer (issue 15)', () => {
  it('a runner that reports nothing on an api billing records null, and the answer says "cost unknown"', async () => {
    const engine = await open({ billing: { shell: 'api' } });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'paid', runner: 'shell', instruction: 'echo x > x.txt' }],
    });
    await engine.waitFor(job.id, 'phase:awaiting approval', 10);
    engine.approve(job.id, true);
    await engine.settled(job.id);
    const result = resultOf(engine.get(job.id));
    expect(result.workers[0]?.spend).toMatch(/^cost unknown \(api\): the runner reported no cost and no tokens/);
    expect(result.totals?.cost_usd).toBeNull();
    expect(result.totals?.spend).toMatch(/^cost unknown for paid/);
  });
});

describe('provider suspension (issue 15)', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer();
  });
  afterAll(async () => {
    await server.close();
  });

  const ENTRIES = [
    {
      id: 'a',
      runner: 'builtin',
      model: 'a-model',
      provider: 'prov-a',
      billing: 'free',
      cost: 'free',
      tasks: ['implement'],
    },
    {
      id: 'b',
      runner: 'builtin',
      model: 'b-model',
      provider: 'prov-b',
      billing: 'free',
      cost: 'free',
      tasks: ['triage'],
    },
  ];
  const builtin = () =>
    createRunners({
      sandbox: createSandbox('off'),
      builtin: { endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'a-model' } },
    });
  /** a-model answers 429 until `resetAt` (ms), naming the reset; after it, `Done.`; every answer's time is kept. */
  function script(
    resetAt: number,
    seen: { model: string; at: number; status: number }[],
    others: ModelTurn[] = [],
  ): void {
    const limited: ModelTurn = {
      when: (r) => r.model === 'a-model' && Date.now() < resetAt,
      reply: () => {
        seen.push({ model: 'a-model', at: Date.now(), status: 429 });
        return { error: { status: 429, headers: { 'retry-after-ms': String(Math.max(1, resetAt - Date.now())) } } };
      },
    };
    const after = (model: string): ModelTurn => ({
      when: (r) => r.model === model && (model !== 'a-model' || Date.now() >= resetAt),
      reply: () => {
        seen.push({ model, at: Date.now(), status: 200 });
        return { text: 'Done.' };
      },
    });
    server.script([
      ...Array.from({ length: 8 }, () => limited),
      ...Array.from({ length: 4 }, () => after('a-model')),
      ...others,
      after('b-model'),
    ]);
  }

  it('a 429 with a reset 3 s ahead holds all four attempts on the provider without a slot while another provider runs; all resume within 1 s of the reset', async () => {
    const engine = await open({
      runners: builtin(),
      maxParallel: 4,
      roster: parseRoster({ entries: ENTRIES }, 'config test'),
    });
    const resetAt = Date.now() + 3_000;
    const seen: { model: string; at: number; status: number }[] = [];
    script(resetAt, seen);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const tasks = ['a1', 'a2', 'a3', 'a4'].map((name) => ({
      name,
      type: 'implement',
      instruction: `say done (${name})`,
    }));
    const { job } = engine.submit({ workspace: ws, verify: 'none', parallel: true, tasks });
    expect((await engine.waitFor(job.id, 'worker:a1:rate_limited', 10)).met).toBe(true);
    // another provider's job gets a slot meanwhile: the waiting attempts hold none
    const other = engine.submit({
      workspace: makeWorkspace({ 'b.txt': 'b\n' }, { git: true }),
      verify: 'none',
      tasks: [{ name: 'b1', type: 'triage', instruction: 'say done (b1)' }],
    });
    await engine.settled(other.job.id);
    expect(Date.now()).toBeLessThan(resetAt);
    expect(engine.get(other.job.id).status).toBe('done');
    const stats = engine.stats().providers.find((p) => p.provider === 'prov-a');
    expect(stats?.suspended_until).toBeGreaterThan(epochS());
    expect(stats?.waiting).toEqual([job.id]);
    await engine.settled(job.id);
    const final = engine.get(job.id);
    expect(final.status).not.toBe('error');
    expect(resultOf(final).workers.map((w) => w.status)).toEqual(['done', 'done', 'done', 'done']);
    const resumed = seen.filter((s) => s.model === 'a-model' && s.status === 200).map((s) => s.at - resetAt);
    expect(resumed).toHaveLength(4);
    for (const late of resumed) {
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(1_000);
    }
  });

  it('with a fallback on the roster, the work moves to the other provider instead of waiting, and each attempt says why', async () => {
    const entries = [
      { ...ENTRIES[0], fallback: 'c' },
      ENTRIES[1],
      {
        id: 'c',
        runner: 'builtin',
        model: 'c-model',
        provider: 'prov-c',
        billing: 'free',
        cost: 'low',
        tasks: ['implement'],
      },
    ];
    const engine = await open({ runners: builtin(), maxParallel: 2, roster: parseRoster({ entries }, 'config test') });
    const resetAt = Date.now() + 3_000;
    const seen: { model: string; at: number; status: number }[] = [];
    const onC: ModelTurn[] = Array.from({ length: 4 }, () => ({
      when: (r) => r.model === 'c-model',
      reply: () => (seen.push({ model: 'c-model', at: Date.now(), status: 200 }), { text: 'Done on c.' }),
    }));
    script(resetAt, seen, onC);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const tasks = ['a1', 'a2', 'a3', 'a4'].map((name) => ({
      name,
      type: 'implement',
      instruction: `say done (${name})`,
    }));
    const { job } = engine.submit({ workspace: ws, verify: 'none', parallel: true, tasks });
    await engine.settled(job.id);
    expect(Date.now()).toBeLessThan(resetAt);
    const workers = resultOf(engine.get(job.id, { full: true })).workers;
    expect(workers.map((w) => [w.status, w.entry, w.model])).toEqual(
      Array.from({ length: 4 }, () => ['done', 'c', 'c-model']),
    );
    for (const w of workers)
      expect(w.rerouted).toMatch(/provider prov-a is suspended until .* — moved to fallback entry c \(prov-c\)/);
    expect(seen.filter((s) => s.model === 'c-model')).toHaveLength(4);
  });

  it('a builtin worker against a priced api endpoint records dollars: its tokens × the configured price', async () => {
    const engine = await open({
      runners: builtin(),
      billing: { builtin: 'api' },
      operations: { prices: { 'a-model': { input_per_mtok: 2, output_per_mtok: 10 } } },
    });
    server.script([{ text: 'Done.', usage: { input: 1_000, output: 200 } }]);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'priced', runner: 'builtin', model: 'a-model', instruction: 'say done' }],
    });
    await engine.waitFor(job.id, 'phase:awaiting approval', 10);
    engine.approve(job.id, true);
    await engine.settled(job.id);
    const result = resultOf(engine.get(job.id));
    // 1,000 × $2 + 200 × $10 per million tokens
    expect(result.workers[0]).toMatchObject({ cost_usd: 0.004, spend: '$0.004 (api)' });
    expect(result.totals).toMatchObject({ cost_usd: 0.004, spend: '$0.004 api' });
  });

  it('a fallback is refused when it would need a yes, is on the same provider, or is not an entry', () => {
    const base = { entries: [{ ...ENTRIES[0], fallback: 'x' }, ENTRIES[1]] };
    expect(() => parseRoster(base, 'r.json')).toThrow(
      /roster\.entries\[0\]\.fallback: "x" is not an entry of the roster \(entries: a, b\)/,
    );
    expect(() =>
      parseRoster(
        {
          entries: [
            { ...ENTRIES[0], fallback: 'b' },
            { ...ENTRIES[1], provider: 'prov-a' },
          ],
        },
        'r.json',
      ),
    ).toThrow(/same provider \(prov-a\)/);
    expect(() =>
      parseRoster(
        {
          entries: [
            { ...ENTRIES[0], fallback: 'b' },
            { ...ENTRIES[1], billing: 'api' },
          ],
        },
        'r.json',
      ),
    ).toThrow(/bills api: a fallback takes work without asking/);
  });
});

describe('the unattended breaker (spec 07)', () => {
  it('three failing unattended jobs open it; a cancelled one neither trips nor clears it; the cool-down closes it', async () => {
    let offsetS = 0;
    const engine = await open({
      operations: { breaker: { trip_after: 3, cooldown_s: 600 }, now: () => epochS() + offsetS },
    });
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const failing = {
      workspace: ws,
      verify: 'none',
      unattended: true,
      tasks: [{ name: 'f', runner: 'shell', instruction: 'exit 1' }],
    };
    const run = async (body: object) => {
      const { job } = engine.submit(body);
      await engine.settled(job.id);
      return engine.get(job.id);
    };
    // one task that exits 1: not one worker done, a failure outright
    expect((await run(failing)).status).not.toBe('done');
    expect((await run(failing)).status).not.toBe('done');
    // a cancelled unattended job between them counts for nothing
    const { job: slow } = engine.submit({
      ...failing,
      tasks: [{ name: 's', runner: 'shell', instruction: 'sleep 30' }],
    });
    await engine.waitFor(slow.id, 'worker:s:running', 10);
    engine.cancel(slow.id);
    await engine.settled(slow.id);
    expect(engine.get(slow.id).status).toBe('cancelled');
    expect(engine.stats().breaker.open).toBe(false);
    expect((await run(failing)).status).not.toBe('done');

    const refused = refusal(() => engine.submit(failing));
    expect(refused.code).toBe('breaker_open');
    expect(refused.extra.retry_after_s).toBeGreaterThan(590);
    expect(refused.message).toMatch(/3 unattended jobs in a row failed outright/);
    expect(engine.stats().breaker).toMatchObject({ open: true, failures: 3 });
    // an interactive job is not held by it
    expect(
      (
        await run({
          ...failing,
          unattended: undefined,
          tasks: [{ name: 'ok', runner: 'shell', instruction: 'echo ok > attended.txt' }],
        })
      ).status,
    ).toBe('done');
    // after the cool-down the next unattended job may try; its success clears it
    offsetS = 601;
    expect(
      (await run({ ...failing, tasks: [{ name: 'ok', runner: 'shell', instruction: 'echo ok > ok.txt' }] })).status,
    ).toBe('done');
    offsetS = 0;
    expect(engine.stats().breaker.open).toBe(false);
  });
});
