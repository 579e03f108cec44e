// spec 07 "Budgets and the breaker": a spend allowance for a provider (or one roster entry) over a
// window, judged before an attempt starts. `day` is a UTC calendar day, `week` an ISO week in UTC,
// `5h-rolling` the last five hours (a subscription's usage window). Pure: the engine brings the
// spend points and the clock.

export const BUDGET_WINDOWS = ['day', 'week', '5h-rolling'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOWS)[number];
/** What a budget counts: dollars (`api`), requests or tokens (`subscription`), wall-seconds (`free`). */
export const BUDGET_UNITS = ['usd', 'requests', 'tokens', 'seconds'] as const;
export type BudgetUnit = (typeof BUDGET_UNITS)[number];

/** Ahead of pace means spent a larger share of the limit than of the window's time, by more than this. */
export const DEFAULT_PACE_MARGIN = 0.2;
const ROLLING_S = 5 * 3600;
const DAY_S = 86_400;

/** One configured budget (config `budgets[]`). */
export interface BudgetRule {
  provider: string;
  /** Only this roster entry's attempts; null: every attempt on the provider. */
  entry: string | null;
  window: BudgetWindow;
  unit: BudgetUnit;
  limit: number;
  pace_margin: number;
}

/** One finished attempt's spend in the budget's unit; null when it is unknown (counted apart, never as 0). */
export interface SpendPoint {
  /** When it ended, epoch seconds. */
  at: number;
  amount: number | null;
}

/** A budget as judged now. */
export interface BudgetState {
  rule: BudgetRule;
  /** The window's bounds, epoch seconds (a rolling window ends now). */
  start: number;
  end: number;
  spent: number;
  /** Attempts in the window whose spend is unknown. */
  unknown: number;
  /** `spent`: at or over the limit; `ahead`: ahead of pace (calendar windows only); `ok`. */
  state: 'ok' | 'ahead' | 'spent';
  /** When spending may go on: the window's end, or when enough spend leaves a rolling window, or when pace catches up; null when `ok`. */
  pause_until: number | null;
  /** In words, naming the budget. */
  why: string;
}

/** The window holding `now`: a UTC day, an ISO week (Monday 00:00 UTC), or the five hours up to now. */
export function windowOf(window: BudgetWindow, now: number): { start: number; end: number } {
  if (window === '5h-rolling') return { start: now - ROLLING_S, end: now };
  const dayStart = Math.floor(now / DAY_S) * DAY_S;
  if (window === 'day') return { start: dayStart, end: dayStart + DAY_S };
  // 1970-01-01 was a Thursday: days since the epoch + 3, mod 7, is days since Monday
  const sinceMonday = (Math.floor(now / DAY_S) + 3) % 7;
  const start = dayStart - sinceMonday * DAY_S;
  return { start, end: start + 7 * DAY_S };
}

/** Whether a budget counts an attempt on `provider` (its roster entry's, else its runner's key) and roster `entry`. */
export function budgetCounts(rule: BudgetRule, provider: string, entry: string | null): boolean {
  return rule.provider === provider && (rule.entry === null || rule.entry === entry);
}

/** The budget's name in messages: `anthropic day budget (5 usd)`. */
export function budgetName(rule: BudgetRule): string {
  return `${rule.entry !== null ? `roster entry ${rule.entry} (${rule.provider})` : rule.provider} ${rule.window} budget (${rule.limit} ${rule.unit})`;
}

/**
 * Judges a budget from the spend points of its window. Pace applies to calendar windows: a rolling
 * window has no elapsed share of its own, so it is only ever spent or not.
 */
export function judgeBudget(rule: BudgetRule, points: readonly SpendPoint[], now: number): BudgetState {
  const { start, end } = windowOf(rule.window, now);
  const inWindow = points.filter((p) => p.at >= start);
  const spent = inWindow.reduce((sum, p) => sum + (p.amount ?? 0), 0);
  const unknown = inWindow.filter((p) => p.amount === null).length;
  const base = { rule, start, end, spent: round(spent), unknown };
  const name = budgetName(rule);
  if (spent >= rule.limit) {
    const until = rule.window === '5h-rolling' ? rollingReopen(rule.limit, inWindow, spent) : end;
    return {
      ...base,
      state: 'spent',
      pause_until: until,
      why: `${name} is spent: ${round(spent)} of ${rule.limit} ${rule.unit} since ${iso(start)}`,
    };
  }
  if (rule.window !== '5h-rolling') {
    const timeShare = (now - start) / (end - start);
    const spentShare = spent / rule.limit;
    if (spentShare > timeShare + rule.pace_margin) {
      // the moment the window's elapsed share catches up with the spent share, less the margin
      const until = start + (spentShare - rule.pace_margin) * (end - start);
      const why = `${name} is ahead of pace: ${pct(spentShare)} spent with ${pct(timeShare)} of the window gone (margin ${pct(rule.pace_margin)})`;
      return { ...base, state: 'ahead', pause_until: Math.min(end, until), why };
    }
  }
  return {
    ...base,
    state: 'ok',
    pause_until: null,
    why: `${name}: ${round(spent)} of ${rule.limit} ${rule.unit} spent`,
  };
}

/** When enough of a rolling window's spend has aged out (oldest first) to be under the limit again. */
function rollingReopen(limit: number, points: readonly SpendPoint[], spent: number): number {
  let left = spent;
  for (const p of [...points].sort((a, b) => a.at - b.at)) {
    left -= p.amount ?? 0;
    if (left < limit) return p.at + ROLLING_S;
  }
  return (points.at(-1)?.at ?? 0) + ROLLING_S;
}

function round(n: number): number {
  return Math.round(n * 1e4) / 1e4;
}

function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** Epoch seconds as an ISO time to the second (UTC). */
export function iso(s: number): string {
  return new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
}
