import type { ApprovalAnswer } from '../../../domain/approval.js';
import { GafferError } from '../../../domain/errors.js';
import type { CliContext } from '../cli-context.js';
import { renderCompact } from '../render.js';

/**
 * `gaffer approve JOB [--task NAME]… [--deny] [--note TEXT]` (spec 02/05): yes (or, with `--deny`,
 * no) to the named tasks' asks, or to every open ask when none is named. 0 answered; 2 when the
 * job is not awaiting approval, not found, or a task is not asked about.
 */
export async function approveCommand(cli: CliContext, id: string, flags: { task?: string[]; deny?: boolean; note?: string }): Promise<number> {
  const yes = flags.deny !== true;
  const tasks = flags.task ?? [];
  if (tasks.some((t) => t.trim() === '')) throw new GafferError('invalid_request', '--task needs a task name', 'task');
  const answer: ApprovalAnswer = tasks.length === 0 ? yes : Object.fromEntries(tasks.map((t) => [t, yes]));
  const job = await (await cli.api()).approve(id, answer, flags.note ?? null);
  cli.out(cli.json ? JSON.stringify(job, null, 2) : renderCompact(job));
  return 0;
}

/** `gaffer asks`: the open approval asks, oldest first, each with its job and how to answer it. */
export async function asksCommand(cli: CliContext): Promise<number> {
  const asks = await (await cli.api()).asks();
  if (cli.json) cli.out(JSON.stringify({ asks }, null, 2));
  else if (asks.length === 0) cli.out('no open asks');
  else {
    cli.out(
      asks
        .map(({ job_id, title, ask }) =>
          [
            `${job_id} ${ask.task} — ${title}`,
            `  ${ask.issue}; ${ask.why}`,
            `  route: ${ask.route}`,
            `  recommendation: ${ask.recommendation}${ask.judge_abstained ? ` (code-only: no judge model drafted it${ask.judge ? `; ${ask.judge}` : ''})` : ` (judge: ${ask.judge ?? 'the roster\'s judge'})`}`,
            ...ask.pros.map((p) => `  + ${p}`),
            ...ask.cons.map((c) => `  - ${c}`),
            `  answer: gaffer approve ${job_id} --task ${ask.task} [--deny]`,
          ].join('\n'),
        )
        .join('\n\n'),
    );
  }
  return 0;
}
