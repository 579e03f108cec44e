import {
  approvalReasons,
  draftAsks,
  JUDGE_SYSTEM,
  judgePrompt,
  withJudgement,
  type ApprovalAnswer,
  type AskJson,
} from '../../domain/approval.js';
import { GafferError } from '../../domain/errors.js';
import type { TaskSpec } from '../../domain/request.js';
import type { Rung } from '../../domain/route.js';
import type { Store } from '../../store/store.js';
import { epochS } from '../clock.js';
import type { JobContext } from '../job-context.js';
import type { WorkerEnd } from '../pipeline/attempt-run.js';
import { noticeJob, notifyJob } from '../settle/notify.js';

/** How often a job awaiting approval looks for answers written by another process, ms. */
const ANSWER_POLL_MS = 500;

/** Jobs of this process awaiting approval, woken at once by an answer given here. */
const waiting = new Map<string, () => void>();

/** What the yes-gate let through: the tasks to run, and the rows of those refused. */
export interface Approval {
  approved: TaskSpec[];
  refused: WorkerEnd[];
}

/**
 * spec 05 "the yes-gate", before the job takes its workspace (or makes a worktree): the tasks that
 * need a yes are asked at once — a fan-out is one batch, a yes/no per item — and the job is
 * `awaiting_approval` until every ask is answered, or `approval.timeout_s` passes (unanswered is no).
 * Nothing runs or is spent meanwhile, and no other job waits on it. Each task not approved gets
 * its `refused` row from `refuse` (outcome `cancelled`). All tasks approved when policy asks nothing; null when
 * the job was cancelled while it waited.
 */
export async function seekApproval(
  ctx: JobContext,
  refuse: (task: TaskSpec, why: string) => WorkerEnd,
): Promise<Approval | null> {
  const { store, approval: policy, billing } = ctx.services;
  const reasons = approvalReasons(ctx.spec, policy, billing);
  if (reasons.size === 0) return { approved: ctx.spec.tasks, refused: [] };
  const opened = epochS();
  const drafted = await judged(ctx, draftAsks(ctx.spec, reasons));
  store.openAsks(ctx.id, drafted, opened);
  const names = [...reasons.keys()].join(', ');
  ctx.enter('awaiting_approval', `awaiting approval of ${names} — gaffer approve ${ctx.id}`);
  notifyJob(
    ctx.services.notify,
    { event: 'asks_opened', job: noticeJob(ctx.job), asks: drafted },
    ctx.jobDir,
    (why) => {
      if (ctx.job.status === 'awaiting_approval') ctx.phase(why);
    },
  );
  if (!(await awaitAnswers(ctx, opened))) return null;
  const asks = store.listAsks(ctx.id);
  // a task that was not asked about needs no yes
  const yes = new Set([
    ...ctx.spec.tasks.filter((t) => !reasons.has(t.name)).map((t) => t.name),
    ...asks.filter((a) => a.ask.answer === true).map((a) => a.ask.task),
  ]);
  const approved = ctx.spec.tasks.filter((t) => yes.has(t.name));
  for (const a of asks) if (a.ask.answer === true && reasons.has(a.ask.task)) ctx.approvedByAsk.add(a.ask.task);
  const refused = ctx.spec.tasks
    .filter((t) => !yes.has(t.name))
    .map((t) => {
      const ask = asks.find((a) => a.ask.task === t.name)?.ask;
      const by =
        ask?.answered_by === 'timeout'
          ? 'no answer in time'
          : ask?.answered_by === 'unattended'
            ? 'no one to answer (unattended)'
            : 'not approved';
      return refuse(t, `${by}${ask?.note ? `: ${ask.note}` : ''}`);
    });
  if (approved.length === 0) ctx.phase('not approved');
  // answered: queued again until it has its place (it may wait for the workspace)
  else
    ctx.enter(
      'queued',
      `approved: ${approved.map((t) => t.name).join(', ')}${refused.length > 0 ? `; not approved: ${refused.map((r) => r.plan.task.name).join(', ')}` : ''}`,
    );
  return { approved, refused };
}

/**
 * Waits until every open ask of the job is answered, or `approval.timeout_s` after `opened` (the
 * unanswered ones are answered no by the timeout). False when the job was cancelled meanwhile.
 */
async function awaitAnswers(ctx: JobContext, opened: number): Promise<boolean> {
  const { store, approval: policy, notify } = ctx.services;
  const openTasks = () =>
    store
      .listAsks(ctx.id)
      .filter((a) => a.ask.answer === null)
      .map((a) => a.ask.task);
  // spec 05: unattended with no one told of the ask (no notify command or webhook): the answer is no
  if (ctx.spec.unattended && notify.command === null && notify.webhook === null) {
    store.answerAsks(
      ctx.id,
      new Map(openTasks().map((task) => [task, false])),
      'unattended, and no one to answer: config notify names no command or webhook',
      'unattended',
      epochS(),
    );
  }
  try {
    for (let open = openTasks(); open.length > 0; open = openTasks()) {
      if (ctx.isCancelled) return false;
      const left = opened + policy.timeoutS - epochS();
      if (left <= 0) {
        store.answerAsks(
          ctx.id,
          new Map(open.map((task) => [task, false])),
          `no answer within ${policy.timeoutS} s`,
          'timeout',
          epochS(),
        );
        break;
      }
      await answerOrTick(ctx, Math.min(ANSWER_POLL_MS, left * 1000));
    }
  } finally {
    waiting.delete(ctx.id);
  }
  return !ctx.isCancelled;
}

