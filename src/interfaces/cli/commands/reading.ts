import { GafferError } from '../../../domain/errors.js';
import { isFinalStatus, JOB_STATUSES } from '../../../domain/status.js';
import type { CliContext } from '../cli-context.js';
import { renderBrief, renderCompact, renderEvent, renderWait } from '../render.js';

/** `gaffer status JOB [--full]`. */
export async function statusCommand(cli: CliContext, id: string, flags: { full?: boolean }): Promise<number> {
  const job = (await cli.engine()).get(id, { full: flags.full ?? false });
  cli.out(cli.json ? JSON.stringify(job, null, 2) : renderCompact(job));
  return 0;
}

/** `gaffer wait JOB [--for COND] [--timeout-s N]`: 0 met, 1 not met. */
export async function waitCommand(cli: CliContext, id: string, flags: { for?: string; timeoutS?: string }): Promise<number> {
  const timeoutS = flags.timeoutS === undefined ? 600 : Number(flags.timeoutS);
  if (!Number.isFinite(timeoutS) || timeoutS < 0 || timeoutS > 86_400) {
    throw new GafferError('invalid_request', `--timeout-s must be 0..86400, got ${JSON.stringify(flags.timeoutS)}`, 'timeout_s');
  }
  const answer = await (await cli.engine()).waitFor(id, flags.for, timeoutS);
  cli.out(cli.json ? JSON.stringify(answer, null, 2) : renderWait(answer));
  return answer.met ? 0 : 1;
}

/** `gaffer events JOB [--follow]`: with --follow, streams until the job ends. */
export async function eventsCommand(cli: CliContext, id: string, flags: { follow?: boolean }): Promise<number> {
  const engine = await cli.engine();
  const first = engine.events(id);
  if (!flags.follow) {
    cli.out(cli.json ? JSON.stringify(first, null, 2) : first.events.map(renderEvent).join('\n'));
    return 0;
  }
  // --follow prints one event per line (JSON lines with --json) and returns when the job is final
  const print = (e: (typeof first.events)[number]) => cli.out(cli.json ? JSON.stringify(e) : renderEvent(e));
  first.events.forEach(print);
  let after = first.events.at(-1)?.seq ?? 0;
  for (;;) {
    if (isFinalStatus(engine.get(id).status)) {
      engine.events(id, { after }).events.forEach(print);
      return 0;
    }
    // a reader in another process looks at the store at most every 200 ms (spec 02)
    await new Promise((r) => setTimeout(r, 200));
    const next = engine.events(id, { after }).events;
    next.forEach(print);
    after = next.at(-1)?.seq ?? after;
  }
}

/** `gaffer cancel JOB`: 0 cancelling/cancelled, 1 already final (a conflict). */
export async function cancelCommand(cli: CliContext, id: string): Promise<number> {
  const engine = await cli.engine();
  let job = engine.cancel(id);
  if (job.status !== 'cancelling' && !engine.runsJob(id)) {
    // another process runs it and picks the cancel up from the store within a moment: show that
    job = (await engine.waitFor(id, 'event:cancelling', 5)).state;
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
    throw new GafferError('invalid_request', `--status must be one of ${JOB_STATUSES.join(', ')}, got ${JSON.stringify(flags.status)}`, 'status');
  }
  const jobs = (await cli.engine()).list({ limit, ...(flags.status ? { status: flags.status } : {}) });
  cli.out(cli.json ? JSON.stringify({ jobs }, null, 2) : jobs.length ? jobs.map(renderBrief).join('\n') : 'no jobs yet');
  return 0;
}
