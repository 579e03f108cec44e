import { describe, expect, it } from 'vitest';
import {
  ATTEMPT_EFFECTS,
  ATTEMPT_EVENTS,
  ATTEMPT_STATES,
  ATTEMPT_TABLE,
  FINAL_ATTEMPT_STATES,
  holdsPlacement,
  type AttemptEventType,
  type AttemptState,
} from '../../src/domain/attempt-table.js';
import {
  admitAttempt,
  findAttemptRow,
  isFinalAttempt,
  transition,
  type Attempt,
  type AttemptEvent,
} from '../../src/domain/attempt-machine.js';

const fresh = (state: AttemptState = 'admitted'): Attempt => ({ ...admitAttempt('t1', [], 'first'), state });

/** Runs events from `start`, failing the test on the first refusal; returns the attempt and every effect in order. */
function walk(
  events: (AttemptEventType | AttemptEvent)[],
  start: Attempt = fresh(),
): { attempt: Attempt; effects: string[] } {
  let attempt = start;
  const effects: string[] = [];
  for (const e of events) {
    const step = transition(attempt, typeof e === 'string' ? { type: e } : e);
    if (!step.ok) throw new Error(step.message);
    attempt = step.next;
    effects.push(...step.effects);
  }
  return { attempt, effects };
}

