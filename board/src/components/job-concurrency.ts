// How a job's tasks ran — side by side or one after another — as what ran says it, not as the
// request asked: a parallel job's tasks still take turns where their runner cannot share the
// workspace, and a worktree job runs a task beside others only when its gates are safe to.
import type { FullJob } from './job-types.js';

/** A worker's run by its events' order: the `seq` of its `started` event and of its end (`done`/`error`; null while it runs). */
export interface WorkerRun {
  started: number;
  ended: number | null;
}

/** The most of `tasks`' first attempts that were running at one moment, by the order of their events. */
function mostAtOnce(tasks: readonly string[], runs: ReadonlyMap<string, WorkerRun>): number {
  const spans = tasks.flatMap((t) => {
    const run = runs.get(t);
    return run ? [{ from: run.started, to: run.ended ?? Number.POSITIVE_INFINITY }] : [];
  });
  // events are one total order: a run that started after another's end never counts beside it
  return spans.reduce((most, s) => Math.max(most, spans.filter((o) => o.from <= s.from && s.from < o.to).length), 0);
}

/**
 * The header's "Tasks" fact: the count, then how they ran — the worktree classes when the job has
 * them, else its first attempts' start and end events (a sequential request needs none).
 */
export function describeTaskRun(job: FullJob, runs: ReadonlyMap<string, WorkerRun>): string {
  const n = job.tasks.length;
  if (n < 2) return String(n);
  const asked = job.parallel ? ' (parallel was asked)' : '';
  const classes = job.result?.worktrees?.classes;
  if (classes && classes.length > 0) {
    const beside = classes.filter((c) => c.class === 'parallel').length;
    if (beside < 2) return `${n}, one after another${asked}`;
    return beside === n ? `${n}, in parallel` : `${n}: ${beside} in parallel, the others one after another`;
  }
  if (!job.parallel) return `${n}, one after another`;
  const most = mostAtOnce(
    job.tasks.map((t) => t.name),
    runs,
  );
  if (most >= n) return `${n}, in parallel`;
  if (most >= 2) return `${n}, up to ${most} at once`;
  // nothing seen side by side: said once the job has ended and its events are read (a live one may still start the next beside this one)
  return job.finished !== null && runs.size > 0 ? `${n}, one after another${asked}` : `${n}, parallel asked`;
}
