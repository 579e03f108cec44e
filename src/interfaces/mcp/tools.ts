import {
  compactJobSchema,
  jobAnswerSchema,
  jobListSchema,
  steerAnswerSchema,
  waitAnswerSchema,
} from '../../domain/answer-schema.js';
import type { WaitAnswerJson } from '../../domain/answer.js';
import { GafferError } from '../../domain/errors.js';
import { parseApproveBody } from '../../domain/approval.js';
import { STEER_LIMITS } from '../../domain/steer.js';
import type { Engine } from '../../engine/engine.js';
import { monotonicMs } from '../../engine/clock.js';
import { checkAnswer } from '../answer-check.js';
import { jobRequestJsonSchema } from './schema.js';

/** What a tool call reaches. */
export interface ToolContext {
  engine: Engine;
  owner: string | null;
  /** The client's working directory when known: a dispatch from inside a live job's workspace may not name a parent of it. */
  cwd: string | null;
  /** Sends a progress notification when the caller asked for them. */
  progress: (progress: number, total: number, message: string) => Promise<void>;
  signal: AbortSignal;
}

/** One MCP tool: a thin adapter over an engine call; the same JSON as the HTTP route. */
export interface Tool {
  name: string;
  description: string;
  inputSchema: () => Record<string, unknown>;
  /** The tool's answer: a JSON object, sent as text and as structured content alike. */
  run: (args: Record<string, unknown>, ctx: ToolContext) => Promise<Record<string, unknown>>;
}

/** MCP clients commonly time a request out at 60 s: waits default to 50 s (spec 02), at most 600. */
export const WAIT_DEFAULT_S = 50;
export const WAIT_MAX_S = 600;
const PROGRESS_EVERY_S = 10;

// the answers name a job `id` and the tools' parameter is `job_id`: both are taken, so neither can be
// `required` (a top-level anyOf could say "one of the two", but some model APIs refuse one)
const jobId = {
  job_id: {
    type: 'string',
    description:
      "the job's id (12 hex chars): the `id` in the answer of workers_dispatch, workers_list or workers_status. Give it as job_id or as id",
  },
  id: { type: 'string', description: 'the same as job_id, under the name the answers use: give one of the two' },
};
const object =
  (properties: Record<string, unknown>, required: string[] = []) =>
  () => ({ type: 'object', properties, required, additionalProperties: false });

function stringArg(args: Record<string, unknown>, name: string): string;
function stringArg(args: Record<string, unknown>, name: string, required: false): string | undefined;
function stringArg(args: Record<string, unknown>, name: string, required = true): string | undefined {
  const value = args[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '')
    throw new GafferError('invalid_request', `${name}: must be a non-empty string, got ${JSON.stringify(value)}`, name);
  return value;
}

/** The job a call names, as `job_id` or as `id` (both given must agree). */
function jobIdArg(args: Record<string, unknown>): string {
  const { job_id: jobId, id } = args;
  if (jobId !== undefined && id !== undefined && jobId !== id) {
    throw new GafferError(
      'invalid_request',
      `job_id and id name different jobs (${JSON.stringify(jobId)}, ${JSON.stringify(id)}): give one of them`,
      'job_id',
    );
  }
  const value = jobId ?? id;
  if (typeof value !== 'string' || value === '')
    throw new GafferError(
      'invalid_request',
      `job_id: the job's id is required (as job_id or \`id\`), got ${JSON.stringify(value)}`,
      'job_id',
    );
  return value;
}

function timeoutArg(args: Record<string, unknown>): number {
  const value = args.timeout_s ?? WAIT_DEFAULT_S;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > WAIT_MAX_S) {
    throw new GafferError(
      'invalid_request',
      `timeout_s: must be 0..${WAIT_MAX_S}, got ${JSON.stringify(value)}`,
      'timeout_s',
    );
  }
  return value;
}

/**
 * One wait for the whole timeout (slices would lose a `changed` baseline and spin on a condition
 * that can no longer hold), with a progress notification every 10 s while it lasts.
 */
