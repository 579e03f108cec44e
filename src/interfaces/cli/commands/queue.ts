import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { GafferError } from '../../../domain/errors.js';
import {
  isOpen,
  ownFields,
  ownFieldsText,
  parseQueueRecord,
  recordGaps,
  recordTask,
  taskNames,
  type QueueAttempt,
  type QueueRecord,
  type QueueStatus,
  type ReadRecord,
} from '../../../domain/queue-record.js';
import { isFinalStatus } from '../../../domain/status.js';
import type { CompactJob } from '../../../engine/queries/compact.js';
import type { CliContext } from '../cli-context.js';
import { recordOutcome } from './queue-outcome.js';

/** The folder `gaffer queue` reads when none is given (spec 05). */
const DEFAULT_DIR = 'dispatch';

/** One line of a queue report: the file, its id, what happened to it. */
interface Line {
  file: string;
  id: string | null;
  /** `ready`: not run yet and dispatchable (`ls` only); `skipped`: not considered by this run (finished, or its job still runs); `paused`: a budget or the breaker held the batch, its files untouched. */
  status: QueueStatus | 'malformed' | 'skipped' | 'ready' | 'paused';
  detail: string;
}

/** Reads each job once however many records name it. */
type JobReads = Map<string, Promise<CompactJob>>;

/**
 * `gaffer queue run [DIR] [--workspace W] [--wait]` (spec 05 "The task queue folder"): first every
 * `dispatched` record whose job has ended since gets its end written back, as `--wait` would have.
 * Then every open record is grounded (a queued task always is), a held or ungrounded one gets its
 * gaps written back (`returned`, `held`), a `returned` one unchanged since is refused, and the rest
 * go out as **one** job — so their approval asks come as one batch, a yes/no per item — routed by the
 * roster. Each record gets its status and job written back atomically; with `--wait` (or with no
 * server: the job is this process's), its final status and attempts too. A malformed file is
 * reported and skipped, never written to. Exit 1 when a record whose end this run wrote did not end
 * `done`, naming each; else 0.
 */
export async function queueRunCommand(
  cli: CliContext,
  dir: string | undefined,
  flags: { workspace?: string; wait?: boolean },
): Promise<number> {
  const folder = resolve(dir ?? DEFAULT_DIR);
  const read = readFolder(folder);
  const lines: Line[] = [];
  // the records whose end this run wrote back, collected or waited for: they make the exit code
  const ended: Line[] = [];
  const dispatch: { file: string; record: QueueRecord }[] = [];
  const jobs: JobReads = new Map();
  for (const r of read) {
    if ('malformed' in r) {
      lines.push({ file: r.file, id: null, status: 'malformed', detail: r.malformed });
      continue;
    }
    const { record } = r;
    if (record.status === 'dispatched') {
      const { line, wrote } = await collect(cli, jobs, folder, r.file, record);
      lines.push(line);
      if (wrote) ended.push(line);
      continue;
    }
    if (!isOpen(record)) {
      lines.push({
        file: r.file,
        id: record.id,
        status: 'skipped',
        detail: `status ${record.status}${record.job ? ` (job ${record.job})` : ''}`,
      });
      continue;
    }
    const gaps = recordGaps(record);
    if (gaps.length > 0) {
      const status = record.hold ? 'held' : 'returned';
      writeBack(folder, r.file, record, { status, gaps, job: null });
      lines.push({ file: r.file, id: record.id, status, detail: gaps.join('; ') });
      continue;
    }
    const unchanged = unchangedSinceReturned(record);
    if (unchanged !== null) {
      lines.push({ file: r.file, id: record.id, status: 'returned', detail: unchanged });
      continue;
    }
    dispatch.push({ file: r.file, record });
  }
  if (dispatch.length > 0) {
    const sent = await dispatchAll(cli, folder, dispatch, flags);
    lines.push(...sent.lines);
    ended.push(...sent.ended);
  }
  report(cli, folder, lines);
  const unsuccessful = ended.filter((l) => l.status !== 'done');
  if (unsuccessful.length === 0) return 0;
  cli.err(
    `gaffer queue: ${unsuccessful.length} of ${ended.length} record(s) that ran did not end done — ${unsuccessful.map((l) => `${l.file} (${l.id}): ${l.status}`).join(', ')}`,
  );
  return 1;
}

/**
 * `gaffer queue ls [DIR]`: each record with its status, its grounding gaps, and where it would run:
 * asked of admission as a dispatch would be (`lint`), so the roster, learned routing and billing
 * the prediction names are the ones the record would get. A dispatched record says how its job
 * stands; `ls` writes nothing, so one whose job ended waits for the next `queue run` to collect it.
 */
