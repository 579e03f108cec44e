import type { TaskSpec } from '../../domain/request.js';
import type { Route } from '../../domain/route.js';
import type { LedgerEntry } from '../attempt-ledger.js';

/**
 * Picks the route (runner, model, roster entry) of a task's next attempt from the task and its
 * attempts so far (issue 12). The roster's router (issue 14) plugs in here: it may pick another
 * runner or model for a fix round or climb a rung for an escalation.
 */
export interface Router {
  route(task: TaskSpec, history: readonly LedgerEntry[]): Route;
}

/**
 * Today's routing: the task's own runner and model. The configured default runner is applied at
 * admission (request.ts), so a request naming none is refused before anything starts when there is
 * no default, and the job's spec records the runner a restart would use.
 */
export class TaskRouter implements Router {
  /** A later attempt (a fix round, a retry) stays where the task's last one ran: a climb up the ladder (spec 05) moved it there. */
  route(task: TaskSpec, history: readonly LedgerEntry[] = []): Route {
    const endpoint = task.roster?.endpoint;
    return history.at(-1)?.route ?? { runner: task.runner, model: task.model, entry: task.roster?.entry ?? null, provider: task.roster?.provider ?? null, ...(endpoint ? { endpoint } : {}) };
  }
}
