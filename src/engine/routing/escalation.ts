import { abstainedUpward, gatesVerdict, type GateReading, type TaskGatesJson } from '../../domain/gates.js';
import { failingWhy, type EscalationJson, type RungAttempt } from '../../domain/escalation.js';
import type { Router } from './router.js';
import { askCause, type ApprovalPolicy } from '../../domain/approval.js';
import type { TaskSpec } from '../../domain/request.js';
import type { VerificationJson } from '../../domain/result.js';
import type { Rung } from '../../domain/route.js';
import { describeFailures } from '../../verification/describe-failures.js';
import { checkTaskGates, type GateInput } from '../pipeline/gates.js';
import type { JobContext } from '../job-context.js';
import type { WorkerEnd } from '../pipeline/attempt-run.js';

/** How much of a worker's report the autopsy keeps. */
const NOTE_CHARS = 300;

/** A rung that needs a yes before it runs (spec 05), by the rule a task's start is asked by (`askCause`). */
export function needsYes(
  rung: Rung,
  approval: 'auto' | 'required' | 'never',
  policyDefault: ApprovalPolicy['default'],
): boolean {
  return askCause(rung, approval, policyDefault) !== null;
}

/** Each task's gates on its latest work (tasks whose work never got a process are not gated). */
export async function gateTasks(
  ctx: JobContext,
  tasks: readonly TaskSpec[],
  workers: readonly WorkerEnd[],
  input: Omit<GateInput, 'worker'>,
): Promise<TaskGatesJson[]> {
  const out: TaskGatesJson[] = [];
  for (const task of tasks) {
    const worker = workers.find((w) => w.plan.task === task);
    if (!worker?.started) continue;
    const results = await checkTaskGates(ctx, task, { ...input, worker });
    out.push({ task: task.name, worker: worker.plan.name, verdict: gatesVerdict(results), results });
  }
  return out;
}

/** The next climb: a task, the rung it goes to, why, and what its rungs so far left behind. */
export interface Climb {
  task: TaskSpec;
  to: Rung;
  why: string;
  /** The failing rung's gates' verdict (recorded on its superseded attempt). */
  verdict: GateReading;
  autopsy: RungAttempt[];
}

interface Ladder {
  at: Rung;
  /** Rungs that failed (an abstention upward is not a failure). */
  failed: number;
  autopsy: RungAttempt[];
  /** Passed, or returned: no more climbing. */
  over: boolean;
}

/**
 * spec 05 "Escalation" for a scope's tasks: after the work is judged, the first task whose rung
 * failed climbs one rung up its ladder (the cheapest entry strictly above), the autopsy with it;
 * after two failed rungs, or with no rung above, it is returned to its spawner with the autopsy.
 * Only a task the roster routed has a ladder; a task that named its runner is judged where it ran.
 */
export class TaskLadders {
  readonly climbs: EscalationJson[] = [];
  readonly #ladders = new Map<TaskSpec, Ladder>();
  readonly #router: Pick<Router, 'climb'>;

  /** `router`: where each climb goes (the rung above, spec 05) is the Router's to say. */
  constructor(tasks: readonly TaskSpec[], router: Pick<Router, 'climb'>) {
    this.#router = router;
    for (const task of tasks) {
      const rungs = task.roster?.ladder ?? [];
      const at = rungs.find((r) => r.entry === task.roster?.entry);
      if (at) this.#ladders.set(task, { at, failed: 0, autopsy: [], over: false });
    }
  }

  /**
   * The next climb, or null. `judged`: each task's gates on its latest work; a blocking verification
   * is the share of `blamed(verification)` (the task whose worker a fix round would resume) when
   * several tasks share it.
   */
  next(
    workers: readonly WorkerEnd[],
    judged: readonly TaskGatesJson[],
    verification: VerificationJson,
    blamed: (v: VerificationJson) => string,
  ): Climb | null {
    for (const [task, ladder] of this.#ladders) {
      if (ladder.over) continue;
      const end = workers.find((w) => w.plan.task === task);
      if (!end?.started) continue;
      const gates = judged.find((g) => g.task === task.name);
      const blocks =
        (verification.blocking || verification.could_not_start === true) &&
        (this.#ladders.size === 1 || blamed(verification) === task.name);
      const attempt: RungAttempt = {
        worker: end.plan.name,
        entry: ladder.at.entry,
        runner: ladder.at.runner,
        model: ladder.at.model,
        status: end.report.status,
        // issue 33: a rung whose verification blocked failed, whatever its gates said
        verdict: blocks ? 'fail' : (gates?.verdict ?? 'pass'),
        gates: gates?.results ?? [],
        verification: blocks ? verification.summary : null,
        ...(blocks ? { failures: describeFailures(verification) } : {}),
        abstained: abstainedUpward(end.report.summary),
        note: end.report.summary.trim().slice(-NOTE_CHARS),
      };
      const why = failingWhy(attempt);
      if (why === null) {
        ladder.over = true;
        continue;
      }
      ladder.autopsy.push(attempt);
      // spec 05: a worker that abstained upward is honoured, never counted as a failed rung
      if (attempt.abstained === null) ladder.failed++;
      const to = ladder.failed >= 2 ? null : this.#router.climb(task, ladder.at);
      if (to === null) {
        ladder.over = true;
        const end = ladder.failed >= 2 ? 'two rungs failed' : 'no rung above';
        this.climbs.push({
          task: task.name,
          from: ladder.at.entry,
          to: null,
          why: `${why}; ${end}: returned to its spawner with the autopsy`,
          returned: true,
          autopsy: [...ladder.autopsy],
        });
        continue;
      }
      this.climbs.push({ task: task.name, from: ladder.at.entry, to: to.entry, why, autopsy: [...ladder.autopsy] });
      ladder.at = to;
      return { task, to, why, verdict: gates?.verdict ?? 'pass', autopsy: [...ladder.autopsy] };
    }
    return null;
  }

  /** A person said no to the climb: the task is returned to its spawner where it stands. */
  denied(task: TaskSpec): void {
    const ladder = this.#ladders.get(task);
    if (ladder) ladder.over = true;
    const last = this.climbs.findLast((c) => c.task === task.name);
    if (last)
      Object.assign(last, {
        why: `${last.why}; the climb to ${last.to ?? ''} was not approved: returned to its spawner`,
        returned: true,
        denied: true,
      });
  }

  /** Tasks returned to their spawner. */
  get returned(): Set<string> {
    return new Set(this.climbs.filter((c) => c.returned).map((c) => c.task));
  }
}
