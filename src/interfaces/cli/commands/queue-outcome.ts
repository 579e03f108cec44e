import type { CompactWorkerEntry } from '../../../domain/answer.js';
import type { QueueAttempt, QueueStatus } from '../../../domain/queue-record.js';
import type { CompactJob } from '../../../engine/queries/compact.js';

/** What a record's task ended as, written back into the record. */
export interface RecordOutcome {
  /** The record's final status: its own task's end, never its siblings'. */
  status: QueueStatus;
  /** Why it came back, when its ladder returned it: the climb's why, then each rung's autopsy line. */
  gaps: string[];
  /** The task's attempts in this job, each rung's included. */
  attempts: QueueAttempt[];
}

/** How the record's task `task` ended in the ended job `job` (its full answer). */
export function recordOutcome(task: string, job: CompactJob): RecordOutcome {
  const rows = (job.result?.workers ?? []).filter((w) => w.name === task || w.name.startsWith(`${task}+`));
  const attempts: QueueAttempt[] = rows.map((w) => ({
    job: job.id,
    worker: w.name,
    runner: w.runner,
    model: w.model ?? null,
    status: w.status,
    outcome: w.outcome,
  }));
  // spec 05: a task its ladder could not carry comes back to its spawner with the autopsy, as its gaps
  const returned = job.result?.escalation?.filter((e) => e.task === task && e.returned === true).at(-1);
  if (returned) {
    const autopsy = (returned.autopsy ?? []).map(
      (a) =>
        `${a.entry} (${a.model ?? a.runner}): ${
          a.gates
            .filter((g) => g.result !== 'pass')
            .map((g) => `${g.gate} ${g.result}: ${g.detail}`)
            .join('; ') ||
          a.verification ||
          a.status
        }`,
    );
    return { status: 'returned', gaps: [returned.why, ...autopsy], attempts };
  }
  return { status: recordStatus(task, rows, job), gaps: [], attempts };
}

/**
 * A record's final status from its own task's end: its last attempt's row, its own gates, and the
 * verification and criteria that judged its work — never from how its siblings ended (the job is
 * `partial` when one of the batch was denied or failed; a record that passed is still done). A
 * cancel, a shutdown, or gaffer failing under the job is every task's.
 */
function recordStatus(task: string, rows: readonly CompactWorkerEntry[], job: CompactJob): QueueStatus {
  const row = rows.at(-1) ?? null;
  if (row?.status === 'refused') return 'refused';
  if (
    row?.status === 'cancelled' ||
    row?.status === 'interrupted' ||
    job.status === 'cancelled' ||
    job.status === 'interrupted'
  )
    return 'cancelled';
  if (row?.status !== 'done' || job.error !== null) return 'error';
  return ownWorkPassed(task, row, job.result) ? 'done' : 'failed';
}

/** The task's work passed what judged it: its worker changed what it was to, its own gates and criteria, and the verification of its work. */
function ownWorkPassed(task: string, row: CompactWorkerEntry, result: CompactJob['result']): boolean {
  // a worker done with nothing changed where a change was the task reads `expected_error` (issue 10)
  if (row.outcome !== 'success') return false;
  const gates = result?.gates?.filter((g) => g.task === task).at(-1);
  if (gates !== undefined && gates.verdict !== 'pass') return false;
  // a task's own criteria are listed as `<task>: <criterion>`; a queue's job declares none of its own
  if (result?.criteria_check?.unmet.some((c) => c.startsWith(`${task}: `))) return false;
  // a queue's job works in the shared workspace: one verification judges every task's work
  return result?.verification?.blocking !== true;
}
