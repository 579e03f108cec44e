import { randomBytes } from 'node:crypto';
import type { AttemptState } from '../../domain/attempt-table.js';
import type { SteerAnswer } from '../../domain/answer.js';
import { GafferError } from '../../domain/errors.js';
import type { NewJobEvent } from '../../domain/events.js';
import { FOLLOW_UP_LIMITS } from '../../domain/follow-up.js';
import type { TaskSpec } from '../../domain/request.js';
import { isFinalStatus } from '../../domain/status.js';
import { parseSteerBody, steerEventText, steerNote, type SteerMessage, type SteerOffer } from '../../domain/steer.js';
import type { JobRow } from '../../store/store.js';
import { epochS } from '../clock.js';
import type { CompactJob } from '../queries/compact.js';
import type { JobContext } from '../job-context.js';
import type { Caller } from '../queries/queries.js';

/** The states of an attempt whose runner has not ended yet: it may still take a message at its next turn. */
const BEFORE_ITS_END: ReadonlySet<AttemptState> = new Set([
  'admitted',
  'awaiting_approval',
  'paused',
  'gated',
  'placed',
  'running',
  'requeued',
]);

/** What steering needs of the engine. */
export interface SteerDeps {
  visibleJob(id: string, caller: Caller): JobRow;
  /** Hands the message to the job when this process runs it; null for any other job. */
  offer(id: string, task: TaskSpec, message: SteerMessage): SteerOffer | null;
  followUp(id: string, task: string, body: unknown, caller: Caller): Promise<{ job: CompactJob }>;
  /** Records and announces events on a job this process does not run (one that has ended). */
  record(jobId: string, events: readonly NewJobEvent[]): void;
}

/**
 * A message to a task of a job (issue 16 "steering"). A live job run here keeps it for the task:
 * a worker that takes input mid-run (builtin) reads it before its next model call; for one that
 * takes none (agent CLIs, shell) it waits and goes to the task as a follow-up job when the job
 * ends. A job that has ended gets the follow-up now.
 */
