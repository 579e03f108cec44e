import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { GafferError } from '../../../domain/errors.js';
import { isOpen, parseQueueRecord, recordGaps, recordTask, taskNames, type QueueAttempt, type QueueRecord, type QueueStatus, type ReadRecord } from '../../../domain/queue-record.js';
import type { CompactJob } from '../../../engine/queries/compact.js';
import type { CompactWorkerEntry } from '../../../domain/answer.js';
import type { CliContext } from '../cli-context.js';

/** The folder `gaffer queue` reads when none is given (spec 05). */
const DEFAULT_DIR = 'dispatch';

/** One line of a queue report: the file, its id, what happened to it. */
interface Line {
  file: string;
  id: string | null;
  /** `ready`: not run yet and dispatchable (`ls` only); `skipped`: dispatched or finished before (`run`); `paused`: a budget or the breaker held the batch, its files untouched. */
  status: QueueStatus | 'malformed' | 'skipped' | 'ready' | 'paused';
  detail: string;
}

/**
 * `gaffer queue run [DIR] [--workspace W] [--wait]` (spec 05 "The task queue folder"): every open
 * record is grounded (a queued task always is), a held or ungrounded one gets its gaps written back
 * (`returned`, `held`), and the rest go out as **one** job — so their approval asks come as one
 * batch, a yes/no per item — routed by the roster. Each record gets its status and job written back
 * atomically; with `--wait`, its final status and attempts too. A malformed file is reported and
 * skipped, never written to.
 */
export async function queueRunCommand(cli: CliContext, dir: string | undefined, flags: { workspace?: string; wait?: boolean }): Promise<number> {
  const folder = resolve(dir ?? DEFAULT_DIR);
  const read = readFolder(folder);
  const lines: Line[] = [];
  const dispatch: { file: string; record: QueueRecord }[] = [];
  for (const r of read) {
    if ('malformed' in r) {
      lines.push({ file: r.file, id: null, status: 'malformed', detail: r.malformed });
      continue;
    }
    const { record } = r;
    if (!isOpen(record)) {
      lines.push({ file: r.file, id: record.id, status: 'skipped', detail: `status ${record.status}${record.job ? ` (job ${record.job})` : ''}` });
      continue;
    }
    const gaps = recordGaps(record);
    if (gaps.length > 0) {
      const status = record.hold ? 'held' : 'returned';
      writeBack(folder, r.file, record, { status, gaps, job: null });
      lines.push({ file: r.file, id: record.id, status, detail: gaps.join('; ') });
      continue;
    }
    dispatch.push({ file: r.file, record });
  }
  if (dispatch.length > 0) lines.push(...(await dispatchAll(cli, folder, dispatch, flags)));
  report(cli, folder, lines);
  return 0;
}

/**
 * `gaffer queue ls [DIR]`: each record with its status, its grounding gaps, and where it would run:
 * asked of admission as a dispatch would be (`lint`), so the roster, learned routing and billing
 * the prediction names are the ones the record would get.
 */
export async function queueListCommand(cli: CliContext, dir: string | undefined, flags: { workspace?: string }): Promise<number> {
  const folder = resolve(dir ?? DEFAULT_DIR);
  const workspace = resolve(flags.workspace ?? process.cwd());
  const api = await cli.api();
  const lines: Line[] = [];
  for (const r of readFolder(folder)) {
    if ('malformed' in r) {
      lines.push({ file: r.file, id: null, status: 'malformed', detail: r.malformed });
      continue;
    }
    const { record } = r;
    const gaps = isOpen(record) ? recordGaps(record) : [];
    if (gaps.length > 0) {
      lines.push({ file: r.file, id: record.id, status: record.hold ? 'held' : 'returned', detail: gaps.join('; ') });
      continue;
    }
    const route = await predictRoute(api, workspace, record, r.file);
    lines.push({ file: r.file, id: record.id, status: record.status ?? 'ready', detail: `${record.job ? `job ${record.job}; ` : ''}route: ${route}` });
  }
  report(cli, folder, lines);
  return 0;
}

