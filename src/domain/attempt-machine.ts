import type { GateReading } from './gates.js';
import type { WorkerOutcome, WorkerStatus } from './status.js';
import {
  ATTEMPT_TABLE,
  FINAL_ATTEMPT_STATES,
  type AttemptEffect,
  type AttemptEnding,
  type AttemptEventType,
  type AttemptRow,
  type AttemptState,
} from './attempt-table.js';

/** Why a task got another attempt: its first, a fix round, a retry of missing work (spec 06), or (later) the next rung of a route. */
export type AttemptKind = 'first' | 'fix' | 'retry' | 'escalation';

/** The process's end as the runner reported it (after the task's declared outputs judged it, spec 06). */
export interface AttemptExit {
  status: WorkerStatus;
  outcome: WorkerOutcome;
}

/** What the attempt learned on its way; each event may carry some of it. */
export interface AttemptFacts {
  /** Set when its process ended (or was never started but the runner said why). */
  exit: AttemptExit | null;
  /** The task was to change something and nothing changed (issue 10 "done means done"). */
  nothingChanged: boolean;
  /** It wrote outside its write policy (spec 06's mutation audit, taken with its evidence). */
  writeViolation: boolean;
  /** The verification's answer; null until verified. */
  verification: { blocking: boolean; couldNotStart: boolean } | null;
  /** The result gates' answer (criteria, proof, the task's own declared gates — spec 05); null until checked. */
  gates: { criteriaMet: boolean; contradicted: boolean; declared?: GateReading } | null;
}

/** One attempt of one task, as the machine sees it: plain data the store can keep. */
export interface Attempt {
  task: string;
  /** 1, 2, …: a task's attempts are numbered in order, fix rounds and retries included. */
  number: number;
  kind: AttemptKind;
  state: AttemptState;
  /** Set once the attempt reached `running`, cleared by a `launch_failed` ending: it got a process. */
  started: boolean;
  /** Set with `settled`. */
  ending: AttemptEnding | null;
  facts: AttemptFacts;
  /** The events it took, in order: how it got where it is. */
  trail: AttemptEventType[];
  /**
   * The effects its moves returned that are not carried out yet, in order: the pipeline carries the
   * first before it feeds another event (a cancel or an interrupt drops them and owes its own row's).
   * A new attempt owes `check_gates`.
   */
  owed: AttemptEffect[];
  /** The effects carried out for it, in order, each with how many events it had taken then. */
  carried: CarriedEffect[];
}

/** An effect carried out for an attempt after its `at`-th event, or dropped then (by a cancel, an interrupt, or its job's stop). */
export interface CarriedEffect {
  effect: AttemptEffect;
  at: number;
  dropped?: true;
}

/** Something that happened to an attempt, with whatever facts it brings. */
export interface AttemptEvent {
  type: AttemptEventType;
  facts?: Partial<AttemptFacts>;
}

/** A refused transition: a value naming the state and the event, never a throw. */
export interface AttemptRefusal {
  ok: false;
  code: 'illegal_transition';
  state: AttemptState;
  event: AttemptEventType;
  message: string;
}

/** A refused carry: the effect is not the one the attempt owes next. */
export interface EffectRefusal {
  ok: false;
  code: 'effect_not_owed';
  state: AttemptState;
  effect: AttemptEffect;
  message: string;
}

/** The events that may come while effects are owed, and drop them: the work they were for is abandoned. */
export const ABANDONING_EVENTS: ReadonlySet<AttemptEventType> = new Set(['cancel', 'interrupt']);

/** A legal transition: the attempt after it and the work the pipeline does next. */
export interface AttemptStep {
  ok: true;
  next: Attempt;
  effects: readonly AttemptEffect[];
}

const NO_FACTS: AttemptFacts = {
  exit: null,
  nothingChanged: false,
  writeViolation: false,
  verification: null,
  gates: null,
};

const ROWS: ReadonlyMap<string, AttemptRow> = new Map(ATTEMPT_TABLE.map((row) => [rowKey(row.from, row.on), row]));

function rowKey(state: AttemptState, event: AttemptEventType): string {
  return `${state} ${event}`;
}

