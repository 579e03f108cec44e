import { describe, expect, it } from 'vitest';
import { AttemptLedger, endEventsFor, type EffectAnswer } from '../../src/engine/pipeline/attempt-ledger.js';
import { workerEndOf, type WorkerEndWords } from '../../src/domain/attempt-results.js';
import type { AttemptEvent } from '../../src/domain/attempt-machine.js';
import type { AttemptEffect, AttemptEventType } from '../../src/domain/attempt-table.js';
import type { WorkerOutcome, WorkerStatus } from '../../src/domain/status.js';

const ROUTE = { runner: 'shell', model: null, entry: null, provider: null };
const QUEUED = { status: 'queued', outcome: null } as const;
const RUNNING = { status: 'running', outcome: null } as const;
const report = (status: WorkerStatus, outcome: WorkerOutcome, limit?: 'processes' | 'memory') => ({
  status,
  outcome,
  ...(limit ? { limit } : {}),
});

/** Each event after carrying out what the last move owes, and what the last owes (no handlers here: nothing is answered). */
function feed(ledger: AttemptLedger, events: readonly (AttemptEventType | AttemptEvent)[]): WorkerEndWords {
  const carryAll = () => {
    while (ledger.owed('t').length > 0)
      ledger.move('t', ledger.carry('t', ledger.owed('t')[0] as AttemptEffect) as EffectAnswer);
  };
  for (const e of events) {
    carryAll();
    ledger.move('t', [e]);
  }
  if (events.length > 0 && ledger.entry('t').attempt.state !== 'running') carryAll();
  return workerEndOf(ledger.entry('t').attempt);
}

/** A ledger with one attempt, and the moves attempt-run.ts makes for it. */
function oneAttempt(role: 'worker' | 'fixer' = 'worker') {
  const ledger = new AttemptLedger();
  // as attempt-run.ts's: the stop answers that the processes are gone
  ledger.admit('t', 't', role, ROUTE).handlers = {
    stop_processes: () => (ledger.entry('t').attempt.state === 'cancelling' ? [{ type: 'processes_gone' }] : []),
  };
  const end = (r: ReturnType<typeof report>, isInterrupting: boolean, gotProcess = true): WorkerEndWords =>
    feed(ledger, endEventsFor(ledger.entry('t').attempt, r, { isInterrupting, gotProcess }));
  return {
    ledger,
    end,
    attempt: () => ledger.entry('t').attempt,
    feed: (events: readonly (AttemptEventType | AttemptEvent)[]) => feed(ledger, events),
  };
}
function started() {
  const a = oneAttempt();
  expect(a.feed(['gates_passed', 'placement_acquired'])).toEqual(QUEUED);
  expect(a.feed(['executor_started'])).toEqual(RUNNING);
  return a;
}