/** Where admission would route the record now, in words; a record it would refuse says why. */
async function predictRoute(api: Awaited<ReturnType<CliContext['api']>>, workspace: string, record: QueueRecord, file: string): Promise<string> {
  try {
    const { routes } = await api.lint({ workspace, tasks: [recordTask(record, taskNames([record.id])[0] as string, file)] });
    const r = routes?.[0];
    if (!r) return 'unknown (the server did not say)';
    const where = r.entry !== null ? `roster entry ${r.entry} (${r.runner}${r.model ? `, ${r.model}` : ''})` : `runner ${r.runner}${r.model ? ` (${r.model})` : ''}`;
    return `${where}, billed ${r.billing}${r.why ? ` — ${r.why}` : ''}`;
  } catch (err) {
    if (!(err instanceof GafferError)) throw err;
    return `refused at dispatch: ${err.message}`;
  }
}

function readFolder(folder: string): ReadRecord[] {
  if (!existsSync(folder)) throw new GafferError('invalid_request', `queue folder ${folder} does not exist — give the folder of task records (default ./${DEFAULT_DIR})`, 'dir');
  return readdirSync(folder)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      try {
        return parseQueueRecord(file, readFileSync(join(folder, file), 'utf8'));
      } catch (err) {
        return { file, malformed: `cannot read it: ${(err as Error).message}` };
      }
    });
}

async function dispatchAll(cli: CliContext, folder: string, items: { file: string; record: QueueRecord }[], flags: { workspace?: string; wait?: boolean }): Promise<Line[]> {
  const names = taskNames(items.map((i) => i.record.id));
  const body = {
    workspace: resolve(flags.workspace ?? process.cwd()),
    title: `queue ${folder}: ${items.length} task(s)`,
    tasks: items.map((i, k) => recordTask(i.record, names[k] as string, i.file)),
  };
  const api = await cli.api();
  let job: CompactJob;
  try {
    job = (await api.submit(body, null)).job;
  } catch (err) {
    if (!(err instanceof GafferError)) throw err;
    // spec 07: a spent budget or an open breaker is a wait, not a fault of the records — they stay as they are, for the next run
    if (err.code === 'budget_paused' || err.code === 'breaker_open') {
      return items.map((i) => ({ file: i.file, id: i.record.id, status: 'paused' as const, detail: `not dispatched, left as it was: ${err.message}` }));
    }
    // the whole batch comes back: each record with its own gaps when the refusal names them, else the reason
    const named = new Map(((err.extra.grounding as { task: string; gaps: string[] }[] | undefined) ?? []).map((g) => [g.task, g.gaps]));
    return items.map((i, k) => {
      const gaps = named.get(names[k] as string) ?? [`not dispatched: ${err.message}`];
      writeBack(folder, i.file, i.record, { status: 'returned', gaps, job: null });
      return { file: i.file, id: i.record.id, status: 'returned' as const, detail: gaps.join('; ') };
    });
  }
  for (const i of items) writeBack(folder, i.file, i.record, { status: 'dispatched', gaps: [], job: job.id });
  if (flags.wait !== true) return items.map((i) => ({ file: i.file, id: i.record.id, status: 'dispatched' as const, detail: `job ${job.id}${job.status === 'awaiting_approval' ? ' (awaiting approval: gaffer asks)' : ''}` }));
  await api.follow(job.id, 0, () => undefined);
  const full = await api.get(job.id, true);
  return items.map((i, k) => {
    const name = names[k] as string;
    const rows = (full.result?.workers ?? []).filter((w) => w.name === name || w.name.startsWith(`${name}+`));
    const attempts: QueueAttempt[] = rows.map((w) => ({ job: job.id, worker: w.name, runner: w.runner, model: w.model ?? null, status: w.status, outcome: w.outcome }));
    // spec 05: a task its ladder could not carry comes back to its spawner with the autopsy, as its gaps
    const returned = full.result?.escalation?.filter((e) => e.task === name && e.returned === true).at(-1);
    const status = returned ? 'returned' : recordStatus(name, rows, full);
    const gaps = returned ? [returned.why, ...(returned.autopsy ?? []).map((a) => `${a.entry} (${a.model ?? a.runner}): ${a.gates.filter((g) => g.result !== 'pass').map((g) => `${g.gate} ${g.result}: ${g.detail}`).join('; ') || a.verification || a.status}`)] : [];
    writeBack(folder, i.file, i.record, { status, gaps, job: job.id, attempts: [...(i.record.attempts ?? []), ...attempts] });
    return { file: i.file, id: i.record.id, status, detail: `job ${job.id}: ${full.verdict ?? full.status}` };
  });
}

