import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';
import type { RunnerReport } from '../../domain/runner-report.js';
import { join } from 'node:path';
import { taskResultOf } from '../../domain/attempt-results.js';
import { costOf, decideOutcomeStatus, type JobEndFacts, type OutcomeRecord } from '../../domain/outcome.js';
import type { TaskSpec } from '../../domain/request.js';
import { PRIVATE_FILE_MODE } from '../../platform/files/data-dir.js';
import type { AttemptRow } from '../../store/store.js';
import type { JobContext } from '../job-context.js';
import type { LedgerEntry } from '../pipeline/attempt-ledger.js';

/** The outcome log beside the store, in the data dir (spec 05). */
export const OUTCOMES_FILE = 'outcomes.jsonl';

/**
 * Appends `value` as one JSON line; answers what went wrong, or null. The line goes in one write(2)
 * through a descriptor opened with O_APPEND: every write lands at the file's end at the moment it
 * is made, and Linux writes a regular file under its inode lock, so the lines of concurrent writers
 * — this process's jobs, and other gaffer processes on the same data dir — land whole, one after
 * another, never interleaved. The descriptor is kept open (an open and a close cost more than the
 * write); a file removed or replaced meanwhile is opened again.
 */
export function appendJsonLine(file: string, value: object): string | null {
  try {
    writeSync(appendFd(file), `${JSON.stringify(value)}\n`);
    return null;
  } catch (err) {
    closeAppendFd(file);
    return err instanceof Error ? err.message : String(err);
  }
}

/** Open append descriptors by path, the most recently used last; past APPEND_FDS_KEPT the oldest is closed. */
const appendFds = new Map<string, { fd: number }>();
const APPEND_FDS_KEPT = 8;

function appendFd(file: string): number {
  const open = appendFds.get(file);
  if (open !== undefined) {
    appendFds.delete(file);
    // removed, or replaced by a rename over it: its inode has no link left, and lines written there would be lost
    if (fstatSync(open.fd).nlink > 0) {
      appendFds.set(file, open);
      return open.fd;
    }
    closeQuietly(open.fd);
  }
  const fd = openSync(file, 'a', PRIVATE_FILE_MODE);
  appendFds.set(file, { fd });
  if (appendFds.size > APPEND_FDS_KEPT) closeAppendFd(appendFds.keys().next().value as string);
  return fd;
}

function closeAppendFd(file: string): void {
  const open = appendFds.get(file);
  if (open === undefined) return;
  appendFds.delete(file);
  closeQuietly(open.fd);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
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
      for (const record of outcomesOf(ctx, task, rows, job, ts)) {
        // the store first: it is what `stats` reads; a line only for a row just written, so the two agree
        if (!ctx.services.store.recordOutcome(record, ctx.job.owner)) continue;
        const failed = appendJsonLine(join(ctx.services.dataDir, OUTCOMES_FILE), record);
        if (failed !== null) problems.push(`${task.name}: ${OUTCOMES_FILE}: ${failed}`);
      }
    }
  } catch (err) {
    problems.push(err instanceof Error ? err.message : String(err));
  }
  return problems;
}

/**
 * A task's outcomes, one per rung of its ladder it RAN on (spec 05: each rung's model is judged by
 * its own attempts): a rung it climbed from `failed` (or `abstained`), its last rung from its
 * attempts' result; with no climb, one outcome. A rung none of whose attempts got a process (held
 * by a budget and then cancelled, a runner that could not launch) ran no model and is no outcome; a
 * task that ran on no rung logs one line, `not_dispatched`, which no acceptance counts.
 */
function outcomesOf(
  ctx: JobContext,
  task: TaskSpec,
  rows: ReadonlyMap<string, AttemptRow>,
  job: JobEndFacts,
  ts: string,
): OutcomeRecord[] {
  const history = [...ctx.attempts.history(task.name)].sort((a, b) => a.attempt.number - b.attempt.number);
  // a climb's attempt starts a new rung; fix rounds and retries stay on theirs
  const rungs: LedgerEntry[][] = [];
  for (const e of history) {
    if (e.attempt.kind === 'escalation' || rungs.length === 0) rungs.push([e]);
    else rungs.at(-1)?.push(e);
  }
  if (rungs.length === 0) rungs.push([]);
  const ran = rungs.flatMap((attempts, i) => (attempts.some((e) => e.attempt.started) ? [i] : []));
  const logged = ran.length > 0 ? ran : [0];
  const climbs = (job.escalation ?? []).filter((c) => c.task === task.name && c.to !== null && !c.denied);
  return logged.map((i) => {
    const attempts = rungs[i] as LedgerEntry[];
    const last = attempts.at(-1);
    const lastReport = last ? (rows.get(last.worker)?.report ?? null) : null;
    const climb = i < rungs.length - 1 ? climbs[i] : undefined;
    const status =
      climb && ran.includes(i)
        ? climb.autopsy.at(-1)?.abstained
          ? 'abstained'
          : 'failed'
        : decideOutcomeStatus(taskResultOf(attempts.map((e) => e.attempt)));
    // spec 05: the route that ACTUALLY ran — the rung's last attempt's, not the next rung; no attempt: the task's own
    const route = last?.route ?? {
      runner: task.runner,
      model: task.model,
      entry: task.roster?.entry ?? null,
      provider: task.roster?.provider ?? null,
    };
    // who paid for each attempt is the Router's to say (a fallback's entry bills as itself)
    const cost = costOf(
      attempts.map((e) => ({
        billing: ctx.services.router.billing(task, e.route),
        ran: e.attempt.started,
        costUsd: spentUsd(rows.get(e.worker)?.report ?? null),
      })),
    );
    return {
      ts,
      job: ctx.id,
      task: task.name,
      rung: i + 1,
      type: task.type,
      runner: route.runner,
      model: route.model ?? lastReport?.modelServed ?? null,
      provider: route.provider,
      entry: route.entry,
      status,
      gates_passed: status === 'passed',
      escalated_to: climb?.to ?? null,
      // the task's end is said on the last rung logged: a rung above it that never ran has no line
      returned: i === logged.at(-1) && (job.returned?.has(task.name) ?? false),
      attempts: attempts.length,
      cost_usd: cost,
    };
  });
}

/** An attempt's dollars: its recorded spend (the runner's figure, else tokens × price, issue 15), else what its runner reported. */
function spentUsd(report: RunnerReport | null): number | null {
  return report?.spend ? report.spend.usd : (report?.costUsd ?? null);
}
