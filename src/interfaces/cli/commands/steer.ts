import type { CliContext } from '../cli-context.js';
import { watchToEnd } from './watch.js';
import { renderCompact } from '../render.js';

/**
 * `gaffer steer JOB TASK MESSAGE [--wait]` (issue 16): a message to a task of a job. A live builtin
 * worker reads it at its next turn; for one that takes no input mid-run it is queued as the task's
 * follow-up. A job that has ended gets the follow-up now: in process (no server) it runs here and is
 * waited for, as `gaffer follow-up` does; against a server only with --wait. 0 accepted (waited: 0
 * when the follow-up ended done, else 1; --json then adds its compact answer as `follow_up_state`); 2 refused.
 */
export async function steerCommand(
  cli: CliContext,
  id: string,
  task: string,
  message: string,
  flags: { wait?: boolean },
): Promise<number> {
  const api = await cli.api();
  const answer = await api.steer(id, task, message);
  cli.err(`gaffer: steer ${answer.id} (${answer.delivery}): ${answer.detail}`);
  if (answer.follow_up_job === null || (api.engine === null && !flags.wait)) {
    cli.out(
      cli.json
        ? JSON.stringify(answer, null, 2)
        : `${answer.delivery} ${answer.id}${answer.follow_up_job !== null ? ` follow-up ${answer.follow_up_job}` : ''}`,
    );
    return 0;
  }
  const final = await watchToEnd(cli, api, await api.get(answer.follow_up_job, false));
  cli.out(cli.json ? JSON.stringify({ ...answer, follow_up_state: final }, null, 2) : renderCompact(final));
  return final.status === 'done' ? 0 : 1;
}
