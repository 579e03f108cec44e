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
  route(task: TaskSpec): Route {
    return { runner: task.runner, model: task.model, entry: task.roster?.entry ?? null, provider: task.roster?.provider ?? null };
  }
}
