import { GafferError } from '../../../domain/errors.js';
import { JOB_STATUSES } from '../../../domain/status.js';
import type { BudgetRule } from '../../../domain/budget.js';
import type { CliContext } from '../cli-context.js';
import { renderFull } from '../render-full.js';
import { renderBrief, renderCompact, renderEvent, renderRunners, renderStats, renderWait } from '../render.js';

/** `gaffer status JOB [--full]`: with --full, also each attempt's route, the climbs with their autopsy, reroutes and spend. */
export async function statusCommand(cli: CliContext, id: string, flags: { full?: boolean }): Promise<number> {
  const full = flags.full ?? false;
  const job = await (await cli.api()).get(id, full);
  cli.out(
    cli.json ? JSON.stringify(job, null, 2) : full ? renderFull(job, configuredBudgets(cli)) : renderCompact(job),
  );
  return 0;
}

/**
 * The budgets of this data dir's config, which a server on it reads too; null when the config cannot
 * be read (the job is still shown: a server may have read it before it broke).
 */
function configuredBudgets(cli: CliContext): BudgetRule[] | null {
  try {
    return cli.config.config.budgets;
  } catch {
    return null;
  }
}

/** `gaffer wait JOB [--for COND] [--timeout-s N]`: 0 met, 1 not met. */
export async function waitCommand(
  cli: CliContext,
  id: string,
  flags: { for?: string; timeoutS?: string },
): Promise<number> {
  const timeoutS = flags.timeoutS === undefined ? 600 : Number(flags.timeoutS);
  if (!Number.isFinite(timeoutS) || timeoutS < 0 || timeoutS > 86_400) {
    throw new GafferError(
      'invalid_request',
      `--timeout-s must be 0..86400, got ${JSON.stringify(flags.timeoutS)}`,
      'timeout_s',
    );
  }
  const answer = await (await cli.api()).waitFor(id, flags.for, timeoutS);
  cli.out(cli.json ? JSON.stringify(answer, null, 2) : renderWait(answer));
  return answer.met ? 0 : 1;
}

/** `gaffer events JOB [--follow]`: with --follow, streams until the job ends (JSON lines with --json). */
export async function eventsCommand(cli: CliContext, id: string, flags: { follow?: boolean }): Promise<number> {
  const api = await cli.api();
  if (!flags.follow) {
    const answer = await api.events(id, 0);
    cli.out(cli.json ? JSON.stringify(answer, null, 2) : answer.events.map(renderEvent).join('\n'));
    return 0;
  }
  await api.get(id, false); // not found → exit 2 before anything streams
  await api.follow(id, 0, (e) => cli.out(cli.json ? JSON.stringify(e) : renderEvent(e)));
  return 0;
}

/** `gaffer cancel JOB`: 0 cancelling/cancelled, 1 already final (a conflict). */
export async function cancelCommand(cli: CliContext, id: string): Promise<number> {
  const api = await cli.api();
  let job = await api.cancel(id);
  // a server, or this process, runs it: the answer is already `cancelling`; another CLI process
  // picks the cancel up from the store within a moment: show that
  if (job.status !== 'cancelling' && api.engine !== null && !api.engine.runsJob(id)) {
    job = (await api.waitFor(id, 'event:cancelling', 5)).state;
  }
  cli.out(cli.json ? JSON.stringify(job, null, 2) : renderCompact(job));
  return 0;
}

/** `gaffer list [--limit N] [--status S]`. */
export async function listCommand(cli: CliContext, flags: { limit?: string; status?: string }): Promise<number> {
  const limit = flags.limit === undefined ? 20 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000) {
    throw new GafferError('invalid_request', `--limit must be 1..1000, got ${JSON.stringify(flags.limit)}`, 'limit');
  }
  if (flags.status !== undefined && !(JOB_STATUSES as readonly string[]).includes(flags.status)) {
    throw new GafferError(
      'invalid_request',
      `--status must be one of ${JOB_STATUSES.join(', ')}, got ${JSON.stringify(flags.status)}`,
      'status',
    );
  }
  const api = await cli.api();
  const jobs = await api.list(limit, flags.status);
  if (cli.json) cli.out(JSON.stringify({ jobs }, null, 2));
  else if (jobs.length > 0) cli.out(jobs.map(renderBrief).join('\n'));
  // "no jobs yet" beside a filter would claim there are none at all
  else if (flags.status !== undefined && (await api.list(1, undefined)).length > 0)
    cli.out(`no job matches --status ${flags.status} (gaffer list without it shows the latest jobs)`);
  else cli.out('no jobs yet');
  return 0;
}

/** `gaffer lint [FILE|-]`: 0 nothing to add, 1 problems found. */
export async function lintCommand(cli: CliContext, body: unknown): Promise<number> {
  const report = await (await cli.api()).lint(body);
  if (cli.json) cli.out(JSON.stringify(report, null, 2));
  else
    cli.out(
      report.ok
        ? 'nothing to add'
        : report.needs_detail.map((f) => `${f.task}: ${f.code} — ${f.message}; fix: ${f.fix}`).join('\n'),
    );
  return report.ok ? 0 : 1;
}

/** `gaffer stats`: the acceptance table and recent counts, from the server when there is one (spec 02). */
export async function statsCommand(cli: CliContext): Promise<number> {
  const stats = await (await cli.api()).stats();
  cli.out(cli.json ? JSON.stringify(stats, null, 2) : renderStats(stats));
  return 0;
}

/** `gaffer runners`: a table with a header; `disabled` with what keeps it off for an agent CLI the config leaves off. */
export async function runnersCommand(cli: CliContext): Promise<number> {
  const runners = await (await cli.api()).runners();
  cli.out(cli.json ? JSON.stringify({ runners }, null, 2) : renderRunners(runners));
  return 0;
}
