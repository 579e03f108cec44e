import type { TaskSpec } from '../../domain/request.js';
import type { Billing, Route, Rung } from '../../domain/route.js';
import { admittedRoute, billingOfRoute, fallbackOf, routeOfRung, rungAboveOf } from '../../domain/routing.js';
import type { LedgerEntry } from '../pipeline/attempt-ledger.js';

/**
 * Where each attempt of a task runs, and who pays for it (issue 12, issue 34): the one place the
 * pipeline asks, for every attempt — a first attempt, a fix round, a retry, a node's takeover, a
 * climb, a fallback. Its decisions are domain/routing.ts's, where admission's first route is
 * decided too; an embedder may put another Router in (EngineOptions.router).
 */
export interface Router {
  /** The route of the task's next attempt, given its attempts so far. */
  route(task: TaskSpec, history: readonly LedgerEntry[]): Route;
  /** The rung a climb from `at` goes to; null: none above (the task is returned to its spawner). */
  climb(task: TaskSpec, at: Pick<Rung, 'cost'>): Rung | null;
  /** The route an attempt held on `route`'s provider moves to without asking (its entry's fallback); null: none. */
  fallback(task: TaskSpec, route: Route): Route | null;
  /** Who pays for an attempt of `task` on `route`: what its spend is recorded as, and whether it needs a yes. */
  billing(task: TaskSpec, route: Route): Billing;
}

/**
 * The roster's router: a first attempt runs where admission routed the task; a later one (a fix
 * round, a retry) where its last attempt ran — a climb or a fallback moved it there.
 */
export function rosterRouter(byRunner: (runner: string) => Billing): Router {
  return {
    route: (task, history) => history.at(-1)?.route ?? admittedRoute(task),
    climb: (task, at) => rungAboveOf(task, at),
    fallback: (task, route) => {
      const rung = fallbackOf(task, route);
      return rung === null ? null : routeOfRung(rung);
    },
    billing: (task, route) => billingOfRoute(task, route, byRunner),
  };
}
