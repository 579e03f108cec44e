import { admitAttempt, isFinalAttempt, noteFacts, transition, type Attempt, type AttemptEvent, type AttemptFacts, type AttemptKind } from '../../domain/attempt-machine.js';
import { jobStatusOf, taskResultOf, workerEndOf, type TaskResult, type WorkerEndWords } from '../../domain/attempt-results.js';
import type { AttemptEventType } from '../../domain/attempt-table.js';
import type { Route } from '../../domain/route.js';
import type { JobStatus, WorkerRole, WorkerStatus, WorkerOutcome } from '../../domain/status.js';
import { NODE_LOST } from '../execution/executor.js';

/** One attempt of a job: the worker that carries it out, the route it was given, and where the machine has it. */
export interface LedgerEntry {
  /** The worker name (the task's name, or fixer-N): the attempt's row and log. */
  readonly worker: string;
  readonly role: WorkerRole;
  /** Where it runs; moved only by `reroute` (a provider fallback before it starts again). */
  route: Route;
  attempt: Attempt;
}

/**
 * A job's attempts, each moved only through the attempt machine (domain/attempt-machine.ts): the
 * worker rows' status and outcome are the machine's words for the attempt, and the job's status is
 * read from its tasks' final attempts. A move the table does not allow is a bug in the pipeline and
 * throws (the job fails loudly, `gaffer failed: …`), never a silently different answer.
 */
export class AttemptLedger {
  readonly #entries = new Map<string, LedgerEntry>();
  readonly #stored: (worker: string, attempt: Attempt) => void;

  /** `stored`: told of each attempt after every move (the job's ledger writes it on the attempt's row, so recovery reads where it stood). */
  constructor(stored: (worker: string, attempt: Attempt) => void = () => undefined) {
    this.#stored = stored;
  }

  /** Admits a new attempt of `task` (numbered after the task's earlier ones) for `worker`. */
  admit(worker: string, task: string, role: WorkerRole, route: Route, kind: AttemptKind = role === 'fixer' ? 'fix' : 'first'): LedgerEntry {
    const entry: LedgerEntry = { worker, role, route, attempt: admitAttempt(task, this.history(task).map((e) => e.attempt), kind) };
    this.#entries.set(worker, entry);
    return entry;
  }

  /** The attempts of `task` so far, in order (what the Router routes the next one from). */
  history(task: string): LedgerEntry[] {
    return [...this.#entries.values()].filter((e) => e.attempt.task === task);
  }

  get size(): number {
    return this.#entries.size;
  }

  entry(worker: string): LedgerEntry {
    const entry = this.#entries.get(worker);
    if (!entry) throw new Error(`no attempt for worker "${worker}"`);
    return entry;
  }

  /** Moves the attempt to another route (issue 15: its provider is suspended and its entry names a fallback). */
  reroute(worker: string, route: Route): void {
    this.entry(worker).route = route;
  }

  /** Moves the worker's attempt through `events` in order; returns the row's words after the last. */
  move(worker: string, events: readonly (AttemptEventType | AttemptEvent)[]): WorkerEndWords {
    const entry = this.entry(worker);
    for (const e of events) {
      const step = transition(entry.attempt, typeof e === 'string' ? { type: e } : e);
      if (!step.ok) throw new Error(`${step.message} (task ${entry.attempt.task}, attempt ${entry.attempt.number})`);
      entry.attempt = step.next;
    }
    if (events.length > 0) this.#stored(worker, entry.attempt);
    return workerEndOf(entry.attempt);
  }

  /** Merges facts learned after the fact (the job-wide evidence) without moving the attempt. */
  note(worker: string, facts: Partial<AttemptFacts>): WorkerEndWords {
    const entry = this.entry(worker);
    entry.attempt = noteFacts(entry.attempt, facts);
    this.#stored(worker, entry.attempt);
    return workerEndOf(entry.attempt);
  }

  /** The live attempts in `state`, in admission order. */
  inState(state: Attempt['state']): LedgerEntry[] {
    return [...this.#entries.values()].filter((e) => e.attempt.state === state);
  }

  /** Every attempt not yet final. */
  live(): LedgerEntry[] {
    return [...this.#entries.values()].filter((e) => !isFinalAttempt(e.attempt));
  }

  /** Each task's result from its attempts. */
  taskResults(): TaskResult[] {
    const tasks = new Map<string, Attempt[]>();
    for (const e of this.#entries.values()) tasks.set(e.attempt.task, [...(tasks.get(e.attempt.task) ?? []), e.attempt]);
    return [...tasks.values()].flatMap((attempts) => taskResultOf(attempts) ?? []);
  }

  /** The settled job's status from its tasks' final attempts (spec 01); every attempt must be final by then. */
  jobStatus(job: { cancelled: boolean; interrupted: boolean }): JobStatus {
    const open = this.live().map((e) => `${e.worker} (${e.attempt.state})`);
    if (open.length > 0) throw new Error(`the job settled with attempts still open: ${open.join(', ')}`);
    return jobStatusOf(this.taskResults(), job);
  }
}

/** What a worker's end says to the machine, from where its attempt stands. */
export function endEventsFor(
  attempt: Pick<Attempt, 'state'>,
  report: { status: WorkerStatus; outcome: WorkerOutcome; stopReason?: string; limit?: unknown },
  ctx: { isInterrupting: boolean; gotProcess: boolean },
): AttemptEvent[] {
  const facts = { exit: { status: report.status, outcome: report.outcome } };
  const stopped = (): AttemptEvent[] => (ctx.isInterrupting ? [{ type: 'interrupt', facts }] : [{ type: 'cancel' }, { type: 'processes_gone', facts }]);
  switch (attempt.state) {
    // no runner for the route: refused before any place
    case 'admitted':
      return [{ type: 'refused', facts }];
    // stopped while it waited for a slot, or while it waited out a rate limit; or its batch stopped before it launched
    case 'placed':
      return report.stopReason === 'batch_stopped' ? [{ type: 'batch_stopped', facts }] : stopped();
    case 'requeued':
      return ctx.isInterrupting ? [{ type: 'interrupt', facts }] : [{ type: 'cancel', facts }];
    default:
      if (report.status === 'cancelled') return stopped();
      // the spawn failed, or the runner refused at its start: no process after all
      if (!ctx.gotProcess) return [{ type: 'launch_failed', facts }];
      // spec 09: its node was lost mid-run; the work comes back under the next attempt (attempt-run.ts)
      if (report.stopReason === NODE_LOST) return [{ type: 'node_lost', facts }];
      return [{ type: report.limit !== undefined ? 'limit_hit' : 'exited', facts }];
  }
}