/**
 * spec 05 "Escalation": the next rung needs a yes (an `api` entry): the job is `awaiting_approval`
 * again, one ask for the climb, and waits as a new job's asks do. True: approved; false: denied or
 * unanswered in time; null: the job was cancelled meanwhile. The caller lets go of the workspace first.
 */
export async function askToClimb(ctx: JobContext, task: TaskSpec, to: Rung, why: string): Promise<boolean | null> {
  const key = `${task.name}+${to.entry}`;
  const ask: AskJson = {
    task: key,
    issue: `${task.name} failed on its rung and the next one needs a yes before it runs`,
    why: `${why}; the next rung is billed ${to.billing}`,
    route: `${to.model ?? 'its default model'} (${to.provider}/${to.runner}, roster entry ${to.entry})`,
    recommendation:
      to.billing === 'api'
        ? 'approve only if the task is worth paying for: the cheaper rung could not do it'
        : 'approve if the task is worth a stronger worker: the cheaper rung could not do it',
    pros: ['a stronger worker, told what the cheaper rung did and how it failed'],
    cons: [
      ...(to.billing === 'api' ? ['spends money on an api-billed model'] : []),
      'the task has already failed once',
    ],
    blocking: true,
    judge_abstained: true,
    answer: null,
  };
  const opened = epochS();
  const was = ctx.job.status;
  const [drafted] = await judged(ctx, [ask]);
  ctx.services.store.openAsks(ctx.id, [drafted ?? ask], opened);
  ctx.enter('awaiting_approval', `awaiting approval of ${key} — gaffer approve ${ctx.id} ${key}=yes`);
  notifyJob(
    ctx.services.notify,
    { event: 'asks_opened', job: noticeJob(ctx.job), asks: [drafted ?? ask] },
    ctx.jobDir,
    (w) => {
      if (ctx.job.status === 'awaiting_approval') ctx.phase(w);
    },
  );
  if (!(await awaitAnswers(ctx, opened))) return null;
  const yes = ctx.services.store.listAsks(ctx.id).find((a) => a.ask.task === key)?.ask.answer === true;
  // answered: the job is where it was (a worktree job's other tasks may have gone on meanwhile)
  ctx.enter(was, `${key}: ${yes ? 'approved' : 'not approved'}`);
  return yes;
}

/** How long the judge may take over one ask before it counts as abstaining. */
const JUDGE_TIMEOUT_MS = 30_000;

/**
 * The roster's judge (spec 05) drafts each ask's recommendation through the builtin provider stack,
 * on its entry's endpoint; an ask it does not answer, or answers with a reply that does not fit what
 * it was asked for, keeps gaffer's code-only rationale, `judge_abstained` and why. Never a fabricated
 * verdict: with no judge configured, nothing is asked of any model.
 */
async function judged(ctx: JobContext, asks: AskJson[]): Promise<AskJson[]> {
  const judge = ctx.spec.judge;
  if (!judge) return asks;
  const runner = ctx.services.runners.get('builtin');
  const out: AskJson[] = [];
  for (const ask of asks) {
    // a climb's ask is keyed `<task>+<entry>` (a task's name never holds a `+`)
    const task = ctx.spec.tasks.find((t) => t.name === ask.task || ask.task.startsWith(`${t.name}+`));
    if (!task || !runner?.complete) {
      out.push(withJudgement(ask, judge.entry, new Error('the builtin runner is not available')));
      continue;
    }
    const text = await runner
      .complete({
        system: JUDGE_SYSTEM,
        prompt: judgePrompt(ask, task),
        model: judge.model,
        ...(judge.endpoint !== undefined ? { endpoint: judge.endpoint } : {}),
        timeoutMs: JUDGE_TIMEOUT_MS,
      })
      .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    out.push(withJudgement(ask, judge.entry, text));
  }
  return out;
}

/** Resolves on an answer given in this process, after `ms`, or on a cancel. */
function answerOrTick(ctx: JobContext, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      ctx.abort.signal.removeEventListener('abort', done);
      waiting.delete(ctx.id);
      resolve();
    };
    const timer = setTimeout(done, ms);
    ctx.abort.signal.addEventListener('abort', done, { once: true });
    waiting.set(ctx.id, done);
  });
}

/**
 * Answers a job's open asks (spec 02 `approve`): `true`/`false` for every open one, or a yes/no
 * per task name. Refused with `conflict` when the job is not awaiting approval, `invalid_request`
 * for a task the job does not ask about. Returns the tasks answered now.
 */
export function answerAsks(
  store: Store,
  job: { id: string; status: string },
  answer: ApprovalAnswer,
  note: string | null,
): string[] {
  if (job.status !== 'awaiting_approval')
    throw new GafferError(
      'conflict',
      `job ${job.id} is ${job.status}, not awaiting approval: there is nothing to answer`,
    );
  const open = store
    .listAsks(job.id)
    .filter((a) => a.ask.answer === null)
    .map((a) => a.ask.task);
  let answers: Map<string, boolean>;
  if (typeof answer === 'boolean') answers = new Map(open.map((task) => [task, answer]));
  else {
    const all = store.listAsks(job.id).map((a) => a.ask.task);
    const unknown = Object.keys(answer).filter((task) => !all.includes(task));
    if (unknown.length > 0) {
      throw new GafferError(
        'invalid_request',
        `approve: ${unknown.map((t) => `"${t}"`).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not asked about in job ${job.id} (asked: ${all.join(', ')})`,
        `approve.${unknown[0] ?? ''}`,
      );
    }
    answers = new Map(Object.entries(answer));
  }
  const answered = store.answerAsks(job.id, answers, note, null, epochS());
  waiting.get(job.id)?.();
  return answered;
}
