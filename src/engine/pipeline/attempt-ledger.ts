import {
  ABANDONING_EVENTS,
  admitAttempt,
  carryEffect,
  dropEffects,
  isFinalAttempt,
  noteFacts,
  owedOf,
  transition,
  type Attempt,
  type AttemptEvent,
  type AttemptFacts,
  type AttemptKind,
} from '../../domain/attempt-machine.js';
import {
  jobStatusOf,
  taskResultOf,
  workerEndOf,
  type TaskResult,
  type WorkerEndWords,
} from '../../domain/attempt-results.js';
import type { AttemptEffect, AttemptEventType } from '../../domain/attempt-table.js';
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
  /**
   * What carries out the effects the attempt itself owns (attempt-run.ts: gates, the wait, the
   * place's turn, the process, its stop and release); the job's orchestrator carries the rest
   * (evidence, verification, result gates, the next attempt), for every attempt of its place.
   */
  handlers: EffectHandlers;
}

/** What an effect's handler answers: the events that follow it, in order (none: the answer comes later, or from elsewhere). */
export type EffectAnswer = readonly AttemptEvent[];
/** One handler per effect an attempt carries out itself. */
export type EffectHandlers = Partial<Record<AttemptEffect, () => EffectAnswer | Promise<EffectAnswer>>>;

/** What a drive is given besides its events. */
export interface DriveOptions {
  /** Handlers that answer before the attempt's own: the job's, for the work its place does once. */
  handlers?: EffectHandlers;
  /** Told of each event after its move. */
  moved?: (event: AttemptEvent) => void;
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

  readonly #dirty = new Set<string>();

  /**
   * `stored`: told of each attempt after it moved or carried out an effect (the job's ledger writes
   * it on the attempt's row, so recovery reads where it stood) — once per tick for every change made
   * in it: an attempt's moves and carries mostly come in runs with no wait between them.
   */
  constructor(stored: (worker: string, attempt: Attempt) => void = () => undefined) {
    this.#stored = stored;
  }

  #changed(worker: string): void {
    if (this.#dirty.size === 0) queueMicrotask(() => this.#flush());
    this.#dirty.add(worker);
  }

  #flush(): void {
    try {
      for (const worker of this.#dirty) this.#stored(worker, this.entry(worker).attempt);
    } catch (err) {
      // said by the next move (a microtask has no one to throw to)
      this.#lost ??= err instanceof Error ? err : new Error(String(err));
    } finally {
      this.#dirty.clear();
    }
  }

  #lost: Error | null = null;

  #throwIfLost(): void {
    if (this.#lost) throw new Error(`an attempt's state could not be stored: ${this.#lost.message}`);
  }

  /** Admits a new attempt of `task` (numbered after the task's earlier ones) for `worker`. */
  admit(
    worker: string,
    task: string,
    role: WorkerRole,
    route: Route,
    kind: AttemptKind = role === 'fixer' ? 'fix' : 'first',
  ): LedgerEntry {
    const entry: LedgerEntry = {
      worker,
      role,
      route,
      attempt: admitAttempt(
        task,
        this.history(task).map((e) => e.attempt),
        kind,
      ),
      handlers: {},
    };
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

  /**
   * Moves the worker's attempt through `events` in order; returns the row's words after the last.
   * An event is refused while the attempt owes an effect (a cancel or an interrupt excepted): the
   * table's work for the last move is carried out first (`carry`, `drive`).
   */
  move(worker: string, events: readonly (AttemptEventType | AttemptEvent)[]): WorkerEndWords {
    this.#throwIfLost();
    const entry = this.entry(worker);
    for (const e of events) {
      const event = typeof e === 'string' ? { type: e } : e;
      const owed = owedOf(entry.attempt);
      if (owed.length > 0 && !ABANDONING_EVENTS.has(event.type))
        throw new Error(
          `attempt in state "${entry.attempt.state}" cannot take event "${event.type}" before carrying out ${owed.join(', ')} (task ${entry.attempt.task}, attempt ${entry.attempt.number})`,
        );
      const step = transition(entry.attempt, event);
      if (!step.ok) throw new Error(`${step.message} (task ${entry.attempt.task}, attempt ${entry.attempt.number})`);
      entry.attempt = step.next;
    }
    if (events.length > 0) this.#changed(worker);
    return workerEndOf(entry.attempt);
  }

  /** The effects the worker's attempt owes, in order. */
  owed(worker: string): readonly AttemptEffect[] {
    return owedOf(this.entry(worker).attempt);
  }

  /**
   * Marks `effect`, the first the attempt owes, carried out, and runs the attempt's own handler for
   * it when it has one (without one, the caller did the work: the job's orchestrator, for every
   * attempt of its place); returns the handler's answer (its events) unfed. Throws when `effect` is
   * not the one owed next.
   */
  carry(worker: string, effect: AttemptEffect): EffectAnswer | Promise<EffectAnswer> {
    const entry = this.entry(worker);
    this.#mark(entry, effect);
    return entry.handlers[effect]?.() ?? [];
  }

  /** Marks `effect`, the first the entry's attempt owes, carried out; throws when another is owed first. */
  #mark(entry: LedgerEntry, effect: AttemptEffect): void {
    const step = carryEffect(entry.attempt, effect);
    if (!step.ok) throw new Error(`${step.message} (task ${entry.attempt.task}, attempt ${entry.attempt.number})`);
    entry.attempt = step.next;
    this.#changed(entry.worker);
  }

