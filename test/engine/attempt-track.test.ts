import { afterEach, describe, expect, it, vi } from 'vitest';
import { ATTEMPT_WARNING, AttemptTrack, endEventsFor } from '../../src/engine/attempt-track.js';
import type { WorkerOutcome, WorkerStatus } from '../../src/domain/status.js';

/** The warnings the track emitted (test/setup.ts would otherwise throw them). */
function captureWarnings(): string[] {
  const seen: string[] = [];
  vi.spyOn(process, 'emitWarning').mockImplementation((w: string | Error, opts?: unknown) => {
    const code = typeof opts === 'object' && opts !== null && 'code' in opts ? String((opts as { code: unknown }).code) : '';
    seen.push(`${code}: ${String(w)}`);
  });
  return seen;
}

const QUEUED = { status: 'queued', outcome: null } as const;
const RUNNING = { status: 'running', outcome: null } as const;
const report = (status: WorkerStatus, outcome: WorkerOutcome, limit?: 'processes' | 'memory') => ({ status, outcome, ...(limit ? { limit } : {}) });

/** The moves worker-run.ts makes, ending with the row's final words. */
function endAs(track: AttemptTrack, r: ReturnType<typeof report>, interrupting: boolean, rowStatus: WorkerStatus = r.status): void {
  track.move(endEventsFor(track.attempt, r, interrupting), { status: rowStatus, outcome: r.outcome });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the attempt machine shadowing worker rows', () => {
  it('agrees with every end worker-run.ts writes, without a warning', () => {
    const warnings = captureWarnings();
    const started = () => {
      const t = new AttemptTrack('t', 1, 'worker');
      t.move(['gates_passed', 'placement_acquired'], QUEUED);
      t.move(['executor_started'], RUNNING);
      return t;
    };
    // runner missing: refused before any place
    const missing = new AttemptTrack('t', 1, 'worker');
    endAs(missing, report('refused', 'expected_error'), false);
    expect(missing.attempt).toMatchObject({ state: 'settled', ending: 'refused' });
    // cancelled, and gaffer stopping, while it waited for a slot
    const waiting = () => {
      const t = new AttemptTrack('t', 1, 'worker');
      t.move(['gates_passed', 'placement_acquired'], QUEUED);
      return t;
    };
    endAs(waiting(), report('cancelled', 'cancelled'), false);
    endAs(waiting(), report('cancelled', 'cancelled'), true, 'interrupted');
    // the process's own ends
    for (const [status, outcome] of [['done', 'success'], ['timeout', 'panic'], ['stalled', 'panic'], ['error', 'panic'], ['refused', 'expected_error'], ['rate_limited', 'expected_error']] as const) {
      const t = started();
      endAs(t, report(status, outcome), false);
      expect(t.attempt.state).toBe('collecting');
    }
    const limited = started();
    endAs(limited, report('error', 'expected_error', 'processes'), false);
    expect(limited.attempt.state).toBe('collecting');
    const cancelled = started();
    endAs(cancelled, report('cancelled', 'cancelled'), false);
    expect(cancelled.attempt).toMatchObject({ state: 'settled', ending: 'cancelled' });
    const interrupted = started();
    endAs(interrupted, report('cancelled', 'cancelled'), true, 'interrupted');
    expect(interrupted.attempt.state).toBe('interrupted');
    // a rate limit waited out, then done; and one whose wait was cancelled
    const requeued = started();
    requeued.move(['rate_limited'], RUNNING);
    requeued.move(['window_reset', 'executor_started'], RUNNING);
    endAs(requeued, report('done', 'success'), false);
    const waitCancelled = started();
    waitCancelled.move(['rate_limited'], RUNNING);
    endAs(waitCancelled, report('rate_limited', 'expected_error'), false);
    expect(waitCancelled.attempt).toMatchObject({ state: 'settled', ending: 'cancelled' });
    const waitInterrupted = started();
    waitInterrupted.move(['rate_limited'], RUNNING);
    endAs(waitInterrupted, report('rate_limited', 'expected_error'), true);
    expect(warnings).toEqual([]);
  });

  it('warns, naming state and event, when the table refuses a move or the words differ from the row', () => {
    const warnings = captureWarnings();
    const t = new AttemptTrack('api-fix', 2, 'fixer');
    t.move(['executor_started'], RUNNING);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${ATTEMPT_WARNING}: attempt in state "admitted" cannot take event "executor_started"`);
    expect(warnings[0]).toContain('task api-fix, attempt 2');
    expect(t.attempt).toMatchObject({ state: 'admitted', kind: 'fix', number: 2 });
    t.move(['gates_passed'], RUNNING);
    expect(warnings[1]).toContain('reads queued/null, its row running/null');
  });
});
