/**
 * Who carries out one attempt of a task (issue 12): the runner, the model it is asked for, and the
 * roster entry that chose them. The Router (engine/routing) picks one per attempt from the task and
 * its attempts so far, so a fix round, a retry or an escalation can each carry another.
 */
export interface Route {
  /** The runner key (`shell`, `builtin`, `claude`, …). */
  runner: string;
  /** The model asked for; null: the runner's own default. */
  model: string | null;
  /** The roster entry the route came from; null when the task named its runner (or no roster applies). */
  entry: string | null;
  /** The roster entry's provider; null without an entry. */
  provider: string | null;
  /** The `models.<name>` the entry names: builtin's calls go there, an agent CLI is pointed at it; absent: the runner's own. */
  endpoint?: string;
}

/** Who pays for a route's model calls (spec 04 "Environment and billing"; the same words as config `runners.<key>.billing`). */
export const BILLINGS = ['free', 'subscription', 'api'] as const;
export type Billing = (typeof BILLINGS)[number];

/** Cost tiers of the roster (spec 05): `free < low < mid < high`. */
export const COST_TIERS = ['free', 'low', 'mid', 'high'] as const;
export type CostTier = (typeof COST_TIERS)[number];

/**
 * The roster entry that routed a task at submission (spec 05 "Routing"), kept on the task so a
 * restart runs it where it was routed and its asks, attempts and outcome name the entry. `null`
 * entry: a routing null — nothing rostered takes the task's type; it is asked, never dropped.
 */
export interface RosterPick {
  entry: string | null;
  provider: string | null;
  billing: Billing;
  cost: CostTier | null;
  /** Whether the entry is marked `approve: true` (its tasks always ask under `approval: "auto"`). */
  approve: boolean;
  /** The entry's `models.<name>` (builtin's calls, or its agent CLI, go there), when it names one. */
  endpoint?: string;
  /** Why this route, in words (`first roster entry taking "fix"`, `nothing is rostered for "design"`). */
  why: string;
  /**
   * The task type's cost ladder as the roster had it at admission, cheapest first (spec 05
   * "Escalation" climbs it). Kept on the task: a roster file a worker changes mid-job moves nothing.
   */
  ladder?: Rung[];
  /**
   * Fallback rungs by the entry they stand in for (the picked entry's and its ladder's, issue 15), as
   * the roster had them at admission: only entries that take the task's type and can run here.
   */
  fallbacks?: Record<string, Rung>;
  /** The learning router's decision (spec 05, `routing.learn`): the figures it started the task on; `why` says them in words. */
  learned?: { skipped: RungFigures[]; figures: RungFigures | null };
}

/** One rung of a cost ladder: a roster entry, without the types it takes. */
export interface Rung {
  entry: string;
  runner: string;
  model: string | null;
  provider: string;
  billing: Billing;
  cost: CostTier;
  approve: boolean;
  endpoint: string | null;
}

/** One rung's record for a type, and the interval the decision read. */
export interface RungFigures {
  /** The roster entry's id. */
  entry: string;
  /** Its accepted outcomes for the type. */
  accepted: number;
  /** All its outcomes for the type. */
  total: number;
  /** Wilson lower bound of its acceptance rate. */
  lower: number;
  /** Wilson upper bound of its acceptance rate. */
  upper: number;
}