/** A seeded RNG (mulberry32): the property runs are the same on every machine. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('the attempt table', () => {
  it('has one row per (state, event) pair, from live states only', () => {
    const keys = ATTEMPT_TABLE.map((r) => `${r.from} ${r.on}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const row of ATTEMPT_TABLE) expect(FINAL_ATTEMPT_STATES.has(row.from), `${row.from} is final`).toBe(false);
  });

  it('uses every state, event and effect it declares, and names an ending exactly on rows into settled', () => {
    const states = new Set(ATTEMPT_TABLE.flatMap((r) => [r.from, r.to]));
    expect([...ATTEMPT_STATES].filter((s) => !states.has(s))).toEqual([]);
    const events = new Set(ATTEMPT_TABLE.map((r) => r.on));
    expect([...ATTEMPT_EVENTS].filter((e) => !events.has(e))).toEqual([]);
    const effects = new Set(ATTEMPT_TABLE.flatMap((r) => r.effects));
    // check_gates is the re-check after a budget window; every effect the pipeline runs is on some row
    expect([...ATTEMPT_EFFECTS].filter((e) => !effects.has(e))).toEqual([]);
    for (const row of ATTEMPT_TABLE)
      expect(row.ending !== undefined, `${row.from} --${row.on}-->`).toBe(row.to === 'settled');
  });

  it('lets every live state be cancelled and interrupted', () => {
    for (const state of ATTEMPT_STATES.filter((s) => !FINAL_ATTEMPT_STATES.has(s))) {
      expect(findAttemptRow(state, 'interrupt')?.to, state).toBe('interrupted');
      if (state !== 'cancelling')
        expect(['settled', 'cancelling'], state).toContain(findAttemptRow(state, 'cancel')?.to);
    }
  });

  it('releases the placement on every row that leaves a state holding it for one that does not', () => {
    for (const row of ATTEMPT_TABLE) {
      const leaves = holdsPlacement(row.from) && !holdsPlacement(row.to);
      expect(row.effects.includes('release_placement'), `${row.from} --${row.on}--> ${row.to}`).toBe(leaves);
    }
  });
});

describe('the transition function', () => {
  it.each(ATTEMPT_TABLE.map((row) => [`${row.from} --${row.on}--> ${row.to}`, row] as const))(
    '%s gives the row’s next state, ending and effects',
    (_, row) => {
      const step = transition(fresh(row.from), { type: row.on });
      expect(step.ok).toBe(true);
      if (!step.ok) return;
      expect(step.next.state).toBe(row.to);
      expect(step.effects).toEqual(row.effects);
      expect(step.next.ending).toBe(row.ending ?? null);
      expect(step.next.task).toBe('t1');
      expect(step.next.number).toBe(1);
    },
  );

  it('refuses every pair not in the table with a value naming the state and the event', () => {
    let refused = 0;
    for (const state of ATTEMPT_STATES) {
      for (const event of ATTEMPT_EVENTS) {
        if (findAttemptRow(state, event)) continue;
        const step = transition(fresh(state), { type: event });
        expect(step.ok, `${state} ${event}`).toBe(false);
        if (step.ok) continue;
        expect(step).toMatchObject({ code: 'illegal_transition', state, event });
        expect(step.message).toContain(`"${state}"`);
        expect(step.message).toContain(`"${event}"`);
        refused++;
      }
    }
    expect(refused).toBe(ATTEMPT_STATES.length * ATTEMPT_EVENTS.length - ATTEMPT_TABLE.length);
  });

  it('says which events a live state takes, and that a final state takes none', () => {
    const live = transition(fresh('running'), { type: 'approved' });
    expect(!live.ok && live.message).toContain(
      'expected one of: launch_failed, exited, limit_hit, rate_limited, node_lost, cancel, interrupt',
    );
    const final = transition(fresh('settled'), { type: 'cancel' });
    expect(!final.ok && final.message).toContain('settled is final');
  });

  it('carries the facts an event brings and marks the attempt started once it runs', () => {
    const { attempt } = walk([
      'gates_passed',
      'placement_acquired',
      'executor_started',
      { type: 'exited', facts: { exit: { status: 'done', outcome: 'success' } } },
      { type: 'evidence_taken', facts: { nothingChanged: false } },
      { type: 'verify_passed', facts: { verification: { blocking: false, couldNotStart: false } } },
      { type: 'result_gates_passed', facts: { gates: { criteriaMet: true, contradicted: false } } },
    ]);
    expect(attempt).toMatchObject({ state: 'settled', ending: 'finished', started: true });
    expect(attempt.facts).toEqual({
      exit: { status: 'done', outcome: 'success' },
      nothingChanged: false,
      writeViolation: false,
      verification: { blocking: false, couldNotStart: false },
      gates: { criteriaMet: true, contradicted: false },
    });
  });

  it('runs the happy path’s effects in the pipeline’s order: place, checkpoint, start, collect, verify, gate, release', () => {
    const { effects } = walk([
      'gates_passed',
      'placement_acquired',
      'executor_started',
      'exited',
      'evidence_taken',
      'verify_passed',
      'result_gates_passed',
    ]);
    expect(effects).toEqual([
      'acquire_placement',
      'take_checkpoint',
      'start_executor',
      'collect_evidence',
      'run_verification',
      'check_result_gates',
      'release_placement',
    ]);
  });
});

describe('every state ends', () => {
  const successors = (s: AttemptState) => ATTEMPT_TABLE.filter((r) => r.from === s).map((r) => r.to);
  const reachable = (from: AttemptState): Set<AttemptState> => {
    const seen = new Set<AttemptState>([from]);
    const queue = [from];
    for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
      for (const next of successors(s)) if (!seen.has(next)) (seen.add(next), queue.push(next));
    }
    return seen;
  };

  it.each(ATTEMPT_STATES.map((s) => [s]))('%s reaches settled and interrupted, or is final', (state) => {
    const seen = reachable(state);
    if (FINAL_ATTEMPT_STATES.has(state)) expect(successors(state)).toEqual([]);
    else expect(seen.has('settled') && seen.has('interrupted')).toBe(true);
  });

  it('reaches every state from admitted', () => {
    expect([...ATTEMPT_STATES].filter((s) => !reachable('admitted').has(s))).toEqual([]);
  });

  it('has no cycle that avoids a wait for the outside world (every loop goes through a window reset)', () => {
    const withoutWaits = ATTEMPT_TABLE.filter((r) => r.on !== 'window_reset');
    const visit = (s: AttemptState, path: Set<AttemptState>): void => {
      expect(path.has(s), [...path, s].join(' → ')).toBe(false);
      for (const r of withoutWaits.filter((x) => x.from === s)) visit(r.to, new Set([...path, s]));
    };
    visit('admitted', new Set());
  });
});

describe('fix rounds and retries', () => {
  it('a failed verification with rounds left settles this attempt and admits a fix attempt of the same task', () => {
    const first = walk([
      'gates_passed',
      'placement_acquired',
      'executor_started',
      'exited',
      'evidence_taken',
      { type: 'verify_failed_fixable', facts: { verification: { blocking: true, couldNotStart: false } } },
    ]);
    expect(first.attempt).toMatchObject({ state: 'settled', ending: 'superseded' });
    // admitted before the place is let go, so a shared workspace is never free between rounds
    expect(first.effects.slice(-2)).toEqual(['admit_fix_attempt', 'release_placement']);
    const fix = admitAttempt('t1', [first.attempt], 'fix');
    expect(fix).toMatchObject({ task: 't1', number: 2, kind: 'fix', state: 'admitted', started: false, ending: null });
    const third = admitAttempt('t1', [first.attempt, fix, admitAttempt('t2', [], 'first')], 'fix');
    expect(third.number).toBe(3);
    expect(admitAttempt('t2', [first.attempt, fix], 'first').number).toBe(1);
  });

  it('a rate limit requeues the same attempt: it keeps its place, waits, and starts again', () => {
    const { attempt, effects } = walk([
      'gates_passed',
      'placement_acquired',
      'executor_started',
      'rate_limited',
      'window_reset',
      'executor_started',
    ]);
    expect(attempt).toMatchObject({ state: 'running', number: 1 });
    expect(effects).toEqual([
      'acquire_placement',
      'take_checkpoint',
      'start_executor',
      'wait_for_window',
      'start_executor',
    ]);
    expect(effects).not.toContain('release_placement');
  });

  it('a spent budget pauses before any placement and checks the gates again after the window', () => {
    const { attempt, effects } = walk(['budget_spent', 'window_reset', 'gates_passed']);
    expect(attempt.state).toBe('gated');
    expect(effects).toEqual(['wait_for_window', 'check_gates', 'acquire_placement']);
  });

  it('a failed result gate may escalate: a new attempt, this one superseded', () => {
    const { attempt, effects } = walk([
      'gates_passed',
      'placement_acquired',
      'executor_started',
      'exited',
      'evidence_taken',
      'verify_passed',
      'escalate',
    ]);
    expect(attempt).toMatchObject({ state: 'settled', ending: 'superseded' });
    expect(effects.at(-2)).toBe('admit_escalation_attempt');
    expect(admitAttempt('t1', [attempt], 'escalation')).toMatchObject({ number: 2, kind: 'escalation' });
  });
});

describe('random event sequences (seeded)', () => {
  it('never leave the table, and final states are absorbing', () => {
    const random = seeded(12);
    const endings = new Map<string, number>();
    // plain checks collected, one expect at the end: 160,000 expects would take seconds under load
    const problems: string[] = [];
    for (let run = 0; run < 4000; run++) {
      let attempt = fresh();
      for (let i = 0; i < 40; i++) {
        const event = ATTEMPT_EVENTS[Math.floor(random() * ATTEMPT_EVENTS.length)] as AttemptEventType;
        const row = findAttemptRow(attempt.state, event);
        const step = transition(attempt, { type: event });
        if (step.ok !== (row !== undefined))
          problems.push(`${attempt.state} ${event}: ok ${String(step.ok)} but row ${row ? 'exists' : 'missing'}`);
        if (!step.ok) continue;
        if (isFinalAttempt(attempt)) problems.push(`left final state ${attempt.state} on ${event}`);
        if (row?.to !== step.next.state || !ATTEMPT_STATES.includes(step.next.state))
          problems.push(`${attempt.state} ${event} went to ${step.next.state}`);
        attempt = step.next;
      }
      const key = attempt.state === 'settled' ? `settled:${attempt.ending ?? ''}` : attempt.state;
      endings.set(key, (endings.get(key) ?? 0) + 1);
      if (isFinalAttempt(attempt))
        for (const event of ATTEMPT_EVENTS)
          if (transition(attempt, { type: event }).ok) problems.push(`${attempt.state} took ${event}`);
    }
    expect(problems.slice(0, 5)).toEqual([]);
    // the walks cover both final states and several endings, so the check above was exercised
    expect(endings.get('interrupted') ?? 0).toBeGreaterThan(100);
    expect([...endings.keys()].filter((k) => k.startsWith('settled:')).length).toBeGreaterThanOrEqual(3);
  }, 30_000);
});