describe("the attempt ledger: worker rows in the machine's words", () => {
  it('says every end attempt-run.ts writes', () => {
    // runner missing: refused before any place
    const missing = oneAttempt();
    expect(missing.end(report('refused', 'expected_error'), false)).toEqual({
      status: 'refused',
      outcome: 'expected_error',
    });
    expect(missing.attempt()).toMatchObject({ state: 'settled', ending: 'refused' });
    // cancelled, and gaffer stopping, while it waited for a slot
    const waiting = () => {
      const a = oneAttempt();
      a.feed(['gates_passed', 'placement_acquired']);
      return a;
    };
    expect(waiting().end(report('cancelled', 'cancelled'), false)).toEqual({
      status: 'cancelled',
      outcome: 'cancelled',
    });
    expect(waiting().end(report('cancelled', 'cancelled'), true)).toEqual({
      status: 'interrupted',
      outcome: 'cancelled',
    });
    // the process's own ends
    for (const [status, outcome] of [
      ['done', 'success'],
      ['timeout', 'panic'],
      ['stalled', 'panic'],
      ['error', 'panic'],
      ['rate_limited', 'expected_error'],
    ] as const) {
      const a = started();
      expect(a.end(report(status, outcome), false)).toEqual({ status, outcome });
      expect(a.attempt().state).toBe('collecting');
    }
    const limited = started();
    expect(limited.end(report('error', 'expected_error', 'processes'), false)).toEqual({
      status: 'error',
      outcome: 'expected_error',
    });
    expect(limited.attempt().state).toBe('collecting');
    const cancelled = started();
    expect(cancelled.end(report('cancelled', 'cancelled'), false)).toEqual({
      status: 'cancelled',
      outcome: 'cancelled',
    });
    expect(cancelled.attempt()).toMatchObject({ state: 'settled', ending: 'cancelled' });
    const interrupted = started();
    expect(interrupted.end(report('cancelled', 'cancelled'), true)).toEqual({
      status: 'interrupted',
      outcome: 'cancelled',
    });
    expect(interrupted.attempt().state).toBe('interrupted');
    // a rate limit waited out, then done; and one whose wait was cancelled, or stopped by a shutdown
    const requeued = started();
    expect(requeued.ledger.move('t', ['rate_limited'])).toEqual(RUNNING);
    expect(requeued.ledger.owed('t')).toEqual(['wait_for_window']);
    expect(requeued.feed(['window_reset', 'executor_started'])).toEqual(RUNNING);
    expect(requeued.end(report('done', 'success'), false)).toEqual({ status: 'done', outcome: 'success' });
    const waitCancelled = started();
    waitCancelled.feed(['rate_limited']);
    expect(waitCancelled.end(report('rate_limited', 'expected_error'), false)).toEqual({
      status: 'rate_limited',
      outcome: 'expected_error',
    });
    expect(waitCancelled.attempt()).toMatchObject({ state: 'settled', ending: 'cancelled' });
    const waitInterrupted = started();
    waitInterrupted.feed(['rate_limited']);
    waitInterrupted.end(report('rate_limited', 'expected_error'), true);
    expect(waitInterrupted.attempt().state).toBe('interrupted');
  });

  it('a spawn that failed, or a runner that refused at its start, got no process: launch_failed, and the task never started', () => {
    const spawnFailed = started();
    expect(spawnFailed.end(report('error', 'panic'), false, false)).toEqual({ status: 'error', outcome: 'panic' });
    expect(spawnFailed.attempt()).toMatchObject({ state: 'settled', ending: 'launch_failed', started: false });
    const refused = started();
    expect(refused.end(report('refused', 'expected_error'), false, false)).toEqual({
      status: 'refused',
      outcome: 'expected_error',
    });
    expect(refused.ledger.taskResults()[0]).toMatchObject({ started: false, status: 'refused' });
    expect(refused.ledger.jobStatus({ cancelled: false, interrupted: false })).toBe('error');
  });

  it("numbers a task's attempts in order, fix attempts included, and keeps each one's route", () => {
    const ledger = new AttemptLedger();
    ledger.admit('a', 'a', 'worker', ROUTE);
    ledger.admit('b', 'b', 'worker', ROUTE);
    ledger.admit('fixer-1', 'a', 'fixer', { runner: 'builtin', model: 'm', entry: null, provider: null });
    ledger.admit('fixer-2', 'a', 'fixer', ROUTE);
    expect(ledger.history('a').map((e) => [e.worker, e.attempt.number, e.attempt.kind, e.route.runner])).toEqual([
      ['a', 1, 'first', 'shell'],
      ['fixer-1', 2, 'fix', 'builtin'],
      ['fixer-2', 3, 'fix', 'shell'],
    ]);
    expect(ledger.history('b').map((e) => e.attempt.number)).toEqual([1]);
  });

  it('refuses a move the table does not allow, naming state, event, task and attempt', () => {
    const ledger = new AttemptLedger();
    ledger.admit('fixer-1', 'api-fix', 'fixer', ROUTE);
    expect(() => ledger.move('fixer-1', ['executor_started'])).toThrow(
      /attempt in state "admitted" cannot take event "executor_started".*task api-fix, attempt 1/,
    );
    expect(ledger.entry('fixer-1').attempt).toMatchObject({ state: 'admitted', kind: 'fix' });
  });

  it('refuses an event while the last move owes an effect, and an effect out of its order; a cancel drops what is owed', () => {
    const a = oneAttempt();
    expect(a.ledger.owed('t')).toEqual(['check_gates']);
    expect(() => a.ledger.move('t', ['gates_passed'])).toThrow(
      /cannot take event "gates_passed" before carrying out check_gates/,
    );
    a.feed(['gates_passed']);
    a.ledger.move('t', ['placement_acquired']);
    expect(a.ledger.owed('t')).toEqual(['take_checkpoint', 'start_executor']);
    expect(() => a.ledger.carry('t', 'start_executor')).toThrow(
      /cannot carry out "start_executor": it owes take_checkpoint, start_executor first/,
    );
    void a.ledger.carry('t', 'take_checkpoint');
    a.ledger.move('t', ['cancel']);
    expect(a.attempt()).toMatchObject({ state: 'cancelling', owed: ['stop_processes'] });
    expect(a.attempt().carried).toEqual([
      { effect: 'check_gates', at: 0 },
      { effect: 'acquire_placement', at: 1 },
      { effect: 'take_checkpoint', at: 2 },
      { effect: 'start_executor', at: 2, dropped: true },
    ]);
  });

  it('drives an attempt: each owed effect its handler carries out, each answer fed next, until the job owes the next', async () => {
    const ledger = new AttemptLedger();
    const entry = ledger.admit('t', 't', 'worker', ROUTE);
    const ran: string[] = [];
    entry.handlers = {
      check_gates: () => (ran.push('check_gates'), [{ type: 'gates_passed' }]),
      acquire_placement: async () => (ran.push('acquire_placement'), [{ type: 'placement_acquired' }]),
      take_checkpoint: () => (ran.push('take_checkpoint'), []),
      start_executor: () => (
        ran.push('start_executor'),
        [{ type: 'executor_started' }, { type: 'exited', facts: { exit: { status: 'done', outcome: 'success' } } }]
      ),
    };
    const moved: string[] = [];
    await ledger.drive('t', [], { moved: (e) => moved.push(e.type) });
    expect(ran).toEqual(['check_gates', 'acquire_placement', 'take_checkpoint', 'start_executor']);
    expect(moved).toEqual(['gates_passed', 'placement_acquired', 'executor_started', 'exited']);
    // collect_evidence is the job's: the drive stops with it owed, and a job status is refused meanwhile
    expect(ledger.entry('t').attempt).toMatchObject({ state: 'collecting', owed: ['collect_evidence'] });
    // the job answers what its place did once for all its attempts
    ledger.driveNow('t', [], {
      collect_evidence: () => [{ type: 'evidence_taken' }],
      run_verification: () => [{ type: 'verify_passed' }],
    });
    expect(ledger.entry('t').attempt).toMatchObject({ state: 'gated_result', owed: ['check_result_gates'] });
    ledger.driveNow('t', [], { check_result_gates: () => [{ type: 'result_gates_passed' }] });
    expect(() => ledger.jobStatus({ cancelled: false, interrupted: false })).toThrow(
      /effects not carried out: t \(release_placement\)/,
    );
    entry.handlers.release_placement = () => (ran.push('release_placement'), []);
    ledger.driveNow('t', []);
    expect(ran.at(-1)).toBe('release_placement');
    expect(ledger.jobStatus({ cancelled: false, interrupted: false })).toBe('done');
  });

  it('carries at once only what does not wait', () => {
    const ledger = new AttemptLedger();
    ledger.admit('t', 't', 'worker', ROUTE);
    expect(() => ledger.driveNow('t', [], { check_gates: async () => [{ type: 'gates_passed' }] })).toThrow(
      /an effect of t waits/,
    );
  });

  it('will not read a job status while an attempt is open', () => {
    const a = started();
    expect(() => a.ledger.jobStatus({ cancelled: false, interrupted: false })).toThrow(
      /attempts still open: t \(running\)/,
    );
  });
});
