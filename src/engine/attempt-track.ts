import { admitAttempt, transition, type Attempt, type AttemptEvent, type AttemptKind } from '../domain/attempt-machine.js';
import { workerEndOf, type WorkerEndWords } from '../domain/attempt-results.js';
import type { AttemptEventType } from '../domain/attempt-table.js';
import type { WorkerOutcome, WorkerRole, WorkerStatus } from '../domain/status.js';

/** The process warning's code when the attempt machine and a worker row disagree. */
export const ATTEMPT_WARNING = 'GAFFER_ATTEMPT_MACHINE';

/**
 * A worker's attempt as the attempt machine sees it, moved at each write of the worker row's status
 * (issue 12). The engine does not run on the machine yet, so the row keeps what worker-run.ts
 * decides; the machine shadows it, and a move the table refuses, or words that differ from the
 * row's, are a process warning (which fails the test run: test/setup.ts), never a changed answer.
 */
export class AttemptTrack {
  #attempt: Attempt;

  constructor(task: string, number: number, role: WorkerRole) {
    const kind: AttemptKind = role === 'fixer' ? 'fix' : 'first';
    this.#attempt = { ...admitAttempt(task, [], kind), number };
  }

  /** The attempt as it stands (for tests and, later, the ledger). */
  get attempt(): Attempt {
    return this.#attempt;
  }

  /** Moves through `events` in order and checks the machine's worker words against what the row says. */
  move(events: readonly (AttemptEventType | AttemptEvent)[], row: WorkerEndWords): void {
    for (const e of events) {
      const step = transition(this.#attempt, typeof e === 'string' ? { type: e } : e);
      if (!step.ok) return warn(`${step.message} (task ${this.#attempt.task}, attempt ${this.#attempt.number})`);
      this.#attempt = step.next;
    }
    const words = workerEndOf(this.#attempt);
    if (words.status !== row.status || (row.outcome !== null && words.outcome !== row.outcome)) {
      warn(`attempt ${this.#attempt.number} of task ${this.#attempt.task} in state "${this.#attempt.state}" reads ${words.status}/${String(words.outcome)}, its row ${row.status}/${String(row.outcome)}`);
    }
  }
}

/** What a worker's end says to the machine, from where its attempt stands: the row's end as events. */
export function endEventsFor(
  attempt: Pick<Attempt, 'state'>,
  report: { status: WorkerStatus; outcome: WorkerOutcome; limit?: unknown },
  isInterrupting: boolean,
): AttemptEvent[] {
  const facts = { exit: { status: report.status, outcome: report.outcome } };
  const stopped = (): AttemptEvent[] => (isInterrupting ? [{ type: 'interrupt', facts }] : [{ type: 'cancel' }, { type: 'processes_gone', facts }]);
  switch (attempt.state) {
    // no runner for the route: refused before any place
    case 'admitted':
      return [{ type: 'refused', facts }];
    // stopped while it waited for a slot, or while it waited out a rate limit
    case 'placed':
      return stopped();
    case 'requeued':
      return isInterrupting ? [{ type: 'interrupt', facts }] : [{ type: 'cancel', facts }];
    default:
      if (report.status === 'cancelled') return stopped();
      return [{ type: report.limit !== undefined ? 'limit_hit' : 'exited', facts }];
  }
}

function warn(message: string): void {
  process.emitWarning(message, { code: ATTEMPT_WARNING });
}