/** The table's row for a pair, when the pair is legal. */
export function findAttemptRow(state: AttemptState, event: AttemptEventType): AttemptRow | undefined {
  return ROWS.get(rowKey(state, event));
}

/** A new attempt of `task`, numbered after the ones it already had (fix rounds and retries are attempts too). */
export function admitAttempt(task: string, history: readonly Attempt[], kind: AttemptKind): Attempt {
  const last = history.filter((a) => a.task === task).reduce((n, a) => Math.max(n, a.number), 0);
  return {
    task,
    number: last + 1,
    kind,
    state: 'admitted',
    started: false,
    ending: null,
    facts: NO_FACTS,
    trail: [],
    owed: ['check_gates'],
    carried: [],
  };
}

/** The pure transition: the table's row for (state, event) gives the next state and effects; any other pair is refused. */
export function transition(attempt: Attempt, event: AttemptEvent): AttemptStep | AttemptRefusal {
  const row = findAttemptRow(attempt.state, event.type);
  if (!row) return refuse(attempt.state, event.type);
  const next: Attempt = {
    ...attempt,
    state: row.to,
    started: row.ending === 'launch_failed' ? false : attempt.started || row.to === 'running',
    ending: row.ending ?? attempt.ending,
    facts: { ...attempt.facts, ...event.facts },
    trail: [...attempt.trail, event.type],
    owed: [...(ABANDONING_EVENTS.has(event.type) ? [] : owedOf(attempt)), ...row.effects],
    carried: ABANDONING_EVENTS.has(event.type)
      ? [...(attempt.carried ?? []), ...dropped(attempt)]
      : (attempt.carried ?? []),
  };
  return { ok: true, next, effects: row.effects };
}

/** The effects `attempt` owes, in order (none for one stored before effects were kept). */
export function owedOf(attempt: Pick<Attempt, 'owed'>): readonly AttemptEffect[] {
  return attempt.owed ?? [];
}

/** Drops every effect `attempt` owes: the work they were for will not be done (its job stopped). */
export function dropEffects(attempt: Attempt): Attempt {
  return { ...attempt, owed: [], carried: [...(attempt.carried ?? []), ...dropped(attempt)] };
}

function dropped(attempt: Attempt): CarriedEffect[] {
  return owedOf(attempt).map((effect) => ({ effect, at: attempt.trail.length, dropped: true as const }));
}

/** Marks `effect` carried out: it must be the first the attempt owes. */
export function carryEffect(attempt: Attempt, effect: AttemptEffect): { ok: true; next: Attempt } | EffectRefusal {
  const owed = owedOf(attempt);
  if (owed[0] !== effect) {
    const expected = owed.length > 0 ? `it owes ${owed.join(', ')} first` : 'it owes nothing';
    return {
      ok: false,
      code: 'effect_not_owed',
      state: attempt.state,
      effect,
      message: `attempt in state "${attempt.state}" cannot carry out "${effect}": ${expected}`,
    };
  }
  return {
    ok: true,
    next: {
      ...attempt,
      owed: owed.slice(1),
      carried: [...(attempt.carried ?? []), { effect, at: attempt.trail.length }],
    },
  };
}

/**
 * Facts learned about an attempt after it settled, merged without moving it: in a shared
 * placement the job's evidence is read once for every task (issue 10's "nothing changed" is known
 * only then), and a superseded attempt's words must say what its process did.
 */
export function noteFacts(attempt: Attempt, facts: Partial<AttemptFacts>): Attempt {
  return { ...attempt, facts: { ...attempt.facts, ...facts } };
}

/** True once an attempt can never change again. */
export function isFinalAttempt(attempt: Pick<Attempt, 'state'>): boolean {
  return FINAL_ATTEMPT_STATES.has(attempt.state);
}

function refuse(state: AttemptState, event: AttemptEventType): AttemptRefusal {
  const legal = ATTEMPT_TABLE.filter((r) => r.from === state).map((r) => r.on);
  const expected = legal.length > 0 ? `expected one of: ${legal.join(', ')}` : `${state} is final: no event moves it`;
  return {
    ok: false,
    code: 'illegal_transition',
    state,
    event,
    message: `attempt in state "${state}" cannot take event "${event}": ${expected}`,
  };
}
