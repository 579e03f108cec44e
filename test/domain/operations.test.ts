import { describe, expect, it } from 'vitest';
import { breakerState, type UnattendedEnd } from '../../src/domain/breaker.js';
import { judgeBudget, windowOf, type BudgetRule } from '../../src/domain/budget.js';
import { spendOf, spendText, totalSpend } from '../../src/domain/spend.js';

const usage = { costUsd: null, inputTokens: 1_000, outputTokens: 500, rounds: 3, durationMs: 12_340 };
const at = (iso: string) => Date.parse(iso) / 1000;

describe('spend is recorded honestly (issue 15)', () => {
  it('api: the runner’s own dollars, else tokens × the configured price, else null with the reason', () => {
    expect(spendOf({ ...usage, costUsd: 0.25 }, 'api', { started: true, model: 'm', price: null }).usd).toBe(0.25);
    const priced = spendOf(usage, 'api', {
      started: true,
      model: 'm',
      price: { input_per_mtok: 3, output_per_mtok: 15 },
    });
    expect(priced).toMatchObject({ usd: 0.0105, tokens: 1_500, requests: 3, unknown: null });
    const unknown = spendOf(usage, 'api', { started: true, model: 'm', price: null });
    expect(unknown.usd).toBeNull();
    expect(unknown.unknown).toMatch(/no price is configured for model "m" — set prices/);
    expect(spendText(unknown)).toMatch(/^cost unknown \(api\)/);
  });

  it('subscription counts requests and tokens; free counts wall-seconds; an attempt that never ran spent nothing', () => {
    expect(spendOf(usage, 'subscription', { started: true, model: null, price: null })).toMatchObject({
      usd: null,
      requests: 3,
      tokens: 1_500,
      unknown: null,
    });
    const silent = spendOf({ ...usage, inputTokens: 0, outputTokens: 0, rounds: 0 }, 'subscription', {
      started: true,
      model: null,
      price: null,
    });
    expect(silent.unknown).toMatch(/neither requests nor tokens/);
    expect(spendOf(usage, 'free', { started: true, model: null, price: null })).toMatchObject({
      seconds: 12.3,
      unknown: null,
    });
    expect(spendOf(usage, 'api', { started: false, model: 'm', price: null })).toMatchObject({ usd: 0, unknown: null });
  });

  it('a job’s total dollars are null as soon as one api attempt’s are unknown, and the words say so', () => {
    const known = spendOf({ ...usage, costUsd: 0.5 }, 'api', { started: true, model: 'm', price: null });
    const unknown = spendOf(usage, 'api', { started: true, model: 'm', price: null });
    const free = spendOf(usage, 'free', { started: true, model: null, price: null });
    expect(
      totalSpend([
        { name: 'a', spend: known },
        { name: 'b', spend: free },
      ]),
    ).toEqual({ cost_usd: 0.5, spend: '$0.50 api; 12.3 s free' });
    const mixed = totalSpend([
      { name: 'a', spend: known },
      { name: 'b', spend: unknown },
    ]);
    expect(mixed.cost_usd).toBeNull();
    expect(mixed.spend).toMatch(/^cost unknown for b \(api: /);
    // free is not unknown: no api attempt, 0 dollars
    expect(totalSpend([{ name: 'b', spend: free }]).cost_usd).toBe(0);
  });
});

describe('budget windows (spec 07)', () => {
  const rule = (window: BudgetRule['window'], limit = 10): BudgetRule => ({
    provider: 'p',
    entry: null,
    window,
    unit: 'usd',
    limit,
    pace_margin: 0.2,
  });

  it('a day is a UTC calendar day; a week an ISO week from Monday 00:00 UTC; 5h-rolling the last five hours', () => {
    const now = at('2026-12-02T15:30:00Z'); // a Wednesday
    expect(windowOf('day', now)).toEqual({ start: at('2026-12-02T00:00:00Z'), end: at('2026-12-03T00:00:00Z') });
    expect(windowOf('week', now)).toEqual({ start: at('2026-11-30T00:00:00Z'), end: at('2026-12-07T00:00:00Z') });
    expect(windowOf('week', at('2026-12-06T23:59:00Z')).start).toBe(at('2026-11-30T00:00:00Z'));
    expect(windowOf('week', at('2026-12-07T00:00:00Z')).start).toBe(at('2026-12-07T00:00:00Z'));
    expect(windowOf('5h-rolling', now)).toEqual({ start: now - 5 * 3600, end: now });
  });

  it('spent pauses until the window ends; a rolling window reopens when enough old spend ages out', () => {
    const now = at('2026-12-02T20:00:00Z');
    const spent = judgeBudget(rule('day'), [{ at: now - 60, amount: 11 }], now);
    expect(spent).toMatchObject({ state: 'spent', spent: 11, pause_until: at('2026-12-03T00:00:00Z') });
    const points = [
      { at: now - 4 * 3600, amount: 6 },
      { at: now - 3600, amount: 5 },
    ];
    expect(judgeBudget(rule('5h-rolling'), points, now)).toMatchObject({
      state: 'spent',
      pause_until: now - 4 * 3600 + 5 * 3600,
    });
    // unknown spend is counted apart, never as 0 dollars that would hide it
    expect(judgeBudget(rule('day'), [{ at: now - 60, amount: null }], now)).toMatchObject({
      state: 'ok',
      spent: 0,
      unknown: 1,
    });
  });

  it('ahead of pace: more of the limit spent than of the window gone, beyond the margin', () => {
    const now = at('2026-12-02T06:00:00Z'); // a quarter of the day gone
    const ahead = judgeBudget(rule('day'), [{ at: now - 60, amount: 5 }], now);
    expect(ahead.state).toBe('ahead');
    // pace catches up when the day's share reaches 50% - 20% = 30%
    expect(ahead.pause_until).toBeCloseTo(at('2026-12-02T00:00:00Z') + 0.3 * 86_400, 3);
    expect(judgeBudget(rule('day'), [{ at: now - 60, amount: 4 }], now).state).toBe('ok');
  });
});

describe('the unattended breaker (spec 07)', () => {
  const job = (id: string, status: UnattendedEnd['status'], done: number, finished: number): UnattendedEnd => ({
    id,
    status,
    finished,
    workersDone: done,
    workers: 1,
  });
  const settings = { trip_after: 3, cooldown_s: 600 };

  it('opens after three failed outright in a row; cancelled, interrupted and mixed neither trip nor clear it', () => {
    const now = 10_000;
    const failed = [
      job('f3', 'error', 0, now - 10),
      job('f2', 'partial', 0, now - 20),
      job('f1', 'error', 0, now - 30),
    ];
    expect(breakerState(failed, settings, now)).toMatchObject({ open: true, retry_after_s: 590 });
    const withNeutral = [
      failed[0],
      job('c', 'cancelled', 0, now - 15),
      job('m', 'partial', 1, now - 17),
      failed[1],
      job('i', 'interrupted', 0, now - 25),
      failed[2],
    ] as UnattendedEnd[];
    expect(breakerState(withNeutral, settings, now)).toMatchObject({ open: true, failures: ['f3', 'f2', 'f1'] });
    expect(breakerState(failed.slice(0, 2), settings, now).open).toBe(false);
  });

  it('a success clears it; the cool-down lets the next one try', () => {
    const now = 10_000;
    const failed = [job('f3', 'error', 0, now - 10), job('f2', 'error', 0, now - 20), job('f1', 'error', 0, now - 30)];
    expect(breakerState([job('ok', 'done', 1, now - 5), ...failed], settings, now).open).toBe(false);
    expect(breakerState(failed, settings, now + 600).open).toBe(false);
  });
});
