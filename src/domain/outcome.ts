// spec 05 "The outcome log and acceptance rate": one record per task per job, decided from the
// task's attempts when the job settles. Plain data and pure rules; engine/settle/outcome-log.ts writes it.
import type { TaskResult } from './attempt-results.js';
import type { Billing } from './route.js';
import type { EscalationJson } from './escalation.js';

/**
 * How a task ended on a rung, as the outcome log says it (a closed set). An outcome judges the model
 * that ran, so a rung none of whose attempts got a process is no outcome at all (outcome-log.ts);
 * a task that got a process on no rung is `not_dispatched`:
 * - `passed`: its final attempt closed through the result gates (`result_gates_passed`), its
 *   verification did not block, and its work ended `done` having changed what it was to change;
 * - `failed`: it ran and its gates did not pass (a not-ok worker fails them outright, spec 05);
 * - `cancelled`: the job was cancelled while it ran, before its gates were reached;
 * - `interrupted`: gaffer itself stopped under it (spec 01);
 * - `not_dispatched`: nothing of it ran — a person (or the ask's timeout) said no to its approval
 *   ask, or it was cancelled, held or could not launch before any attempt got a process; logged,
 *   never counted in an acceptance;
 * - `abstained`: the rung's worker said the task is beyond its brief and it climbed (spec 05: honoured,
 *   never counted as a failure — nor as an acceptance);
 * - `error`: gaffer failed under it while it ran.
 */
export const OUTCOME_STATUSES = [
  'passed',
  'failed',
  'cancelled',
  'interrupted',
  'not_dispatched',
  'abstained',
  'error',
] as const;
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/** One line of `outcomes.jsonl` (and one `outcomes` row): a task's terminal outcome in one job. */
export interface OutcomeRecord {
  /** When the job settled, ISO 8601. */
  ts: string;
  /** The job id. */
  job: string;
  /** The task's name in the job. */
  task: string;
  /** Which rung of its cost ladder: 1 where it started, 2 after a climb (spec 05 "Escalation"). */
  rung: number;
  /** The task's type (`implement`, `fix`, …). */
  type: string;
  /** The runner of the task's last attempt: the one that actually ran (the task's own runner when it had no attempt). */
  runner: string;
  /** The model of the last attempt's route, else the model its runner reported serving, else null: never guessed. */
  model: string | null;
  /** The roster entry's provider of the last attempt's route; null without an entry. */
  provider: string | null;
  /** The roster entry of the last attempt's route; null when the task named its runner. */
  entry: string | null;
  status: OutcomeStatus;
  /** True exactly when `status` is `passed`. */
  gates_passed: boolean;
  /** The roster entry of the rung the task climbed to from this one; null when it did not climb from here. */
  escalated_to: string | null;
  /** The task was returned to its spawner (two rungs failed, no rung above, or the climb was denied): on its last rung. */
  returned: boolean;
  /** The rung's attempts, fix rounds and retries included (a task denied its approval had one that never ran). */
  attempts: number;
  /** USD: 0 on `free` and `subscription` billing; on `api` the sum the runners reported, null when any attempt's is unknown. */
  cost_usd: number | null;
}

/** What the job knows about its own end that a task's attempts may not say. */
export interface JobEndFacts {
  cancelled: boolean;
  interrupted: boolean;
  /** Tasks returned to their spawner after their ladder (spec 05 "Escalation"). */
  returned?: ReadonlySet<string>;
  /** The job's climbs up its tasks' ladders, in order (which rung climbed where, and why). */
  escalation?: readonly EscalationJson[];
}

/** A task's outcome status on a rung from the result of its attempts there (undefined: it had none). */
export function decideOutcomeStatus(result: TaskResult | undefined): OutcomeStatus {
  // no attempt got a process: no model ran, whatever stopped it (a no, a cancel, a hold, a launch)
  if (result === undefined || !result.started) return 'not_dispatched';
  if (result.state === 'interrupted') return 'interrupted';
  // a final attempt still live at the end: gaffer failed under the job (carry-out.ts `failJob`)
  if (result.state !== 'settled') return 'error';
  switch (result.ending) {
    case 'cancelled':
      return 'cancelled';
    case 'finished':
      return passedGates(result) ? 'passed' : 'failed';
    // refused or launch_failed after another attempt ran (a retry that could not start): the task's work failed
    // superseded with no attempt after it: its work was judged not good enough
    default:
      return 'failed';
  }
}

/** The task's gates passed: closed through the result gates, its verification not blocking, its work done. */
function passedGates(r: TaskResult): boolean {
  return r.gatesPass && !r.verificationBlocks && r.status === 'done' && !r.nothingChanged;
}

/** One attempt's share of a task's cost. */
export interface AttemptCost {
  /** Who pays for the attempt's route; null when it is not known. */
  billing: Billing | null;
  /** It got a process: an attempt that never ran made no model call. */
  ran: boolean;
  /** What its runner reported, USD; null when it reported none. */
  costUsd: number | null;
}

/**
 * A task's cost over its attempts (spec 05: free and subscription rungs record 0, not blank): on
 * `api` billing the runners' reported costs, null as soon as one that ran is unknown.
 */
export function costOf(attempts: readonly AttemptCost[]): number | null {
  let total = 0;
  for (const a of attempts) {
    if (!a.ran) continue;
    if (a.billing === null) return null;
    if (a.billing !== 'api') continue;
    if (a.costUsd === null) return null;
    total += a.costUsd;
  }
  return total;
}