export async function steerTask(
  deps: SteerDeps,
  id: string,
  taskName: string,
  body: unknown,
  caller: Caller,
): Promise<SteerAnswer> {
  const job = deps.visibleJob(id, caller);
  const { message: text } = parseSteerBody(body);
  const task = job.spec.tasks.find((t) => t.name === taskName);
  if (!task)
    throw new GafferError(
      'not_found',
      `job ${job.id} has no task ${JSON.stringify(taskName)} (its tasks: ${job.spec.tasks.map((t) => t.name).join(', ')})`,
      'task',
    );
  const message: SteerMessage = { id: `st-${randomBytes(4).toString('hex')}`, text, at: epochS() };
  const base = { id: message.id, job_id: job.id, task: task.name };

  if (isFinalStatus(job.status)) {
    // it ended before anyone could read it: the task's follow-up, now (refused as a follow-up is)
    const { job: follow } = await deps.followUp(job.id, task.name, { note: steerNote([message]) }, caller);
    deps.record(job.id, [
      {
        name: 'job',
        event: 'steer_received',
        message: `steer ${message.id} for ${task.name}: the job had ended, sent as a follow-up`,
        steer_id: message.id,
        task: task.name,
        delivery: 'queued_as_follow_up',
        worker: null,
        text: steerEventText(text),
      },
      followUpDelivered(message, task.name, follow.id),
    ]);
    return {
      ...base,
      delivery: 'queued_as_follow_up',
      worker: null,
      waiting: 0,
      follow_up_job: follow.id,
      detail: `job ${job.id} had ended (${job.status}): sent to ${task.name} as follow-up job ${follow.id}`,
    };
  }
  if (job.status === 'cancelling')
    throw new GafferError(
      'conflict',
      `job ${job.id} is being cancelled: nothing will read the message — once it has ended, send it again to start a follow-up`,
      'job_id',
    );
  const offer = deps.offer(job.id, task, message);
  if (offer === null) {
    throw new GafferError(
      'conflict',
      `job ${job.id} is run by another gaffer process (the server or the gaffer dispatch that started it): steer it there — point GAFFER_URL (or --url) at that server`,
      'job_id',
    );
  }
  const detail =
    offer.delivery === 'next_turn'
      ? `${offer.worker ?? `${task.name}'s ${offer.runner} worker`} reads it before its next model call${offer.worker === null ? ' once it starts' : ''} (a steer_delivered event says when)`
      : `${offer.takesInput ? `${task.name}'s ${offer.runner} worker has ended` : `${offer.runner} workers take no input while they run`}: queued for ${task.name}'s follow-up job, started when job ${job.id} ends (${offer.waiting} message(s) queued)`;
  return {
    ...base,
    delivery: offer.delivery,
    worker: offer.worker,
    waiting: offer.waiting,
    follow_up_job: null,
    detail,
  };
}

/**
 * Keeps a message for a task of a job this process runs: read at the next turn of a live attempt
 * whose runner takes input (or of the task's first attempt, not started yet, when its runner does);
 * otherwise queued for the task's follow-up (a worktree job's on the task's branch) — refused when
 * the messages queued for it would pass the follow-up's note limit.
 */
export function offerSteer(ctx: JobContext, task: TaskSpec, message: SteerMessage): SteerOffer {
  const { runners } = ctx.services;
  const attempts = ctx.attempts.history(task.name);
  const reader = attempts.find(
    (e) => BEFORE_ITS_END.has(e.attempt.state) && runners.get(e.route.runner)?.takesInput === true,
  );
  const firstReads = attempts.length === 0 && runners.get(task.runner)?.takesInput === true;
  const delivery = reader !== undefined || firstReads ? 'next_turn' : 'queued_as_follow_up';
  const note = steerNote([...ctx.inbox.waitingFor(task.name), message]);
  if (note.length > FOLLOW_UP_LIMITS.note) {
    throw new GafferError(
      'invalid_request',
      `message: the messages waiting for ${task.name} would come to ${note.length} characters, at most ${FOLLOW_UP_LIMITS.note} — send a shorter one, or wait for the task to read them`,
      'message',
    );
  }
  const worker = reader?.worker ?? null;
  const runner = reader?.route.runner ?? attempts.at(-1)?.route.runner ?? task.runner;
  const waiting = ctx.inbox.put(task.name, message, { delivery, worker });
  return { delivery, worker, runner, takesInput: runners.get(runner)?.takesInput === true, waiting };
}

/**
 * Once a job has ended, the messages no attempt read go to their task as a follow-up job, one per
 * task, their texts its note. Not after a cancel or an interrupt (nobody asked for more work then),
 * nor where a follow-up is refused; each message's end is an event on the job either way.
 */
export async function deliverQueuedSteers(ctx: JobContext, followUp: SteerDeps['followUp']): Promise<void> {
  const job = ctx.job;
  for (const [task, messages] of ctx.inbox.drain()) {
    if (messages.length === 0) continue;
    const undelivered = (why: string): NewJobEvent[] =>
      messages.map((m) => ({
        name: 'job',
        event: 'steer_undelivered',
        message: `steer ${m.id} for ${task} not delivered: ${why}`,
        steer_id: m.id,
        task,
        why,
      }));
    if (job.status === 'cancelled' || job.status === 'interrupted') {
      ctx.emitAll(undelivered(`the job ended ${job.status} — send it again to start a follow-up`));
      continue;
    }
    try {
      const { job: follow } = await followUp(job.id, task, { note: steerNote(messages) }, { owner: job.owner });
      ctx.emitAll(messages.map((m) => followUpDelivered(m, task, follow.id)));
    } catch (err) {
      ctx.emitAll(undelivered(err instanceof Error ? err.message : String(err)));
    }
  }
}

function followUpDelivered(m: SteerMessage, task: string, followUpJob: string): NewJobEvent {
  return {
    name: 'job',
    event: 'steer_delivered',
    message: `steer ${m.id} sent to ${task} as follow-up job ${followUpJob}`,
    steer_id: m.id,
    task,
    delivery: 'queued_as_follow_up',
    follow_up_job: followUpJob,
  };
}