export async function queueListCommand(
  cli: CliContext,
  dir: string | undefined,
  flags: { workspace?: string },
): Promise<number> {
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
    const unchanged = unchangedSinceReturned(record);
    if (unchanged !== null) {
      lines.push({ file: r.file, id: record.id, status: 'returned', detail: unchanged });
      continue;
    }
    if (record.status === 'dispatched' && record.job) {
      lines.push({ file: r.file, id: record.id, status: 'dispatched', detail: await jobState(api, record.job) });
      continue;
    }
    const route = await predictRoute(api, workspace, record, r.file);
    lines.push({
      file: r.file,
      id: record.id,
      status: record.status ?? 'ready',
      detail: `${record.job ? `job ${record.job}; ` : ''}route: ${route}`,
    });
  }
  report(cli, folder, lines);
  return 0;
}

/** Where admission would route the record now, in words; a record it would refuse says why. */
async function predictRoute(
  api: Awaited<ReturnType<CliContext['api']>>,
  workspace: string,
  record: QueueRecord,
  file: string,
): Promise<string> {
  try {
    const { routes } = await api.lint({
      workspace,
      tasks: [recordTask(record, taskNames([record.id])[0] as string, file)],
    });
    const r = routes?.[0];
    if (!r) return 'unknown (the server did not say)';
    const where =
      r.entry !== null
        ? `roster entry ${r.entry} (${r.runner}${r.model ? `, ${r.model}` : ''})`
        : `runner ${r.runner}${r.model ? ` (${r.model})` : ''}`;
    return `${where}, billed ${r.billing}${r.why ? ` — ${r.why}` : ''}`;
  } catch (err) {
    if (!(err instanceof GafferError)) throw err;
    return `refused at dispatch: ${err.message}`;
  }
}

