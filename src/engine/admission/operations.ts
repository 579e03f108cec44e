// spec 07 "Budgets and the breaker" and issue 15's subscription windows: what may start, judged from
// the store (so every gaffer process on a data dir sees the same spend, suspensions and breaker)
// and one clock (a test moves it; nothing here sleeps).
import { breakerState, DEFAULT_BREAKER, type BreakerSettings, type BreakerState } from '../../domain/breaker.js';
import {
  budgetCounts,
  budgetName,
  judgeBudget,
  windowOf,
  type BudgetRule,
  type BudgetState,
} from '../../domain/budget.js';
import { GafferError } from '../../domain/errors.js';
import type { JobSpec, TaskSpec } from '../../domain/request.js';
import type { Billing, Route, Rung } from '../../domain/route.js';
import { spendOf, type Price, type Spend, type UsageFacts } from '../../domain/spend.js';
import type { Store } from '../../store/store.js';
import { epochS } from '../clock.js';

/** How the operations gate is set up (config `budgets`, `prices`, `breaker`) and its clock. */
export interface OperationsSettings {
  budgets: readonly BudgetRule[];
  prices: Readonly<Record<string, Price>>;
  breaker: BreakerSettings;
  /** Epoch seconds now; a test passes its own clock. */
  now: () => number;
}

export const DEFAULT_OPERATIONS: OperationsSettings = {
  budgets: [],
  prices: {},
  breaker: DEFAULT_BREAKER,
  now: epochS,
};

/** Finished unattended jobs the breaker reads back through. */
const BREAKER_LOOKBACK = 50;

/** The provider an attempt's spend and suspension count under: its roster entry's, else its runner's key. */
export function providerOf(route: Pick<Route, 'provider' | 'runner'>): string {
  return route.provider ?? route.runner;
}

/** Why an attempt may not start now, and until when (null: until something else changes). */
export interface Hold {
  state: 'provider_suspended' | 'budget_paused';
  provider: string;
  until: number | null;
  why: string;
}

/** A provider as `gaffer stats` shows it: its budgets in their windows, its suspension, the jobs waiting on it. */
export interface ProviderState {
  provider: string;
  budgets: {
    name: string;
    window: string;
    unit: string;
    limit: number;
    spent: number;
    unknown: number;
    state: BudgetState['state'];
    pause_until: number | null;
  }[];
  suspended_until: number | null;
  suspended_why: string | null;
  waiting: string[];
}

export class Operations {
  readonly #store: Store;
  readonly #settings: OperationsSettings;

  constructor(store: Store, settings: Partial<OperationsSettings> = {}) {
    this.#store = store;
    this.#settings = { ...DEFAULT_OPERATIONS, ...settings };
  }

  now(): number {
    return this.#settings.now();
  }