async function waitWithProgress(
  ctx: ToolContext,
  id: string,
  condition: string,
  timeoutS: number,
): Promise<WaitAnswerJson> {
  const started = monotonicMs();
  const timer = setInterval(() => {
    try {
      const job = ctx.engine.get(id, { owner: ctx.owner });
      ctx
        .progress(Math.round((monotonicMs() - started) / 1000), timeoutS, `${job.status}: ${job.phase ?? ''}`)
        .catch(() => undefined);
    } catch {
      // the job is gone (pruned) or the store is closing: the wait answers for itself
    }
  }, PROGRESS_EVERY_S * 1000);
  try {
    return await ctx.engine.waitFor(id, condition, timeoutS, { owner: ctx.owner, signal: ctx.signal });
  } finally {
    clearInterval(timer);
  }
}

export const TOOLS: Tool[] = [
  {
    name: 'workers_dispatch',
    description:
      'Hand coding work to cheaper workers and get a proof of what they did. Use it for well-defined, checkable work in one workspace (a fix with a failing test, a mechanical change, a small feature). ' +
      'Write each task self-contained (the worker has not seen this conversation), one outcome per task, name the files, say what not to touch, and give `verify` the exact command that proves it. ' +
      'Tasks may be plain strings. Returns the job at once (status queued/running, wait_again: true): then call workers_wait with its `id` (as job_id or id). Read the gaffer://guide resource for the whole method.',
    inputSchema: jobRequestJsonSchema,
    run: async (args, ctx) =>
      checkAnswer(
        compactJobSchema,
        ctx.engine.submit(args, { owner: ctx.owner, cwd: ctx.cwd }).job,
        'workers_dispatch',
      ),
  },
  {
    name: 'workers_status',
    description:
      "A job's compact answer: status, a one-line verdict, what changed on disk (`result.changes`), what gaffer's own test run showed (`result.verification`), and `result.proof` (proved / partial / unproved / contradicted, with every doubt named). Trust changes and verification over any worker's summary. While live it has `wait_again: true`: wait again, do not re-dispatch.",
    inputSchema: object({ ...jobId, full: { type: 'boolean', description: "every worker's full report" } }),
    run: async (args, ctx) => {
      const full = args.full === true;
      return checkAnswer(
        jobAnswerSchema(full),
        ctx.engine.get(jobIdArg(args), { owner: ctx.owner, full }),
        full ? 'workers_status (full)' : 'workers_status',
      );
    },
  },
  {
    name: 'workers_wait',
    description: `Wait until a job is final, up to timeout_s (default ${WAIT_DEFAULT_S}, max ${WAIT_MAX_S}), sending progress notifications. Returns {met, condition, waited_s, state}; state is the compact answer. met: false with state.wait_again: true means the job is still running — call workers_wait again; never re-dispatch it.`,
    inputSchema: object({ ...jobId, timeout_s: { type: 'number', minimum: 0, maximum: WAIT_MAX_S } }),
    run: async (args, ctx) =>
      checkAnswer(
        waitAnswerSchema,
        await waitWithProgress(ctx, jobIdArg(args), 'done', timeoutArg(args)),
        'workers_wait',
      ),
  },
  {
    name: 'workers_wait_for',
    description:
      'Wait for a condition on a job: `done`, `changed` (anything in the workspace changed on disk), `phase:<text>`, `event:<text>`, or `worker:<name|*>:<state>` (a worker status or a detected state such as rate_limited). A condition that can no longer hold answers at once with met: false.',
    inputSchema: object(
      { ...jobId, condition: { type: 'string' }, timeout_s: { type: 'number', minimum: 0, maximum: WAIT_MAX_S } },
      ['condition'],
    ),
    run: async (args, ctx) =>
      checkAnswer(
        waitAnswerSchema,
        await waitWithProgress(ctx, jobIdArg(args), stringArg(args, 'condition'), timeoutArg(args)),
        'workers_wait_for',
      ),
  },
  {
    name: 'workers_cancel',
    description:
      'Cancel a job: its workers are stopped and what they changed on disk is still reported. Answers the compact job (status cancelling, then cancelled).',
    inputSchema: object(jobId),
    run: async (args, ctx) =>
      checkAnswer(compactJobSchema, ctx.engine.cancel(jobIdArg(args), { owner: ctx.owner }), 'workers_cancel'),
  },
  {
    name: 'workers_list',
    description:
      'Recent jobs, newest first, as briefs (no result). Filter by status (queued, running, verifying, done, partial, error, cancelled, interrupted, …).',
    inputSchema: object({ limit: { type: 'integer', minimum: 1, maximum: 1000 }, status: { type: 'string' } }),
    run: async (args, ctx) => {
      const limit = args.limit === undefined ? 50 : Number(args.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1_000)
        throw new GafferError('invalid_request', `limit: must be 1..1000, got ${JSON.stringify(args.limit)}`, 'limit');
      const status = stringArg(args, 'status', false);
      return checkAnswer(
        jobListSchema,
        { jobs: ctx.engine.list({ owner: ctx.owner, limit, ...(status ? { status } : {}) }) },
        'workers_list',
      );
    },
  },
  {
    name: 'workers_lint',
    description:
      'Check a job request for what coordinators tend to leave out (no scope, no verify command, several outcomes in one task, vague verbs, an unguarded public API) without dispatching it. Same input as workers_dispatch.',
    inputSchema: jobRequestJsonSchema,
    // a copy: the report is an interface, and a tool's answer a plain JSON object
    run: async (args, ctx) => ({ ...ctx.engine.lint(args) }),
  },
  {
    name: 'workers_approve',
    description:
      'Answer the approval asks of a job awaiting approval (its compact answer lists them under `asks`, one per task, a fan-out as one batch): approve true/false for every open ask, or a yes/no per task {"name": bool}, with a note. Answers the compact job; conflict when the job is not awaiting approval.',
    inputSchema: object(
      {
        ...jobId,
        approve: { oneOf: [{ type: 'boolean' }, { type: 'object', additionalProperties: { type: 'boolean' } }] },
        note: { type: 'string' },
      },
      ['approve'],
    ),
    run: async (args, ctx) => {
      const { job_id: _jobId, id: _id, ...answer } = args;
      const { approve, note } = parseApproveBody(answer);
      return checkAnswer(
        compactJobSchema,
        ctx.engine.approve(jobIdArg(args), approve, { owner: ctx.owner, note }),
        'workers_approve',
      );
    },
  },
  {
    name: 'workers_follow_up',
    description:
      "Send review back to a finished job's task: comments on lines ({file, line, text}) and/or a note. Starts a new job in the same workspace with that task (same runner and model; a worktree job's task runs in a worktree from its branch, merged as the job's `merge` says), resuming the worker's session where its runner saved one (else a new session told the comments and the task's diff); it is verified and proved like any job, and its answer's `follow_up` links the original. Returns the new job at once: then call workers_wait.",
    inputSchema: object(
      {
        ...jobId,
        task: { type: 'string', description: "the task's name in that job" },
        comments: {
          type: 'array',
          items: {
            type: 'object',
            properties: { file: { type: 'string' }, line: { type: 'integer', minimum: 1 }, text: { type: 'string' } },
            required: ['file', 'line', 'text'],
            additionalProperties: false,
          },
        },
        note: { type: 'string', description: 'a general note on the work' },
      },
      ['task'],
    ),
    run: async (args, ctx) => {
      const { job_id: _jobId, id: _id, task: _task, ...review } = args;
      const { job } = await ctx.engine.followUp(jobIdArg(args), stringArg(args, 'task'), review, { owner: ctx.owner });
      return checkAnswer(compactJobSchema, job, 'workers_follow_up');
    },
  },
  {
    name: 'workers_steer',
    description:
      "Send a message to a task of a running job. A builtin worker reads it before its next model call (delivery `next_turn`; a `steer_delivered` event says when). Agent CLIs and shell workers take no input while they run: the message is queued and, when the job ends, goes to the task as a follow-up job (delivery `queued_as_follow_up`); a job that has already ended gets that follow-up at once (`follow_up_job`); a worktree job's follow-up runs on the task's branch.",
    inputSchema: object(
      {
        ...jobId,
        task: { type: 'string', description: "the task's name in that job" },
        message: { type: 'string', minLength: 1, maxLength: STEER_LIMITS.message },
      },
      ['task', 'message'],
    ),
    run: async (args, ctx) => {
      const { job_id: _jobId, id: _id, task: _task, ...body } = args;
      return checkAnswer(
        steerAnswerSchema,
        await ctx.engine.steer(jobIdArg(args), stringArg(args, 'task'), body, { owner: ctx.owner }),
        'workers_steer',
      );
    },
  },
  {
    name: 'agent_runners',
    description:
      'What this machine can run as a worker: key, label, installed, enabled (and disabled_by: the setting that keeps an agent CLI off), version, resume, sandbox, install hint.',
    inputSchema: object({}),
    run: async (_args, ctx) => ({ runners: ctx.engine.runners() }),
  },
];