function readFolder(folder: string): ReadRecord[] {
  if (!existsSync(folder))
    throw new GafferError(
      'invalid_request',
      `queue folder ${folder} does not exist — give the folder of task records (default ./${DEFAULT_DIR})`,
      'dir',
    );
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

/**
 * A dispatched record whose job has ended since gets what `--wait` would have written back (its final
 * status, gaps and attempts); one whose job still runs is left as it is. Nothing else writes into the
 * folder, so without this a record sent without `--wait` would stay `dispatched` for good.
 */
async function collect(
  cli: CliContext,
  jobs: JobReads,
  folder: string,
  file: string,
  record: QueueRecord,
): Promise<{ line: Line; wrote: boolean }> {
  const left = (detail: string) => ({
    line: { file, id: record.id, status: 'skipped' as const, detail },
    wrote: false,
  });
  if (!record.job)
    return left(
      '"status" is "dispatched" but the record names no "job", so there is no end to collect — delete its "status" to send it again',
    );
  const id = record.job;
  let job: CompactJob;
  try {
    const api = await cli.api();
    if (!jobs.has(id)) jobs.set(id, api.get(id, true));
    job = await (jobs.get(id) as Promise<CompactJob>);
  } catch (err) {
    if (!(err instanceof GafferError)) throw err;
    return left(
      `"status" is "dispatched" (job ${id}) but that job cannot be read here: ${err.message} — run this against the server or data dir that ran it, or delete the record's "status" to send it again`,
    );
  }
  if (!isFinalStatus(job.status))
    return left(
      `status dispatched (job ${id} is ${job.status}: the first \`queue run\` after it ends writes its end back)`,
    );
  // a record dispatched before gaffer wrote `task` is named as it was then: from its id alone
  const task = record.task ?? (taskNames([record.id])[0] as string);
  if (!job.tasks.some((t) => t.name === task))
    return left(
      `"status" is "dispatched" (job ${id}, ended ${job.status}) but the job has no task "${task}" for this record — delete its "status" to send it again`,
    );
  const outcome = recordOutcome(task, job);
  writeBack(folder, file, record, {
    status: outcome.status,
    gaps: outcome.gaps,
    job: id,
    task,
    attempts: [...(record.attempts ?? []), ...outcome.attempts],
  });
  return {
    line: {
      file,
      id: record.id,
      status: outcome.status,
      detail: `collected: job ${id} ended ${job.verdict ?? job.status}`,
    },
    wrote: true,
  };
}

/** What `queue ls` says of a dispatched record's job: still running, or ended and waiting to be collected. */
async function jobState(api: Awaited<ReturnType<CliContext['api']>>, id: string): Promise<string> {
  try {
    const job = await api.get(id, false);
    return isFinalStatus(job.status)
      ? `job ${id} ended ${job.status}: the next \`gaffer queue run\` writes its end back`
      : `job ${id} is ${job.status}`;
  } catch (err) {
    if (!(err instanceof GafferError)) throw err;
    return `job ${id} cannot be read here: ${err.message}`;
  }
}

/**
 * Why a `returned` record is not sent again, or null when it may be. A record comes back for its
 * spawner to fix (its scope, its done_means, the gaps it was given): sent unchanged it would only
 * climb the same ladder to the same end, so it goes out again once its own fields have changed.
 */
function unchangedSinceReturned(record: QueueRecord): string | null {
  if (record.status !== 'returned') return null;
  // a record returned before gaffer kept the digest cannot show it changed: it is asked to, like any other
  if (record.returned_digest !== undefined && record.returned_digest !== digestOf(record)) return null;
  return `not sent again: "status" is "returned" and the record is unchanged since gaffer returned it${record.gaps?.length ? ' (its "gaps" say why)' : ''} — edit it (its instruction, files, type or done_means) to send it again, or delete its "status" to send it as it is`;
}

/** The digest of the record's own fields: it changes when its author changes one of them, never when gaffer writes back. */
function digestOf(record: QueueRecord): string {
  return createHash('sha256').update(ownFieldsText(record)).digest('hex').slice(0, 16);
}

async function dispatchAll(
  cli: CliContext,
  folder: string,
  items: { file: string; record: QueueRecord }[],
  flags: { workspace?: string; wait?: boolean },
): Promise<{ lines: Line[]; ended: Line[] }> {
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
      return {
        lines: items.map((i) => ({
          file: i.file,
          id: i.record.id,
          status: 'paused' as const,
          detail: `not dispatched, left as it was: ${err.message}`,
        })),
        ended: [],
      };
    }
    // the whole batch comes back: each record with its own gaps when the refusal names them, else the reason
    const named = new Map(
      ((err.extra.grounding as { task: string; gaps: string[] }[] | undefined) ?? []).map((g) => [g.task, g.gaps]),
    );
    const lines = items.map((i, k) => {
      const gaps = named.get(names[k] as string) ?? [`not dispatched: ${err.message}`];
      writeBack(folder, i.file, i.record, { status: 'returned', gaps, job: null });
      return { file: i.file, id: i.record.id, status: 'returned' as const, detail: gaps.join('; ') };
    });
    return { lines, ended: [] };
  }
  items.forEach((i, k) =>
    writeBack(folder, i.file, i.record, { status: 'dispatched', gaps: [], job: job.id, task: names[k] as string }),
  );
  // a server runs the job on after this process ends; with none the job is this process's, and closing it would cancel the job
  if (flags.wait !== true && api.engine === null) {
    return {
      lines: items.map((i) => ({
        file: i.file,
        id: i.record.id,
        status: 'dispatched' as const,
        detail: `job ${job.id}${job.status === 'awaiting_approval' ? ' (awaiting approval: gaffer asks)' : ''}; the next \`queue run\` after it ends writes its end back`,
      })),
      ended: [],
    };
  }
  await api.follow(job.id, 0, () => undefined);
  const full = await api.get(job.id, true);
  const lines = items.map((i, k) => {
    const task = names[k] as string;
    const outcome = recordOutcome(task, full);
    writeBack(folder, i.file, i.record, {
      status: outcome.status,
      gaps: outcome.gaps,
      job: job.id,
      task,
      attempts: [...(i.record.attempts ?? []), ...outcome.attempts],
    });
    return {
      file: i.file,
      id: i.record.id,
      status: outcome.status,
      detail: `job ${job.id}: ${full.verdict ?? full.status}`,
    };
  });
  return { lines, ended: lines };
}

/**
 * Writes gaffer's fields into the record's file atomically (a temporary file, then a rename over it);
 * a `returned` record keeps the digest of its own fields, so the next run can tell it was changed.
 */
function writeBack(
  folder: string,
  file: string,
  record: QueueRecord,
  fields: { status: QueueStatus; gaps: string[]; job: string | null; task?: string; attempts?: QueueAttempt[] },
): void {
  const attempts = fields.attempts ?? record.attempts;
  const next: QueueRecord = {
    ...ownFields(record),
    status: fields.status,
    ...(fields.gaps.length > 0 ? { gaps: fields.gaps } : {}),
    ...(fields.job ? { job: fields.job } : {}),
    ...(fields.job && fields.task ? { task: fields.task } : {}),
    ...(attempts ? { attempts } : {}),
    ...(fields.status === 'returned' ? { returned_digest: digestOf(record) } : {}),
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
