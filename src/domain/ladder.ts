// spec 05 "Escalation": the cost ladder of a task type — the roster's entries that take it, cheapest
// tier first — and the rung above a given one. Pure data over the roster; no model or type is named here.
import { COST_TIERS, type CostTier, type Rung } from './route.js';
import type { Roster, RosterEntry } from './roster.js';
import type { TaskType } from './status.js';

/** A tier's rank: `free < low < mid < high`. */
export function tierRank(cost: CostTier): number {
  return COST_TIERS.indexOf(cost);
}

/**
 * The entries that take `type` and whose runner this build can run, cheapest tier first; entries of
 * one tier keep the roster's order (the tie-break).
 */
export function ladderOf(roster: Roster, type: TaskType, available: readonly string[]): RosterEntry[] {
  const rungs = roster.entries.filter((e) => e.tasks.includes(type) && available.includes(e.runner));
  return rungs
    .map((e, i) => ({ e, i }))
    .sort((a, b) => tierRank(a.e.cost) - tierRank(b.e.cost) || a.i - b.i)
    .map(({ e }) => e);
}

/** An entry as a rung of its ladder. */
export function rungOf(e: RosterEntry): Rung {
  return {
    entry: e.id,
    runner: e.runner,
    model: e.model,
    provider: e.provider,
    billing: e.billing,
    cost: e.cost,
    approve: e.approve,
    endpoint: e.endpoint,
  };
}

/**
 * One rung up from `current`: the cheapest rung strictly above its tier (ladder order among equals);
 * null when there is none — the task goes back to its spawner.
 */
export function rungAbove<R extends { cost: CostTier }>(ladder: readonly R[], current: CostTier): R | null {
  return ladder.find((r) => tierRank(r.cost) > tierRank(current)) ?? null;
}
