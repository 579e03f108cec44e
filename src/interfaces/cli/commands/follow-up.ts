import { parseCommentFlag } from '../../../domain/follow-up.js';
import type { CliContext } from '../cli-context.js';
import { watchToEnd } from './watch.js';
import { renderCompact } from '../render.js';

/**
 * `gaffer follow-up JOB TASK --comment file:line:text … [--note TEXT] [--wait]` (issue 16): a new job
 * that sends the review back to the task. In process (no server) it runs here and waits, as dispatch
 * does; against a server it answers at once unless --wait. Waited: 0 when it ended done, else 1.
 */
export async function followUpCommand(
  cli: CliContext,
  id: string,
  task: string,
  flags: { comment?: string[]; note?: string; wait?: boolean },
): Promise<number> {
  const comments = (flags.comment ?? []).map(parseCommentFlag);
  const api = await cli.api();
  const { job } = await api.followUp(id, task, { comments, ...(flags.note !== undefined ? { note: flags.note } : {}) });
  const how = job.follow_up?.resumed ? 'resuming its session' : 'in a new session, told the diff';
  cli.err(`gaffer: follow-up job ${job.id} accepted for ${id} ${task} (${how})`);
  if (api.engine === null && !flags.wait) {
    cli.out(cli.json ? JSON.stringify(job, null, 2) : renderCompact(job));
    return 0;
  }
  const final = await watchToEnd(cli, api, job);
  cli.out(cli.json ? JSON.stringify(final, null, 2) : renderCompact(final));
  return final.status === 'done' ? 0 : 1;
}
