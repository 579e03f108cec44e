import { describe, expect, it } from 'vitest';
import {
  admitAttempt,
  transition,
  type Attempt,
  type AttemptEvent,
  type AttemptExit,
  type AttemptKind,
} from '../../src/domain/attempt-machine.js';
import type { AttemptEventType } from '../../src/domain/attempt-table.js';
import {
  decideJobStatus,
  jobStatusOf,
  taskResultOf,
  workerEndOf,
  type TaskResult,
} from '../../src/domain/attempt-results.js';

type Step = AttemptEventType | AttemptEvent;

function run(task: string, steps: Step[], kind: AttemptKind = 'first', history: Attempt[] = []): Attempt {
  let attempt = admitAttempt(task, history, kind);
  for (const s of steps) {
    const step = transition(attempt, typeof s === 'string' ? { type: s } : s);
    if (!step.ok) throw new Error(step.message);
    attempt = step.next;
  }
  return attempt;
}

const exit = (status: AttemptExit['status'], outcome: AttemptExit['outcome']): AttemptEvent => ({
  type: 'exited',
  facts: { exit: { status, outcome } },
});
const verified = (blocking: boolean, couldNotStart = false) => ({ verification: { blocking, couldNotStart } });
const gates = (criteriaMet = true, contradicted = false) => ({ gates: { criteriaMet, contradicted } });
const START: Step[] = ['gates_passed', 'placement_acquired', 'executor_started'];

/** An attempt that ran, exited `status`, and was verified and gated as given. */
function finished(
  task: string,
  status: AttemptExit['status'] = 'done',
  opts: {
    blocking?: boolean;
    nothingChanged?: boolean;
    criteriaMet?: boolean;
    contradicted?: boolean;
    couldNotStart?: boolean;
  } = {},
  kind: AttemptKind = 'first',
  history: Attempt[] = [],
): Attempt {
  const blocking = opts.blocking ?? false;
  return run(
    task,
    [
      ...START,
      exit(status, status === 'done' ? 'success' : 'panic'),
      { type: 'evidence_taken', facts: { nothingChanged: opts.nothingChanged ?? false } },
      { type: blocking ? 'verify_failed' : 'verify_passed', facts: verified(blocking, opts.couldNotStart) },
      { type: 'result_gates_passed', facts: gates(opts.criteriaMet, opts.contradicted) },
    ],
    kind,
    history,
  );
}

const results = (...tasks: Attempt[][]): TaskResult[] => tasks.map((attempts) => taskResultOf(attempts) as TaskResult);

describe('an attempt in today’s worker words', () => {
  it('reads its process’s end once it exited, whatever came after', () => {
    expect(workerEndOf(finished('t', 'done'))).toEqual({ status: 'done', outcome: 'success' });
    expect(workerEndOf(finished('t', 'timeout'))).toEqual({ status: 'timeout', outcome: 'panic' });
    // cancelled while verifying: the worker row keeps `done`, as today's row does
    expect(
      workerEndOf(run('t', [...START, exit('done', 'success'), 'evidence_taken', 'cancel', 'processes_gone'])),
    ).toEqual({ status: 'done', outcome: 'success' });
  });

  it('says done-but-nothing-changed is an expected error with the status kept (issue 10)', () => {
    expect(workerEndOf(finished('t', 'done', { nothingChanged: true }))).toEqual({
      status: 'done',
      outcome: 'expected_error',
    });
  });

  it('names the attempts that never had a process by how they ended', () => {
    expect(workerEndOf(run('t', ['refused']))).toEqual({ status: 'refused', outcome: 'expected_error' });
    expect(workerEndOf(run('t', ['approval_needed', 'approval_refused']))).toEqual({
      status: 'refused',
      outcome: 'expected_error',
    });
    expect(workerEndOf(run('t', ['gates_passed', 'placement_acquired', 'launch_failed']))).toEqual({
      status: 'error',
      outcome: 'panic',
    });
    expect(
      workerEndOf(
        run('t', [
          'gates_passed',
          'placement_acquired',
          { type: 'launch_failed', facts: { exit: { status: 'refused', outcome: 'expected_error' } } },
        ]),
      ),
    ).toEqual({ status: 'refused', outcome: 'expected_error' });
    expect(workerEndOf(run('t', ['gates_passed', 'cancel']))).toEqual({ status: 'cancelled', outcome: 'cancelled' });
  });

  it('reads interrupted for a process gaffer stopped, as recovery writes it', () => {
    expect(workerEndOf(run('t', [...START, 'interrupt']))).toEqual({ status: 'interrupted', outcome: 'cancelled' });
    expect(
      workerEndOf(
        run('t', [...START, { type: 'interrupt', facts: { exit: { status: 'cancelled', outcome: 'cancelled' } } }]),
      ),
    ).toEqual({ status: 'interrupted', outcome: 'cancelled' });
    // a worker that finished before gaffer stopped keeps its end (recovery closes open rows only)
    expect(workerEndOf(run('t', [...START, exit('done', 'success'), 'interrupt']))).toEqual({
      status: 'done',
      outcome: 'success',
    });
  });

  it('is queued before a process and running while one may live, with no outcome yet', () => {
    expect(workerEndOf(run('t', ['gates_passed']))).toEqual({ status: 'queued', outcome: null });
    expect(workerEndOf(run('t', START))).toEqual({ status: 'running', outcome: null });
  });
});

