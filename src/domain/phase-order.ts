// spec 06 "Phase order": a reviewer must see the implementers' diff, not the base, so a job never
// holds an implementer and a reviewer or verifier of the same work in one parallel batch.
import type { TaskType } from './status.js';
import { policyRoleOf } from './write-policy.js';
import { orderByImpact, type TaskImpact } from './objectives.js';

/** Task types that run after a job's implementers, in a later phase (spec 06). */
const LATE_TYPES: ReadonlySet<TaskType> = new Set(['review', 'verify']);

/** How the job's tasks were put in another order than the request's, and why (the answer's `task_order`). */
export interface TaskOrder {
  /**
   * `phase`: reviewers and verifiers after the implementers (spec 06); `impact`: a sequential job's
   * tasks that name objectives, highest impact first (spec 07); `phase+impact`: both — the phases
   * hold, and the impact order applies within each phase.
   */
  by: 'phase' | 'impact' | 'phase+impact';
  /** The tasks as the request wrote them. */
  from: string[];
  /** The tasks in the order they run. */
  to: string[];
  /** The batches they run in, one after the other (a sequential job runs each batch's tasks in order). */
  phases: string[][];
  /** The reason, in words. */
  why: string;
  /** By impact: the tasks that name objectives, in the order they run, each with the objectives it names and the impact it took. */
  impact?: { task: string; objectives: string[]; score: number }[];
}

/** The batches a job's tasks run in: implementers first, then the review/verify tasks, when the job has both; else one. */
export function taskPhases<T extends { name: string; type: TaskType }>(tasks: readonly T[]): T[][] {
  const late = tasks.filter((t) => LATE_TYPES.has(t.type));
  const hasImplementers = tasks.some((t) => policyRoleOf(t, 'worker') === 'implementer');
  if (late.length === 0 || !hasImplementers) return [[...tasks]];
  return [tasks.filter((t) => !LATE_TYPES.has(t.type)), late];
}

/**
 * The job's `task_order` when phasing or objectives changed something: a parallel job split in
 * batches, or a sequential job whose order moved; null when the tasks run as written. `impacts`
 * (spec 07) orders a sequential job's tasks that name objectives within each phase; a parallel
 * job is never ordered by impact.
 */
export function taskOrderOf(
  tasks: readonly { name: string; type: TaskType }[],
  parallel: boolean,
  impacts: ReadonlyMap<string, TaskImpact> | null = null,
): TaskOrder | null {
  const phased = taskPhases(tasks);
  const phases = phased.map((phase) => phase.map((t) => t.name));
  const from = tasks.map((t) => t.name);
  const to = phases.flat();
  const moved = to.some((name, i) => name !== from[i]);
  const late = phases[1]?.join(', ') ?? '';
  const phaseWhy = parallel
    ? `${late} run after the implementers, against their changes: a reviewer must see the implementers' diff, not the base`
    : `${late} moved after the implementers, to run against their changes`;
  const ranked =
    impacts !== null && !parallel ? phased.map((phase) => orderByImpact(phase, impacts).map((t) => t.name)) : phases;
  const byImpact = ranked.flat();
  if (impacts !== null && byImpact.some((name, i) => name !== to[i])) {
    const impact = byImpact.flatMap((task) => {
      const it = impacts.get(task);
      return it ? [{ task, objectives: it.objectives, score: it.score }] : [];
    });
    const impactWhy = `tasks naming objectives run highest impact first (impact: ${impact.map((t) => `${t.task} ${t.score}`).join(', ')}); the others keep their places`;
    return {
      by: moved ? 'phase+impact' : 'impact',
      from,
      to: byImpact,
      phases: ranked,
      why: moved ? `${phaseWhy}; within each phase, ${impactWhy}` : impactWhy,
      impact,
    };
  }
  if (phases.length < 2 || (!parallel && !moved)) return null;
  return { by: 'phase', from, to, phases, why: phaseWhy };
}
