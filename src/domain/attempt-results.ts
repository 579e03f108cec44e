import type { Attempt } from './attempt-machine.js';
import { FINAL_ATTEMPT_STATES, type AttemptEnding, type AttemptState } from './attempt-table.js';
import type { JobStatus, WorkerOutcome, WorkerStatus } from './status.js';

/** A worker row's status and outcome (spec 01), as today's `attempts` table and answers spell them. */
export interface WorkerEndWords {
  status: WorkerStatus;
  /** Null while the attempt is live, as a live worker row has none. */
  outcome: WorkerOutcome | null;
}

/** A task's result, read from its attempts: the final one for the verdict, the last working one for "did the worker finish". */
export interface TaskResult {
  task: string;
  /** How many attempts the task had (fix rounds included). */
  attempts: number;
  /** The final attempt's state and ending. */
  state: AttemptState;
  ending: AttemptEnding | null;
  /** The worker status of the task's last attempt that did the task's work (not a fix round: spec 01 counts task workers, not fixers). */
  status: WorkerStatus;
  outcome: WorkerOutcome | null;
  /** Some attempt of the task got a process. */
  started: boolean;
  nothingChanged: boolean;
  /** The final attempt's verification blocks `done` (it failed where that blocks, or could not start). */
  verificationBlocks: boolean;
  /** The final attempt's result gates: criteria met and proof not contradicted (true when not checked). */
  gatesPass: boolean;
}

/** Every fact spec 01's job status is decided from; settle.ts and `jobStatusOf` both decide through `decideJobStatus`. */
export interface JobStatusFacts {
  /** gaffer stopped under the job. */
  interrupted: boolean;
  cancelled: boolean;
  /** No worker got a process, or the job failed before its workers. */
  nothingRan: boolean;
  /** The task workers' statuses (fixers not counted). */
  workerStatuses: readonly WorkerStatus[];
  verificationBlocks: boolean;
  /** Some task that was to change something changed nothing. */
  nothingChanged: boolean;
  /** The criteria are met and the proof is not contradicted. */
  gatesPass: boolean;
}

const NO_PROCESS_YET: ReadonlySet<AttemptState> = new Set([
  'admitted',
  'awaiting_approval',
  'paused',
  'gated',
  'placed',
]);

// a settled attempt that never had a process: its worker status from how it ended
const UNSTARTED_ENDS: Record<AttemptEnding, { status: WorkerStatus; outcome: WorkerOutcome }> = {
  cancelled: { status: 'cancelled', outcome: 'cancelled' },
  refused: { status: 'refused', outcome: 'expected_error' },
  launch_failed: { status: 'error', outcome: 'panic' },
  // ended without any report of its process: it broke its contract (spec 01 `panic`)
  finished: { status: 'error', outcome: 'panic' },
  superseded: { status: 'error', outcome: 'panic' },
};

/** The worker row's status and outcome for an attempt in any state (the row describes the attempt's process). */
export function workerEndOf(attempt: Attempt): WorkerEndWords {
  const exit = attempt.facts.exit;
  // spec 01: stopped because gaffer stopped reads `interrupted`, as recovery and attempt-run write it
  if (attempt.state === 'interrupted' && (exit === null || exit.status === 'cancelled'))
    return { status: 'interrupted', outcome: 'cancelled' };
  if (exit !== null) {
    // spec 06: writing outside its write policy breaks the worker's contract, whatever its process said
    if (attempt.facts.writeViolation && exit.status !== 'cancelled' && exit.status !== 'interrupted')
      return { status: 'error', outcome: 'panic' };
    // issue 10: done but nothing changed where a change was the task is an expected error, status kept
    const outcome = attempt.facts.nothingChanged && exit.status === 'done' ? 'expected_error' : exit.outcome;
    return { status: exit.status, outcome };
  }
  if (attempt.state === 'settled') return UNSTARTED_ENDS[attempt.ending ?? 'finished'];
  if (NO_PROCESS_YET.has(attempt.state)) return { status: 'queued', outcome: null };
  return { status: 'running', outcome: null };
}

/** A task's result from its attempts (any order); undefined for a task with none. */
export function taskResultOf(attempts: readonly Attempt[]): TaskResult | undefined {
  const ordered = [...attempts].sort((a, b) => a.number - b.number);
  const final = ordered.at(-1);
  if (!final) return undefined;
  const work = ordered.filter((a) => a.kind !== 'fix').at(-1) ?? final;
  const end = workerEndOf(work);
  const v = final.facts.verification;
  const g = final.facts.gates;
  return {
    task: final.task,
    attempts: ordered.length,
    state: final.state,
    ending: final.ending,
    status: end.status,
    outcome: end.outcome,
    started: ordered.some((a) => a.started),
    nothingChanged: work.facts.nothingChanged,
    verificationBlocks: v !== null && (v.blocking || v.couldNotStart),
    gatesPass: g === null || (g.criteriaMet && !g.contradicted && (g.declared ?? 'pass') === 'pass'),
  };
}

/**
 * A job's status from its tasks' results: live while any final attempt is live, else spec 01's final
 * statuses. A cancel or a shutdown of the job itself counts even where no attempt was left to stop.
 */
export function jobStatusOf(
  tasks: readonly TaskResult[],
  job: { cancelled?: boolean; interrupted?: boolean } = {},
): JobStatus {
  const live = liveJobStatusOf(tasks.map((t) => t.state));
  if (live !== null) return live;
  return decideJobStatus({
    interrupted: job.interrupted === true || tasks.some((t) => t.state === 'interrupted'),
    cancelled: job.cancelled === true || tasks.some((t) => t.ending === 'cancelled'),
    nothingRan: !tasks.some((t) => t.started),
    workerStatuses: tasks.map((t) => t.status),
    verificationBlocks: tasks.some((t) => t.verificationBlocks),
    nothingChanged: tasks.some((t) => t.nothingChanged),
    gatesPass: tasks.every((t) => t.gatesPass),
  });
}

/** spec 01's final job status: interrupted, cancelled, error (nothing ran), done (everything holds), else partial. */
export function decideJobStatus(f: JobStatusFacts): JobStatus {
  if (f.interrupted) return 'interrupted';
  if (f.cancelled) return 'cancelled';
  if (f.nothingRan) return 'error';
  const allDone = f.workerStatuses.every((s) => s === 'done');
  return allDone && !f.verificationBlocks && !f.nothingChanged && f.gatesPass ? 'done' : 'partial';
}

// the busiest live state names the job: a cancel in progress, then work, then the proof being made, then waits
const LIVE_ORDER: readonly [JobStatus, ReadonlySet<AttemptState>][] = [
  ['cancelling', new Set(['cancelling'])],
  ['running', new Set(['placed', 'running', 'requeued'])],
  ['verifying', new Set(['collecting', 'verifying', 'gated_result'])],
  ['awaiting_approval', new Set(['awaiting_approval'])],
  ['queued', new Set(['admitted', 'gated', 'paused'])],
];

function liveJobStatusOf(states: readonly AttemptState[]): JobStatus | null {
  if (states.every((s) => FINAL_ATTEMPT_STATES.has(s))) return null;
  for (const [status, members] of LIVE_ORDER) if (states.some((s) => members.has(s))) return status;
  return null;
}
