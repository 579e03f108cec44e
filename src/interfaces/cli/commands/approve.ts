import type { ApprovalAnswer } from '../../../domain/approval.js';
import { GafferError } from '../../../domain/errors.js';
import type { CliContext } from '../cli-context.js';
import { renderCompact } from '../render.js';

/**
 * `gaffer approve JOB [TASK=yes|no]… [--task NAME]… [--deny] [--note TEXT]` (spec 02/05): each
 * `TASK=yes`/`TASK=no` answers that task; otherwise yes (or, with `--deny`, no) to the named tasks'
 * asks, or to every open ask when none is named. 0 answered; 2 when the job is not awaiting
 * approval, not found, or a task is not asked about.
 */
export async function approveCommand(
  cli: CliContext,
  id: string,
  flags: { answers?: string[]; task?: string[]; deny?: boolean; note?: string },
): Promise<number> {
  const yes = flags.deny !== true;
  const tasks = flags.task ?? [];
  if (tasks.some((t) => t.trim() === '')) throw new GafferError('invalid_request', '--task needs a task name', 'task');
  const given = (flags.answers ?? []).map(parseAnswer);
  if (given.length > 0 && (tasks.length > 0 || flags.deny === true)) {
    throw new GafferError(
      'invalid_request',
      'answer either with TASK=yes|no arguments or with --task/--deny, not both',
      'answers',
    );
  }
  const answer: ApprovalAnswer =
    given.length > 0
      ? Object.fromEntries(given)
      : tasks.length === 0
        ? yes
        : Object.fromEntries(tasks.map((t) => [t, yes]));
  const job = await (await cli.api()).approve(id, answer, flags.note ?? null);
  cli.out(cli.json ? JSON.stringify(job, null, 2) : renderCompact(job));
  return 0;
}

/** `api-fix=yes` → ['api-fix', true]; anything else is refused, naming the argument and the form. */
function parseAnswer(arg: string): [string, boolean] {
  const m = /^(.+)=(yes|no|y|n|true|false)$/i.exec(arg.trim());
  if (!m?.[1] || !m[2])
    throw new GafferError('invalid_request', `"${arg}": an answer is TASK=yes or TASK=no`, 'answers');
  return [m[1], /^(yes|y|true)$/i.test(m[2])];
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
            `  recommendation: ${ask.recommendation}${ask.judge_abstained ? ` (code-only: no judge model drafted it${ask.judge ? `; ${ask.judge}` : ''})` : ` (judge: ${ask.judge ?? "the roster's judge"})`}`,
            ...ask.pros.map((p) => `  + ${p}`),
            ...ask.cons.map((c) => `  - ${c}`),
            `  answer: gaffer approve ${job_id} ${ask.task}=yes (or ${ask.task}=no)`,
          ].join('\n'),
        )
        .join('\n\n'),
    );
  }
  return 0;
}
