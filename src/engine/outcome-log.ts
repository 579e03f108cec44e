import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { taskResultOf } from '../domain/attempt-results.js';
import { costOf, decideOutcomeStatus, type JobEndFacts, type OutcomeRecord } from '../domain/outcome.js';
import type { TaskSpec } from '../domain/request.js';
import { PRIVATE_FILE_MODE } from '../platform/files/data-dir.js';
import type { AttemptRow } from '../store/store.js';
import type { JobContext } from './job-context.js';

/** The outcome log beside the store, in the data dir (spec 05). */
export const OUTCOMES_FILE = 'outcomes.jsonl';

/**
 * Appends `value` as one JSON line; answers what went wrong, or null. The line goes in one
 * `appendFileSync`: one open with O_APPEND and, for a line this short, one write(2) of all of it.
 * O_APPEND puts every write at the file's end at the moment it is made, and Linux writes a regular
 * file under its inode lock, so the lines of concurrent writers — this process's jobs, and other
 * gaffer processes on the same data dir — land whole, one after another, never interleaved.
 */
export function appendJsonLine(file: string, value: object): string | null {
  try {
    appendFileSync(file, `${JSON.stringify(value)}\n`, { mode: PRIVATE_FILE_MODE });
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * Logs each of the job's tasks' terminal outcome — a store row and a line of `outcomes.jsonl` —
 * from its attempts once every one is final (settle.ts; `failJob` when gaffer failed under the
 * job). A task already logged for this job is not logged again. Answers what could not be written.
 */
export function logOutcomes(ctx: JobContext, job: JobEndFacts): string[] {
  const problems: string[] = [];
  const ts = new Date().toISOString();
  try {
    const rows = new Map(ctx.services.store.listAttempts(ctx.id).map((r) => [r.worker, r]));
    for (const task of ctx.spec.tasks) {
      const record = outcomeOf(ctx, task, rows, job, ts);
      // the store first: it is what `stats` reads; a line only for a row just written, so the two agree
      if (!ctx.services.store.recordOutcome(record, ctx.job.owner)) continue;
      const failed = appendJsonLine(join(ctx.services.dataDir, OUTCOMES_FILE), record);
      if (failed !== null) problems.push(`${task.name}: ${OUTCOMES_FILE}: ${failed}`);
    }
  } catch (err) {
    problems.push(err instanceof Error ? err.message : String(err));
  }
  return problems;
}

/** One task's outcome from its attempts in the ledger and their rows' reports. */
function outcomeOf(ctx: JobContext, task: TaskSpec, rows: ReadonlyMap<string, AttemptRow>, job: JobEndFacts, ts: string): OutcomeRecord {
  const history = [...ctx.attempts.history(task.name)].sort((a, b) => a.attempt.number - b.attempt.number);
  const last = history.at(-1);
  const lastReport = last ? rows.get(last.worker)?.report ?? null : null;
  const status = decideOutcomeStatus(taskResultOf(history.map((e) => e.attempt)), lastReport?.stopReason ?? null, job);
  // spec 05: the route that ACTUALLY ran — the last attempt's, not the next rung; no attempt: the task's own
  const route = last?.route ?? { runner: task.runner, model: task.model, entry: task.roster?.entry ?? null, provider: task.roster?.provider ?? null };
  const cost = costOf(
    history.map((e) => ({
      billing: task.roster?.billing ?? ctx.services.billing(e.route.runner),
      ran: e.attempt.started,
      costUsd: rows.get(e.worker)?.report?.costUsd ?? null,
    })),
  );
  return {
    ts,
    job: ctx.id,
    task: task.name,
    type: task.type,
    runner: route.runner,
    model: route.model ?? lastReport?.modelServed ?? null,
    provider: route.provider,
    entry: route.entry,
    status,
    gates_passed: status === 'passed',
    escalated_to: null,
    returned: false,
    attempts: history.length,
    cost_usd: cost,
  };
}