  /** Drops what a settled attempt still owes: its job stopped, and the work those effects were for will not be done. */
  drop(worker: string): void {
    const entry = this.entry(worker);
    if (this.owed(worker).length === 0) return;
    entry.attempt = dropEffects(entry.attempt);
    this.#changed(worker);
  }

  /**
   * The interpreter: feeds `events` to the worker's attempt one at a time, and before each (and
   * after the last) carries out the effects the moves owe, feeding each handler's answer (its
   * events) next. A handler is the caller's (`handlers`: the job's orchestrator answering what it
   * did once for all the attempts of its place — evidence, verification, result gates — or
   * admitting the next attempt) or else the attempt's own (`LedgerEntry.handlers`). Stops when
   * nothing is owed and nothing is left to feed, or when the next owed effect has no handler here:
   * it is carried later, by whoever does that work. `moved` is told of each event after its move.
   */
  async drive(worker: string, events: readonly AttemptEvent[], opts: DriveOptions = {}): Promise<void> {
    const steps = this.#interpret(worker, events, opts);
    for (let step = steps.next(); step.done !== true;) step = steps.next(await step.value);
  }

  /** The interpreter where no handler waits (a settle, a refusal, an audit): the same steps as `drive`, at once; throws when a handler would wait. */
  driveNow(worker: string, events: readonly AttemptEvent[], handlers: EffectHandlers = {}): void {
    const steps = this.#interpret(worker, events, { handlers });
    for (let step = steps.next(); step.done !== true;) {
      const answer = step.value;
      if (answer instanceof Promise) throw new Error(`an effect of ${worker} waits: it cannot be carried out here`);
      step = steps.next(answer);
    }
  }

  /** The interpreter's steps: yields each handler's answer (or the promise of it) and takes back its events. */
  *#interpret(
    worker: string,
    events: readonly AttemptEvent[],
    { handlers = {}, moved = () => undefined }: DriveOptions,
  ): Generator<EffectAnswer | Promise<EffectAnswer>, void, EffectAnswer> {
    const entry = this.entry(worker);
    const queue = [...events];
    for (;;) {
      const effect = this.owed(worker)[0];
      const handler = effect === undefined ? undefined : (handlers[effect] ?? entry.handlers[effect]);
      if (effect !== undefined && handler !== undefined) {
        this.#mark(entry, effect);
        queue.unshift(...(yield handler()));
        continue;
      }
      const event = queue.shift();
      if (event === undefined) return;
      this.move(worker, [event]);
      moved(event);
    }
  }

  /** Merges facts learned after the fact (the job-wide evidence) without moving the attempt. */
  note(worker: string, facts: Partial<AttemptFacts>): WorkerEndWords {
    const entry = this.entry(worker);
    entry.attempt = noteFacts(entry.attempt, facts);
    this.#changed(worker);
    return workerEndOf(entry.attempt);
  }

  /** The live attempts in `state`, in admission order. */
  inState(state: Attempt['state']): LedgerEntry[] {
    return [...this.#entries.values()].filter((e) => e.attempt.state === state);
  }

  /** Every attempt, in admission order. */
  all(): LedgerEntry[] {
    return [...this.#entries.values()];
  }

  /** Every attempt not yet final. */
  live(): LedgerEntry[] {
    return [...this.#entries.values()].filter((e) => !isFinalAttempt(e.attempt));
  }

  /** Each task's result from its attempts. */
  taskResults(): TaskResult[] {
    const tasks = new Map<string, Attempt[]>();
    for (const e of this.#entries.values())
      tasks.set(e.attempt.task, [...(tasks.get(e.attempt.task) ?? []), e.attempt]);
    return [...tasks.values()].flatMap((attempts) => taskResultOf(attempts) ?? []);
  }

  /** The settled job's status from its tasks' final attempts (spec 01); every attempt must be final by then. */
  jobStatus(job: { cancelled: boolean; interrupted: boolean }): JobStatus {
    const open = this.live().map((e) => `${e.worker} (${e.attempt.state})`);
    if (open.length > 0) throw new Error(`the job settled with attempts still open: ${open.join(', ')}`);
    // the table's work for every move was carried out (or dropped by a cancel): nothing is owed
    const owing = this.all().flatMap((e) =>
      owedOf(e.attempt).length > 0 ? [`${e.worker} (${owedOf(e.attempt).join(', ')})`] : [],
    );
    if (owing.length > 0) throw new Error(`the job settled with effects not carried out: ${owing.join(', ')}`);
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
  // the processes' stop (`stop_processes`) answers `processes_gone`
  const stopped = (): AttemptEvent[] => [{ type: ctx.isInterrupting ? 'interrupt' : 'cancel', facts }];
  switch (attempt.state) {
    // no runner for the route: refused before any place
    case 'admitted':
      return [{ type: 'refused', facts }];
    // stopped while a hold kept it from starting, or its batch stopped meanwhile
    case 'awaiting_approval':
    case 'paused':
      return stopped();
    // stopped while it waited for a slot, or while it waited out a rate limit; or its batch stopped before it launched
    case 'placed':
      return report.stopReason === 'batch_stopped' ? [{ type: 'batch_stopped', facts }] : stopped();
    case 'requeued':
      return stopped();
    default:
      if (report.status === 'cancelled') return stopped();
      // the spawn failed, or the runner refused at its start: no process after all
      if (!ctx.gotProcess) return [{ type: 'launch_failed', facts }];
      // spec 09: its node was lost mid-run; the work comes back under the next attempt (attempt-run.ts)
      if (report.stopReason === NODE_LOST) return [{ type: 'node_lost', facts }];
      return [{ type: report.limit !== undefined ? 'limit_hit' : 'exited', facts }];
  }
}