describe('a job’s status from its tasks’ final attempts (as settle.ts decides it)', () => {
  it('is done when every task’s worker finished, the verification passes and the gates hold', () => {
    expect(jobStatusOf(results([finished('a')], [finished('b')]))).toBe('done');
  });

  it('is partial when the verification blocks, could not start, a criterion is unmet, the proof is contradicted, nothing changed, or a worker did not finish', () => {
    expect(jobStatusOf(results([finished('a', 'done', { blocking: true })]))).toBe('partial');
    expect(jobStatusOf(results([finished('a', 'done', { couldNotStart: true })]))).toBe('partial');
    expect(jobStatusOf(results([finished('a', 'done', { criteriaMet: false })]))).toBe('partial');
    expect(jobStatusOf(results([finished('a', 'done', { contradicted: true })]))).toBe('partial');
    expect(jobStatusOf(results([finished('a', 'done', { nothingChanged: true })]))).toBe('partial');
    expect(jobStatusOf(results([finished('a')], [finished('b', 'stalled')]))).toBe('partial');
  });

  it('judges a fixed task by its final verification and its worker, not its fixer (spec 01 counts task workers)', () => {
    const first = run('a', [
      ...START,
      exit('done', 'success'),
      'evidence_taken',
      { type: 'verify_failed_fixable', facts: verified(true) },
    ]);
    // the fixer's own process errored, yet the verification after it passes: done, as settle.ts decides
    const fix = finished('a', 'error', {}, 'fix', [first]);
    expect(fix.number).toBe(2);
    const task = taskResultOf([fix, first]);
    expect(task).toMatchObject({
      task: 'a',
      attempts: 2,
      status: 'done',
      verificationBlocks: false,
      ending: 'finished',
    });
    expect(jobStatusOf([task as TaskResult])).toBe('done');
    // rounds used up and still failing: partial
    const lastFix = finished('a', 'done', { blocking: true }, 'fix', [first]);
    expect(jobStatusOf(results([first, lastFix]))).toBe('partial');
  });

  it('is cancelled when any task was cancelled, interrupted when gaffer stopped under it (before anything else)', () => {
    const cancelled = run('b', [...START, 'cancel', 'processes_gone']);
    expect(jobStatusOf(results([finished('a')], [cancelled]))).toBe('cancelled');
    const interrupted = run('b', [...START, 'interrupt']);
    expect(jobStatusOf(results([finished('a', 'done', { blocking: true })], [interrupted]))).toBe('interrupted');
  });

  it('is error when no attempt of any task got a process, and for a job with no attempts', () => {
    expect(
      jobStatusOf(
        results([run('a', ['refused'])], [run('b', ['gates_passed', 'placement_acquired', 'launch_failed'])]),
      ),
    ).toBe('error');
    expect(jobStatusOf([])).toBe('error');
    // one started: the other's refusal makes it partial, not error
    expect(jobStatusOf(results([run('a', ['refused'])], [finished('b')]))).toBe('partial');
  });

  it('is live while any final attempt is, named by the busiest one', () => {
    expect(jobStatusOf(results([run('a', ['gates_passed'])]))).toBe('queued');
    expect(jobStatusOf(results([run('a', ['approval_needed'])], [run('b', ['gates_passed'])]))).toBe(
      'awaiting_approval',
    );
    expect(jobStatusOf(results([run('a', START)], [run('b', [...START, 'exited'])]))).toBe('running');
    expect(jobStatusOf(results([finished('a')], [run('b', [...START, 'exited', 'evidence_taken'])]))).toBe('verifying');
    expect(jobStatusOf(results([run('a', START)], [run('b', [...START, 'cancel'])]))).toBe('cancelling');
  });

  it('decides in settle.ts’s order: interrupted, cancelled, error, then done only when everything holds', () => {
    const base = {
      interrupted: false,
      cancelled: false,
      nothingRan: false,
      workerStatuses: ['done' as const],
      verificationBlocks: false,
      nothingChanged: false,
      gatesPass: true,
    };
    expect(decideJobStatus(base)).toBe('done');
    expect(decideJobStatus({ ...base, interrupted: true, cancelled: true, nothingRan: true })).toBe('interrupted');
    expect(decideJobStatus({ ...base, cancelled: true, nothingRan: true })).toBe('cancelled');
    expect(decideJobStatus({ ...base, nothingRan: true })).toBe('error');
    expect(decideJobStatus({ ...base, workerStatuses: ['done', 'rate_limited'] })).toBe('partial');
  });
});
