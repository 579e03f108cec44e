import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { admitAttempt, transition, type Attempt, type AttemptEvent } from '../../src/domain/attempt-machine.js';
import type { AttemptEventType } from '../../src/domain/attempt-table.js';
import { jobStatusOf, taskResultOf, workerEndOf, type TaskResult } from '../../src/domain/attempt-results.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';

type Row = ReturnType<Engine['store']['listAttempts']>[number];
/** What the job's result says that the attempts' verification and gate facts are made of. */
interface ResultFacts {
  verification: { blocking: boolean; could_not_start?: boolean } | null;
  criteria_check?: { complete: boolean };
  proof: { verdict: string } | null;
}

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function openEngine(): Promise<Engine> {
  const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data') });
  engines.push(engine);
  return engine;
}

function walk(attempt: Attempt, events: (AttemptEventType | AttemptEvent)[]): Attempt {
  let a = attempt;
  for (const e of events) {
    const step = transition(a, typeof e === 'string' ? { type: e } : e);
    if (!step.ok) throw new Error(step.message);
    a = step.next;
  }
  return a;
}

/**
 * Replays a finished job's worker rows through the machine with the events a pipeline on attempts
 * would have fed (shared placement: one verification serves every task's final attempt, spec 03).
 */
function replay(rows: Row[], result: ResultFacts, cancelAsked: boolean): { attempts: Attempt[]; tasks: TaskResult[] } {
  const attempts: Attempt[] = [];
  const verification = {
    blocking: result.verification?.blocking ?? false,
    couldNotStart: result.verification?.could_not_start ?? false,
  };
  const gates = {
    criteriaMet: result.criteria_check?.complete ?? true,
    contradicted: result.proof?.verdict === 'contradicted',
  };
  for (const row of [...rows].sort((a, b) => a.ord - b.ord)) {
    const exit = { status: row.status, outcome: row.outcome ?? 'panic' };
    const isLast = !rows.some((r) => r.task === row.task && r.attempt > row.attempt);
    const events: (AttemptEventType | AttemptEvent)[] = ['gates_passed', 'placement_acquired'];
    if (row.started === null)
      events.push(
        cancelAsked ? 'cancel' : { type: 'launch_failed', facts: { exit } },
        ...(cancelAsked ? [{ type: 'processes_gone', facts: { exit } } as const] : []),
      );
    else if (row.status === 'cancelled')
      events.push('executor_started', 'cancel', { type: 'processes_gone', facts: { exit } });
    else {
      events.push(
        'executor_started',
        { type: 'exited', facts: { exit } },
        { type: 'evidence_taken', facts: { nothingChanged: row.report?.stopReason === 'nothing_changed' } },
      );
      if (cancelAsked) events.push('cancel', 'processes_gone');
      else if (!isLast) events.push({ type: 'verify_failed_fixable', facts: { verification } });
      else
        events.push(
          { type: verification.blocking ? 'verify_failed' : 'verify_passed', facts: { verification } },
          { type: 'result_gates_passed', facts: { gates } },
        );
    }
    const admitted = { ...admitAttempt(row.task, attempts, row.role === 'fixer' ? 'fix' : 'first') };
    expect(admitted.number, `${row.worker} is the task's next attempt`).toBe(row.attempt);
    attempts.push(walk(admitted, events));
  }
  const tasks = [...new Set(attempts.map((a) => a.task))].map(
    (t) => taskResultOf(attempts.filter((a) => a.task === t)) as TaskResult,
  );
  return { attempts, tasks };
}

/** Runs a job to its end and checks the machine's answers against the engine's: each row's words and the job's status. */
async function expectAgreement(
  engine: Engine,
  body: Record<string, unknown>,
  opts: { cancelWhen?: string } = {},
): Promise<string> {
  const { job } = engine.submit(body);
  if (opts.cancelWhen) {
    await engine.waitFor(job.id, opts.cancelWhen, 30);
    engine.cancel(job.id);
  }
  await engine.settled(job.id);
  const row = engine.store.getJob(job.id);
  const rows = engine.store.listAttempts(job.id);
  const { attempts, tasks } = replay(rows, row?.result as unknown as ResultFacts, opts.cancelWhen !== undefined);
  rows.forEach((r, i) =>
    expect(workerEndOf(attempts[i] as Attempt), r.worker).toEqual({ status: r.status, outcome: r.outcome }),
  );
  expect(jobStatusOf(tasks)).toBe(row?.status);
  return row?.status ?? '';
}

describe('the attempt machine agrees with the engine on real jobs', () => {
  it('done, partial (a worker failed, criteria unmet, fix rounds converged) and a fix round that succeeds', async () => {
    const engine = await openEngine();
    const calc = () => makeWorkspace(CALC_FILES);
    expect(
      await expectAgreement(engine, {
        workspace: calc(),
        verify: 'npm test',
        tasks: [{ name: 'fix-add', instruction: 'fix', command: FIX_ADD, files: ['src/math.js'] }],
      }),
    ).toBe('done');
    expect(
      await expectAgreement(engine, {
        workspace: makeWorkspace({ 'a.txt': 'a' }),
        verify: 'none',
        tasks: [{ instruction: 'fail', command: 'exit 3' }],
      }),
    ).toBe('partial');
    expect(
      await expectAgreement(engine, {
        workspace: makeWorkspace({ 'a.txt': 'a' }),
        verify: 'true',
        criteria: ['docs/api.md updated'],
        tasks: [{ instruction: 'edit', command: 'echo b >> a.txt' }],
      }),
    ).toBe('partial');
    expect(
      await expectAgreement(engine, {
        workspace: calc(),
        verify: 'npm test',
        fix_rounds: 3,
        tasks: [{ instruction: 'try', command: 'echo trying' }],
      }),
    ).toBe('partial');
    const fixOnSecond = `if grep -q 'verification of this work failed' "$GAFFER_INSTRUCTION_FILE"; then ${FIX_ADD}; else echo "// touched" >> src/math.js; fi`;
    expect(
      await expectAgreement(engine, {
        workspace: calc(),
        verify: 'npm test',
        fix_rounds: 2,
        tasks: [{ name: 'impl', instruction: 'fix', command: fixOnSecond }],
      }),
    ).toBe('done');
  }, 120_000);

  it('two tasks, one failing, and a task that changed nothing though it was to', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    expect(
      await expectAgreement(engine, {
        workspace: ws,
        verify: 'none',
        parallel: true,
        tasks: [
          { name: 'ok', instruction: 'w', command: 'echo b > b.txt' },
          { name: 'bad', instruction: 'f', command: 'exit 1' },
        ],
      }),
    ).toBe('partial');
    expect(
      await expectAgreement(engine, {
        workspace: makeWorkspace({ 'a.txt': 'a' }),
        verify: 'none',
        tasks: [{ type: 'implement', instruction: 'nothing', command: 'true' }],
      }),
    ).toBe('partial');
  }, 120_000);

  it('cancelled while the worker runs', async () => {
    const engine = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a' });
    expect(
      await expectAgreement(
        engine,
        {
          workspace: ws,
          verify: 'true',
          tasks: [{ name: 'slow', instruction: 'x', command: 'echo b > b.txt; sleep 60' }],
        },
        { cancelWhen: 'worker:slow:running' },
      ),
    ).toBe('cancelled');
  }, 120_000);
});