  /** The spend of one attempt from its report (issue 15): unknown stays null, never 0. */
  spendOf(report: UsageFacts, billing: Billing, model: string | null, started: boolean): Spend {
    const price = model !== null ? (this.#settings.prices[model] ?? null) : null;
    return spendOf(report, billing, { started, model, price });
  }

  recordSpend(jobId: string, worker: string, spend: Spend): void {
    this.#store.recordSpend(jobId, worker, spend);
  }

  /** The budgets that apply to a route, judged now. */
  budgetsOn(route: Pick<Route, 'provider' | 'runner' | 'entry'>): BudgetState[] {
    const now = this.now();
    return this.#settings.budgets
      .filter((b) => budgetCounts(b, providerOf(route), route.entry))
      .map((b) => this.#judge(b, now));
  }

  /** Every configured budget judged now, in the config's order (`gaffer doctor`). */
  budgets(): BudgetState[] {
    const now = this.now();
    return this.#settings.budgets.map((b) => this.#judge(b, now));
  }

  #judge(b: BudgetRule, now: number): BudgetState {
    return judgeBudget(
      b,
      this.#store.spendSince({
        provider: b.provider,
        entry: b.entry,
        unit: b.unit,
        since: windowOf(b.window, now).start,
      }),
      now,
    );
  }

  breaker(): BreakerState {
    return breakerState(this.#store.recentUnattendedEnds(BREAKER_LOOKBACK), this.#settings.breaker, this.now());
  }

  /**
   * spec 07, before a job starts: an unattended job meets the breaker; every budget of each route
   * the job starts on is asked — spent refuses (`budget_paused`), ahead of pace refuses an unattended
   * job and warns an interactive one. Returns the warnings; nothing is stored or started on a refusal.
   */
  admit(spec: JobSpec): string[] {
    const now = this.now();
    if (spec.unattended) {
      const breaker = this.breaker();
      if (breaker.open)
        throw new GafferError('breaker_open', `${breaker.why} — retry after ${breaker.retry_after_s} s`, undefined, {
          reason: breaker.why,
          retry_after_s: breaker.retry_after_s,
          failed_jobs: breaker.failures,
        });
    }
    const warnings: string[] = [];
    const seen = new Set<string>();
    for (const [i, task] of spec.tasks.entries()) {
      const route = { runner: task.runner, entry: task.roster?.entry ?? null, provider: task.roster?.provider ?? null };
      const key = `${providerOf(route)}\0${route.entry ?? ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      for (const b of this.budgetsOn(route)) {
        if (b.state === 'ok' || b.pause_until === null) continue;
        if (b.state === 'spent' || spec.unattended) throw budgetPaused(b, now, `tasks[${i}]`);
        warnings.push(
          `${b.why}: this interactive job runs anyway; an unattended one would wait until ${iso(b.pause_until)}`,
        );
      }
      const suspended = this.#suspension(providerOf(route), now);
      if (suspended)
        warnings.push(
          `provider ${suspended.provider} is suspended until ${iso(suspended.until)} (${suspended.why}): ${task.name} waits for it${task.roster?.fallbacks ? ' or moves to its fallback' : ''}`,
        );
    }
    return warnings;
  }

  /**
   * What holds an attempt on `route` now, before it takes a slot: its provider's suspension; a spent
   * budget (or, unattended, one ahead of pace); an unattended job behind a live interactive job on
   * the same provider (spec 07). Null: it may start.
   */
  holdOn(route: Pick<Route, 'provider' | 'runner' | 'entry'>, job: { id: string; unattended: boolean }): Hold | null {
    const provider = providerOf(route);
    const now = this.now();
    const suspended = this.#suspension(provider, now);
    if (suspended)
      return {
        state: 'provider_suspended',
        provider,
        until: suspended.until,
        why: `provider ${provider} is suspended until ${iso(suspended.until)}: ${suspended.why}`,
      };
    for (const b of this.budgetsOn(route)) {
      if (b.state === 'spent' || (b.state === 'ahead' && job.unattended))
        return {
          state: 'budget_paused',
          provider,
          until: b.pause_until,
          why: `${b.why}; waits until ${iso(b.pause_until ?? now)}`,
        };
    }
    if (job.unattended) {
      const live = this.#store.liveInteractiveOn(provider, job.id);
      if (live.length > 0)
        return {
          state: 'budget_paused',
          provider,
          until: null,
          why: `unattended: waits while interactive job ${live.join(', ')} is live on provider ${provider}`,
        };
    }
    return null;
  }

  /** A provider said it is rate-limited or out of quota: all its attempts wait until `until` (a later suspension already set is kept). */
  suspend(provider: string, until: number, why: string): void {
    this.#store.suspendProvider({ provider, until, why, since: this.now() });
  }

  /** Each provider with a budget, a suspension or waiting jobs, for `gaffer stats` and `GET /api/stats`. */
  providers(): ProviderState[] {
    const now = this.now();
    const suspensions = this.#store.listSuspensions(now);
    const names = [
      ...new Set([...this.#settings.budgets.map((b) => b.provider), ...suspensions.map((s) => s.provider)]),
    ].sort();
    return names.map((provider) => {
      const suspension = suspensions.find((s) => s.provider === provider) ?? null;
      const budgets = this.#settings.budgets
        .filter((b) => b.provider === provider)
        .map((b) => {
          const state = this.#judge(b, now);
          return {
            name: budgetName(b),
            window: b.window,
            unit: b.unit,
            limit: b.limit,
            spent: state.spent,
            unknown: state.unknown,
            state: state.state,
            pause_until: state.pause_until,
          };
        });
      return {
        provider,
        budgets,
        suspended_until: suspension?.until ?? null,
        suspended_why: suspension?.why ?? null,
        waiting: this.#store.jobsWaitingOn(provider),
      };
    });
  }

  #suspension(provider: string, now: number) {
    return this.#store.listSuspensions(now).find((s) => s.provider === provider) ?? null;
  }
}

/** The spec 02 `budget_paused` refusal: reason, pause_until (epoch s), retry_after_s. */
function budgetPaused(b: BudgetState, now: number, field: string): GafferError {
  const until = b.pause_until ?? now;
  const retry = Math.max(1, Math.ceil(until - now));
  return new GafferError('budget_paused', `${b.why} — nothing started; retry after ${iso(until)} (${retry} s)`, field, {
    reason: b.why,
    pause_until: until,
    retry_after_s: retry,
  });
}

function iso(s: number): string {
  return new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
}