/**
 * A record's final status from its own task's end: its last attempt's row, its own gates, and the
 * verification and criteria that judged its work — never from how its siblings ended (the job is
 * `partial` when one of the batch was denied or failed; a record that passed is still done). A
 * cancel, a shutdown, or gaffer failing under the job is every task's.
 */
function recordStatus(task: string, rows: readonly CompactWorkerEntry[], job: CompactJob): QueueStatus {
  const row = rows.at(-1) ?? null;
  if (row?.status === 'refused') return 'refused';
  if (row?.status === 'cancelled' || row?.status === 'interrupted' || job.status === 'cancelled' || job.status === 'interrupted') return 'cancelled';
  if (row?.status !== 'done' || job.error !== null) return 'error';
  return ownWorkPassed(task, row, job.result) ? 'done' : 'failed';
}

/** The task's work passed what judged it: its worker changed what it was to, its own gates and criteria, and the verification of its work. */
function ownWorkPassed(task: string, row: CompactWorkerEntry, result: CompactJob['result']): boolean {
  // a worker done with nothing changed where a change was the task reads `expected_error` (issue 10)
  if (row.outcome !== 'success') return false;
  const gates = result?.gates?.filter((g) => g.task === task).at(-1);
  if (gates !== undefined && gates.verdict !== 'pass') return false;
  // a task's own criteria are listed as `<task>: <criterion>`; a queue's job declares none of its own
  if (result?.criteria_check?.unmet.some((c) => c.startsWith(`${task}: `))) return false;
  // a queue's job works in the shared workspace: one verification judges every task's work
  return result?.verification?.blocking !== true;
}

/** Writes gaffer's fields into the record's file atomically (a temporary file, then a rename over it). */
function writeBack(folder: string, file: string, record: QueueRecord, fields: { status: QueueStatus; gaps: string[]; job: string | null; attempts?: QueueAttempt[] }): void {
  const { status: _s, gaps: _g, job: _j, attempts: _a, updated: _u, ...own } = record;
  const next: QueueRecord = {
    ...own,
    status: fields.status,
    ...(fields.gaps.length > 0 ? { gaps: fields.gaps } : {}),
    ...(fields.job ? { job: fields.job } : {}),
    ...((fields.attempts ?? record.attempts) ? { attempts: fields.attempts ?? record.attempts } : {}),
    updated: new Date().toISOString(),
  };
  const target = join(folder, file);
  const tmp = join(folder, `.${file}.${process.pid}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`);
  renameSync(tmp, target);
}

function report(cli: CliContext, folder: string, lines: Line[]): void {
  if (cli.json) {
    cli.out(JSON.stringify({ folder, records: lines }, null, 2));
    return;
  }
  if (lines.length === 0) {
    cli.out(`no task records in ${folder}`);
    return;
  }
  cli.out(lines.map((l) => `${l.file}  ${l.id ?? '-'}  ${l.status}  ${l.detail}`).join('\n'));
}
