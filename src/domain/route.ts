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
  /** The roster entry the route came from; null while routing is by the task's own runner (before the roster). */
  entry: string | null;
}
