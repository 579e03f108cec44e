import { join } from 'node:path';
import { makeFolder } from '../../platform/files/spare-entries.js';
import type { AttemptEvent, AttemptKind } from '../../domain/attempt-machine.js';
import { workerEndOf, type WorkerEndWords } from '../../domain/attempt-results.js';
import type { AttemptEffect, AttemptState } from '../../domain/attempt-table.js';
import type { TaskSpec } from '../../domain/request.js';
import type { Route } from '../../domain/route.js';
import type { WorkerRole } from '../../domain/status.js';
import type { RunnerReport, StateDetection } from '../../domain/runner-report.js';
import type { AttemptPatch } from '../../store/store.js';
import { epochS } from '../clock.js';
import { MAX_RATE_LIMIT_WAIT_S, MAX_REQUEUES, rateLimitDelayS, sleepUnlessAborted } from '../execution/rate-limit.js';
import type { JobContext } from '../job-context.js';
import { providerOf, type Hold } from '../admission/operations.js';
import type { Runner } from '../../runners/contract.js';
import type { Place } from '../placement/placement.js';
import { blankReport } from '../../runners/report.js';
import { settleByArtifacts, type OutputStates } from '../../verification/outputs.js';
import { endEventsFor, type EffectAnswer, type EffectHandlers, type LedgerEntry } from './attempt-ledger.js';
import { writePolicyFor } from '../../domain/write-policy.js';
import { recordWorkerPhase } from './liveness-log.js';
import { NODE_LOST } from '../execution/executor.js';

/** Output events: at most one per worker per 250 ms, each at most 2 KiB of the newest lines (spec 02). */
export const OUTPUT_EVENT_MS = 250;
export const OUTPUT_EVENT_BYTES = 2_048;

/** One attempt to run: the task, who runs it (its route), and what it is told. */
export interface WorkerPlan {
  task: TaskSpec;
  /** The Router's pick for this attempt. */
  route: Route;
  name: string;
  role: WorkerRole;
  instruction: string;
  resume: string | null;
  /** Position among the job's workers, for stable order. */
  ord: number;
  /** Why this attempt: the task's first (default for workers), a fix round (fixers), or a retry of missing work (spec 06). */
  kind?: AttemptKind;
  /** The task's declared outputs as they were at the checkpoint: set for task workers, whose end is judged by them (spec 06). */
  outputsAtCheckpoint?: OutputStates;
  /** The parallel batch this attempt belongs to: a launch failure of one stops the others (spec 06); its reason says which. */
  batch?: AbortController;
  /** The attempt whose node was lost (spec 09): this one takes over the work BullMQ handed to another node. */
  continues?: string;
  /** A person said yes to this attempt's route before it was admitted (the job's asks, a climb's ask): it passes its gates as `approved`. */
  asked?: true;
  /** Lets go of the job's shared workspace while a hold keeps the attempt from starting (carry-out.ts); absent: it keeps its place. */
  away?: StepAway;
}

/**
 * Lets go of the job's place while `wait` waits, then takes it again once `wait` says yes (the
 * scope's `yieldPlace`, carry-out.ts: a climb waiting for its yes, an attempt held by a budget or a
 * suspended provider): the place to go on in, or null when the job was cancelled meanwhile.
 */
export type StepAway = (wait: () => Promise<boolean | null>) => Promise<{ yes: boolean | null; place: Place | null }>;

/** A worker's end as the engine keeps it. */
export interface WorkerEnd {
  plan: WorkerPlan;
  report: RunnerReport;
  /** False when it never got a process (refused, spawn failed, cancelled while queued). */
  started: boolean;
}

/**
 * Runs one attempt end to end — admitted into the job's ledger, a slot from the executor, its turn
 * in the place, the runner, events — moving it through the attempt machine at each step; its row's
 * status and outcome are the machine's words. Never throws for the worker's own failure.
 */
export function runWorker(ctx: JobContext, plan: WorkerPlan, place: Place): Promise<WorkerEnd> {
  return carryOn(ctx, new AttemptRun(ctx, plan, { place }));
}

/**
 * Takes the attempt of `from` on from where it stands — the job answering what it owes with
 * `answers` (its verification's word, its gates') — to the row where the table admits the next
 * attempt of its task: `plan`'s, admitted by that effect's handler (a fix round, a retry, a climb;
 * `plan.kind` says which). The attempt superseded then lets go of its share of the place, and the
 * new one runs. Throws when the table admits no such attempt from there (a bug in the orchestrator).
 */
export async function supersede(
  ctx: JobContext,
  from: string,
  answers: EffectHandlers,
  plan: WorkerPlan,
  place: Place,
): Promise<WorkerEnd> {
  return carryOn(ctx, await admitNext(ctx, from, answers, plan, place));
}

async function admitNext(
  ctx: JobContext,
  from: string,
  answers: EffectHandlers,
  plan: WorkerPlan,
  place: Place,
): Promise<AttemptRun> {
  const admits = ADMITTED_BY[kindOf(plan)];
  let next: AttemptRun | null = null;
  const admit = (): EffectAnswer => {
    next = new AttemptRun(ctx, plan, { place });
    return [];
  };
  await ctx.attempts.drive(from, [], { handlers: { ...answers, ...(admits ? { [admits]: admit } : {}) } });
  if (next === null)
    throw new Error(
      `${from} (${ctx.attempts.entry(from).attempt.state}) admitted no ${kindOf(plan)} attempt for ${plan.name}`,
    );
  return next;
}

/**
 * Runs an admitted attempt. One whose node was lost (spec 09: BullMQ's stalled-job handling gave
 * its work to another node) is followed by one new attempt that takes that work over — once: the
 * new attempt's own end, whatever it is, is the task's.
 */
async function carryOn(ctx: JobContext, run: AttemptRun, takeOver = true): Promise<WorkerEnd> {
  const end = await run.run();
  if (!takeOver || end.report.stopReason !== NODE_LOST || ctx.isCancelled) return end;
  const plan = end.plan;
  // `+` is never in a task's name: the new attempt's row cannot collide with another task's
  const next = { ...plan, name: `${plan.name}+node`, kind: 'retry' as const, continues: plan.name };
  return carryOn(ctx, await admitNext(ctx, plan.name, {}, next, run.place), false);
}

/**
 * One attempt carried out by the interpreter (`AttemptLedger.drive`): a method per effect the
 * attempt carries itself — the table's rows say which comes when, and each answers the events that
 * follow — and what it keeps between them (its slot and turn, its rate-limit requeues, its end).
 * The effects the job does once for all its attempts (evidence, verification, result gates, the
 * next attempt) are left owed for the job's orchestrator (carry-out.ts).
 */
class AttemptRun {
  readonly #ctx: JobContext;
  readonly #plan: WorkerPlan;
  /** Where it works: the place taken back after it stepped away from it while held. */
  readonly #at: { place: Place };

  readonly #entry: LedgerEntry;
  // spec 06: one write policy for every runner — the builtin agent refuses a write outside it, the audit judges the rest
  readonly #policy: ReturnType<typeof writePolicyFor>;
  /** A cancel of the job, or the batch stopped because a sibling could not launch. */
  readonly #signal: AbortSignal;
  readonly #who: { name: string; task: string };

  /** The row as last written: a move that changes neither its words nor anything else writes nothing. */
  #row: WorkerEndWords = { status: 'queued', outcome: null };
  /** What the next move writes on the row besides its words, and what is said after it. */
  #patch: AttemptPatch = {};
  #announce: ((words: WorkerEndWords) => void) | null = null;
  #runner: Runner | undefined;
  /** The executor's slot and the place's turn, while the attempt holds them. */
  #releaseSlot: (() => void) | null = null;
  #releaseTurn: (() => void) | null = null;
  /** Its end once known: its process's report as its outputs and spend settle it, or why it got none. */
  #end: WorkerEnd | null = null;
  /** spec 05 "Liveness": a `running` line before each start of the process, and `finished` once on every way out. */
  #running = false;
  #output: OutputCoalescer | null = null;
  // spec 04: a rate limit (from the runner's own error channel) waits and requeues; never a failure, never spilled
  #requeues = 0;
  #waitedS = 0;
  #rateLimited: RunnerReport | null = null;
  #resume: string | null;

  constructor(ctx: JobContext, plan: WorkerPlan, at: { place: Place }) {
    this.#ctx = ctx;
    this.#plan = plan;
    this.#at = at;
    this.#entry = admitAttempt(ctx, plan);
    this.#policy = writePolicyFor(plan.task, plan.role, ctx.spec.tasks);
    this.#signal = plan.batch ? AbortSignal.any([ctx.abort.signal, plan.batch.signal]) : ctx.abort.signal;
    this.#who = { name: plan.name, task: plan.task.name };
    this.#resume = plan.resume;
    ctx.emit({ name: plan.name, event: 'queued', message: `${plan.role} queued`, status: 'queued' });
    this.#entry.handlers = {
      check_gates: () => this.#checkGates(),
      // the yes was asked before the attempt was admitted: the job's asks at its start, a climb's before its rung (carry-out.ts)
      ask_approval: () => [{ type: 'approved' }],
      wait_for_window: () =>
        this.#entry.attempt.state === 'paused' ? this.#waitForClearance() : this.#waitOutRateLimit(),
      // the place is the job's, taken by its placement before any of its attempts: this attempt's share of it
      acquire_placement: () => [{ type: 'placement_acquired' }],
      // the place's checkpoint is taken once, before the attempts it serves (carry-out.ts)
      take_checkpoint: () => [],
      start_executor: () => this.#startProcess(),
      // by the time this runs the processes are gone: the abort signal stopped them, or there were none
      stop_processes: () => (this.#entry.attempt.state === 'cancelling' ? [{ type: 'processes_gone' }] : []),
      release_placement: () => {
        this.#letGo();
        return [];
      },
    };
  }

  /** Where it worked last (the place taken back after it stepped away from it while held). */
  get place(): Place {
    return this.#at.place;
  }

  /** Drives the attempt until it is the job's to carry on (or settled); its end on its row and as its event. */
  async run(): Promise<WorkerEnd> {
    let failure: { error: string } | null = null;
    try {
      await this.#ctx.attempts.drive(this.#plan.name, [], { moved: () => this.#moved() });
      if (this.#end === null)
        throw new Error(`attempt ${this.#plan.name} stopped in state ${this.#entry.attempt.state} with no end`);
      return writeEnd(this.#ctx, this.#end);
    } catch (err) {
      failure = { error: err instanceof Error ? err.message : String(err) };
      throw err;
    } finally {
      this.#output?.close();
      if (this.#running) recordWorkerPhase(this.#ctx, this.#who, finishedLine(this.#ctx, this.#plan, failure));
      this.#letGo();
    }
  }

  /** check_gates: the place could be made, no budget or suspended provider holds it, its runner is there, a yes if one was asked. */
  #checkGates(): EffectAnswer {
    const ctx = this.#ctx;
    const plan = this.#plan;
    if (this.#at.place.failure !== undefined)
      return this.#ended(notStarted('error', 'expected_error', 'setup_failed', this.#at.place.failure), false);
    // moved to its entry's fallback when its own provider holds it and the fallback's does not
    if (holdOf(ctx, plan, this.#entry, { id: ctx.id, unattended: ctx.spec.unattended === true }) !== null)
      return [{ type: 'budget_spent' }];
    this.#runner = ctx.services.runners.get(this.#entry.route.runner);
    if (!this.#runner)
      return this.#ended(
        notStarted('refused', 'expected_error', 'refused', `runner "${this.#entry.route.runner}" is not available`),
        false,
      );
    return [{ type: plan.asked ? 'approval_needed' : 'gates_passed' }];
  }

  /** wait_for_window before the start: a suspended provider or a budget holds it (spec 07, issue 15); then its gates again. */
  async #waitForClearance(): Promise<EffectAnswer> {
    const cleared = await clearToStart(this.#ctx, this.#plan, this.#entry, this.#signal);
    this.#at.place = cleared.place ?? this.#at.place;
    if (!cleared.ok) return this.#ended(notStarted('cancelled', 'cancelled', 'cancelled', null), false);
    return [{ type: 'window_reset' }];
  }

  /** start_executor: a slot from the executor, the place's turn, then the process; its end (or a rate limit) answers. */
  async #startProcess(): Promise<EffectAnswer> {
    const ctx = this.#ctx;
    const plan = this.#plan;
    const on = this.#runner as Runner;
    // stopped before its process (again): the end is the last run's, or none
    const stopped = () =>
      this.#ended(
        this.#rateLimited ?? notStarted('cancelled', 'cancelled', 'cancelled', null),
        this.#rateLimited !== null,
      );
    try {
      this.#releaseSlot = await ctx.services.executor.slot(this.#signal);
      this.#releaseTurn = await this.#at.place.turn(on);
    } catch {
      this.#letGo();
      return stopped();
    }
    if (this.#signal.aborted) return stopped();
    makeFolder(ctx.jobDir);
    if (this.#requeues === 0) {
      this.#patch = { started: epochS(), lastEvent: 'started' };
      this.#announce = ({ status }) =>
        ctx.emit({ name: plan.name, event: 'started', message: `${this.#entry.route.runner} worker started`, status });
    }
    ctx.attempts.move(plan.name, [{ type: 'executor_started' }]);
    this.#moved();
    let report = await this.#runOnce(on);
    if (report.status === 'rate_limited' && !this.#signal.aborted) {
      const delayS = rateLimitDelayS(this.#requeues, report.retryAfterS);
      if (this.#requeues < MAX_REQUEUES && this.#waitedS + delayS <= MAX_RATE_LIMIT_WAIT_S)
        return this.#requeue(report, delayS);
    }
    if (this.#requeues > 0 && report.detection === null) {
      report = {
        ...report,
        detection: {
          state: 'rate_limited',
          why: `waited out ${this.#requeues} rate limit(s)`,
          matched: 'rate limit',
          confidence: 1,
        },
      };
    }
    // a refusal (e.g. config sandbox: required without a sandbox) never got a process either
    return this.#ended(report, report.stopReason !== 'spawn_failed' && report.status !== 'refused');
  }

  /** A rate limit: the whole provider waits until its reset (issue 15), every attempt for it, in every job; this one is requeued. */
  #requeue(report: RunnerReport, delayS: number): EffectAnswer {
    const ctx = this.#ctx;
    const plan = this.#plan;
    this.#requeues++;
    this.#waitedS += delayS;
    this.#rateLimited = report;
    const retryAt = ctx.services.operations.now() + delayS;
    const why = `rate limited by the provider: requeue ${this.#requeues}/${MAX_REQUEUES}, retrying at ${new Date(retryAt * 1000).toISOString()}`;
    ctx.services.operations.suspend(
      providerOf(this.#entry.route),
      retryAt,
      `${plan.name} was answered: ${report.error ?? 'rate limited'}`,
    );
    this.#patch = {
      state: { state: 'rate_limited', why, matched: report.error ?? 'rate limit', retry_at: retryAt },
      lastEvent: 'state',
    };
    this.#announce = () =>
      ctx.emit({
        name: plan.name,
        event: 'state',
        message: `rate_limited: ${why}`,
        state: 'rate_limited',
        why,
        retry_at: retryAt,
      });
    return [{ type: 'rate_limited' }];
  }

  /** wait_for_window after a rate limit: the wait holds the place but not a worker slot; then the process again. */
  async #waitOutRateLimit(): Promise<EffectAnswer> {
    recordWorkerPhase(this.#ctx, this.#who, { phase: 'requeued' });
    this.#letGo();
    const before = this.#entry.route;
    const waited = await awaitClearance(this.#ctx, this.#plan, this.#entry, this.#signal, { own: providerOf(before) });
    if (!waited || this.#signal.aborted) return this.#ended(this.#rateLimited as RunnerReport, true);
    this.#runner = this.#ctx.services.runners.get(this.#entry.route.runner) ?? this.#runner;
    // a session is resumed only where it was made: a fallback entry starts a new one
    this.#resume = this.#entry.route === before ? (this.#rateLimited?.session ?? this.#plan.resume) : null;
    return [{ type: 'window_reset' }];
  }

  #runOnce(on: Runner): Promise<RunnerReport> {
    const ctx = this.#ctx;
    const plan = this.#plan;
    const { store } = ctx.services;
    const route = this.#entry.route;
    recordWorkerPhase(ctx, this.#who, { phase: 'running' });
    this.#running = true;
    let waitingPhase: string | null = null;
    let waitingBefore: string | null = null;
    const output = (this.#output ??= new OutputCoalescer((text) => {
      store.updateAttempt(ctx.id, plan.name, { lastEvent: 'output' });
      ctx.emit({ name: plan.name, event: 'output', message: text });
    }));
    return ctx.services.executor.run(
      on,
      {
        jobId: ctx.id,
        workerName: plan.name,
        attempt: this.#entry.attempt.number,
        role: this.#policy.role === 'reviewer' ? 'reviewer' : plan.role,
        instruction: plan.instruction,
        workspace: this.#at.place.workspace,
        command: plan.task.command,
        model: route.model,
        ...(route.endpoint ? { endpoint: route.endpoint } : {}),
        timeoutMs: ctx.spec.timeout_s * 1000,
        maxRounds: ctx.spec.max_rounds,
        resume: this.#resume,
        files: this.#policy.anywhere ? [] : this.#policy.paths,
        outputs: plan.task.outputs,
        sandbox: true,
        // the parent env: each runner builds its worker's allowlisted env from it (platform/process/env.ts)
        env: this.#at.place.env ? { ...process.env, ...this.#at.place.env } : process.env,
        logFile: join(ctx.jobDir, `${plan.name}.log`),
        instructionFile: join(ctx.jobDir, `${plan.name}.instruction.txt`),
        signal: this.#signal,
        // issue 16: a runner that takes input mid-run reads the task's messages at its next turn
        inbox: ctx.inbox.for(plan.task.name, plan.name),
        onOutput: (lines) => output.push(lines),
        onState: (detection) => recordState(ctx, plan, detection),
        onSpawn: ({ pgid, startedAt }) => store.updateAttempt(ctx.id, plan.name, { pgid, pgStart: startedAt }),
      },
      {
        ...(plan.continues !== undefined ? { continues: plan.continues } : {}),
        ...(ctx.spec.repo ? { remote: ctx.spec.repo } : {}),
        // spec 09: what the queue and its nodes did, on the job's events like the worker's own
        onNode: (e) => {
          store.updateAttempt(ctx.id, plan.name, { lastEvent: 'node' });
          ctx.emit({ name: plan.name, event: 'node', message: e.message, node: e.node, node_event: e.event });
          // the job's phase says what an attempt no node took yet waits for, until one takes it
          if (e.event === 'waiting') {
            waitingBefore = ctx.job.phase;
            waitingPhase = `${plan.name}: ${e.message}`;
            ctx.phase(waitingPhase);
          } else if (waitingPhase !== null && ctx.job.phase === waitingPhase && waitingBefore !== null) {
            ctx.phase(waitingBefore);
            waitingPhase = null;
          }
        },
      },
    );
  }

  /** Its end is known: settled by its outputs and spend; the events that say it from where it stands. */
  #ended(report: RunnerReport, started: boolean): AttemptEvent[] {
    this.#end = settledEnd(this.#ctx, this.#plan, this.#at.place, this.#batchStopped(report), started);
    return endEventsFor(this.#entry.attempt, this.#end.report, {
      isInterrupting: this.#ctx.interruptReason !== null,
      gotProcess: started,
    });
  }

  /** A cancelled end while its batch stopped reads `error` with `batch_stopped`; a spawn failure stops the batch. */
  #batchStopped(report: RunnerReport): RunnerReport {
    const batch = this.#plan.batch;
    // this one could not launch: its siblings stop before it lets go of its turn
    if (report.stopReason === 'spawn_failed' && batch && !batch.signal.aborted)
      batch.abort(`${this.#plan.name} failed to launch: ${report.error ?? 'its process could not start'}`);
    const stopped = !this.#ctx.isCancelled && batch?.signal.aborted === true && report.status === 'cancelled';
    return stopped
      ? {
          ...report,
          status: 'error',
          outcome: 'expected_error',
          stopReason: 'batch_stopped',
          error: `stopped: ${String(batch?.signal.reason)}`,
        }
      : report;
  }

  /** After each move: the row in the machine's words (once its end is known, the end's own write says it), then what is to be said. */
  #moved(): void {
    const words = workerEndOf(this.#entry.attempt);
    const said = this.#announce;
    this.#announce = null;
    if (
      this.#end === null &&
      (words.status !== this.#row.status || words.outcome !== this.#row.outcome || Object.keys(this.#patch).length > 0)
    ) {
      this.#ctx.services.store.updateAttempt(this.#ctx.id, this.#plan.name, {
        ...this.#patch,
        status: words.status,
        ...(words.outcome !== null ? { outcome: words.outcome } : {}),
      });
      this.#row = words;
    }
    this.#patch = {};
    said?.(words);
  }

  #letGo(): void {
    this.#releaseTurn?.();
    this.#releaseSlot?.();
    this.#releaseTurn = this.#releaseSlot = null;
  }
}

/** The `finished` line of an attempt: its row's words, or what failed when gaffer failed under it. */
function finishedLine(
  ctx: JobContext,
  plan: WorkerPlan,
  failure: { error: string } | null,
): Parameters<typeof recordWorkerPhase>[2] {
  if (failure !== null) return { phase: 'finished', status: 'error', outcome: null, error: failure.error };
  const words = workerEndOf(ctx.attempts.entry(plan.name).attempt);
  return { phase: 'finished', status: words.status, outcome: words.outcome };
}

function recordState(ctx: JobContext, plan: WorkerPlan, d: StateDetection): void {
  ctx.services.store.updateAttempt(ctx.id, plan.name, { state: { ...d }, lastEvent: 'state' });
  ctx.emit({
    name: plan.name,
    event: 'state',
    message: `${d.state}: ${d.why} ("${d.matched}")`,
    state: d.state,
    why: d.why,
    matched: d.matched,
  });
}

/** The attempt's end: settled by its declared outputs, not its exit code alone (spec 06), with its spend. */
function settledEnd(
  ctx: JobContext,
  plan: WorkerPlan,
  place: Place,
  runnerReport: RunnerReport,
  started: boolean,
): WorkerEnd {
  const settled =
    started && plan.outputsAtCheckpoint
      ? settleByArtifacts(runnerReport, place.workspace, plan.task.outputs, plan.outputsAtCheckpoint)
      : runnerReport;
  return { plan, report: withSpend(ctx, plan, settled, started), started };
}

/** The end on the attempt's row and as its event, in the machine's words (stopped because gaffer is shutting down reads `interrupted`, spec 01). */
function writeEnd(ctx: JobContext, end: WorkerEnd): WorkerEnd {
  const { plan, report } = end;
  const words = workerEndOf(ctx.attempts.entry(plan.name).attempt);
  ctx.services.store.updateAttempt(ctx.id, plan.name, {
    status: words.status,
    outcome: words.outcome,
    finished: epochS(),
    lastEvent: report.status === 'done' ? 'done' : 'error',
    report: { ...report },
  });
  const message =
    report.status === 'done' ? (report.summary.split('\n').at(-1) ?? 'done') : (report.error ?? report.status);
  ctx.emit({
    name: plan.name,
    event: report.status === 'done' ? 'done' : 'error',
    message: message.slice(0, 300),
    status: words.status,
    outcome: words.outcome ?? report.outcome,
  });
  return end;
}

/**
 * A task a person did not approve (spec 05): its attempt is admitted, waits for the yes, and is
 * settled `refused` with outcome `cancelled` — a row, an event, no process.
 */
export function refuseWorker(ctx: JobContext, plan: WorkerPlan, why: string): WorkerEnd {
  admitAttempt(ctx, plan);
  const report = withSpend(ctx, plan, notStarted('refused', 'cancelled', 'not_approved', why), false);
  // its gates and its ask are the job's: the person asked at the job's start said no
  ctx.attempts.driveNow(plan.name, [], {
    check_gates: () => [{ type: 'approval_needed' }],
    ask_approval: () => [
      { type: 'approval_refused', facts: { exit: { status: report.status, outcome: report.outcome } } },
    ],
  });
  const words = workerEndOf(ctx.attempts.entry(plan.name).attempt);
  ctx.services.store.updateAttempt(ctx.id, plan.name, {
    status: words.status,
    outcome: words.outcome,
    finished: epochS(),
    lastEvent: 'error',
    report: { ...report },
  });
  ctx.emit({
    name: plan.name,
    event: 'error',
    message: why,
    status: words.status,
    outcome: words.outcome ?? 'cancelled',
  });
  return { plan, report, started: false };
}

/** The report with the attempt's spend (issue 15), recorded on its row for the budgets. */
function withSpend(ctx: JobContext, plan: WorkerPlan, report: RunnerReport, started: boolean): RunnerReport {
  const { operations, router } = ctx.services;
  const route = ctx.attempts.entry(plan.name).route;
  const spend = operations.spendOf(
    report,
    router.billing(plan.task, route),
    route.model ?? report.modelServed,
    started,
  );
  operations.recordSpend(ctx.id, plan.name, spend);
  return { ...report, spend };
}

/**
 * Waits out what holds the attempt before it takes a slot (awaitClearance). The job's only attempt
 * that is not past its process lets go of the shared workspace meanwhile (`plan.away`: as a climb
 * waiting for its yes does, spec 05), so a hold until the window's end keeps no other job out of
 * it; `place`: the place it took back (null: it kept its own, or the job was cancelled meanwhile).
 */
async function clearToStart(
  ctx: JobContext,
  plan: WorkerPlan,
  entry: LedgerEntry,
  signal: AbortSignal,
): Promise<{ ok: boolean; place: Place | null }> {
  const job = { id: ctx.id, unattended: ctx.spec.unattended === true };
  const stepsAway = plan.away !== undefined && holdOf(ctx, plan, entry, job) !== null && aloneInPlace(ctx, plan.name);
  const wait = () => awaitClearance(ctx, plan, entry, signal, { own: null, away: stepsAway });
  if (!stepsAway || plan.away === undefined) return { ok: await wait(), place: null };
  const before = ctx.job.phase;
  let cleared = false;
  const back = await plan.away(async () => {
    cleared = await wait();
    return cleared ? true : null;
  });
  // taking the workspace back may have waited for another job: said then, over now
  if (back.place !== null && before !== null && ctx.job.phase !== before) ctx.phase(before);
  return { ok: cleared && back.place !== null, place: back.place };
}

/** Attempt states before or in a process: an attempt in one may still use the place. */
const USES_PLACE: ReadonlySet<AttemptState> = new Set([
  'admitted',
  'awaiting_approval',
  'paused',
  'gated',
  'placed',
  'running',
  'requeued',
  'cancelling',
]);

/** No other attempt of the job may use its place now (a parallel batch's siblings may: their place is kept). */
function aloneInPlace(ctx: JobContext, worker: string): boolean {
  return ctx.attempts.live().every((e) => e.worker === worker || !USES_PLACE.has(e.attempt.state));
}

/**
 * What holds the attempt now, after moving it to its entry's fallback when that one is free, saying
 * why on its row; null: it may start.
 */
function holdOf(
  ctx: JobContext,
  plan: WorkerPlan,
  entry: LedgerEntry,
  job: { id: string; unattended: boolean },
): Hold | null {
  const { operations, store } = ctx.services;
  const hold = operations.holdOn(entry.route, job);
  if (hold === null) return null;
  const fallback = ctx.services.router.fallback(plan.task, entry.route);
  if (!fallback || operations.holdOn(fallback, job) !== null) return hold;
  const why = `${hold.why} — moved to fallback entry ${fallback.entry} (${providerOf(fallback)})`;
  ctx.attempts.reroute(plan.name, fallback);
  store.rerouteAttempt(ctx.id, plan.name, fallback, why);
  ctx.emit({ name: plan.name, event: 'state', message: `rerouted: ${why}`, why });
  return null;
}

/** How often a hold with no end of its own (an interactive job on the provider) is looked at again, and the longest sleep between looks. */
const HOLD_POLL_MS = 1_000;
const HOLD_MAX_SLEEP_MS = 5_000;

/**
 * spec 07, issue 15: waits, before the attempt takes a slot, while its provider is suspended or a
 * budget holds it — or moves it to its entry's fallback when that one is free (holdOf). The hold is
 * said on its row and, while it lasts, as the job's phase (with `away`: the attempt waits without
 * the shared workspace). `own`: the provider this attempt itself just suspended (its rate-limited
 * state says so already). False: cancelled meanwhile.
 */
async function awaitClearance(
  ctx: JobContext,
  plan: WorkerPlan,
  entry: LedgerEntry,
  signal: AbortSignal,
  opts: { own: string | null; away?: boolean },
): Promise<boolean> {
  const { operations, store } = ctx.services;
  const job = { id: ctx.id, unattended: ctx.spec.unattended === true };
  let said = '';
  // the phase the hold stands in for, said again once it is over
  const before = ctx.job.phase;
  let phase: string | null = null;
  try {
    for (;;) {
      if (signal.aborted) return false;
      const hold = holdOf(ctx, plan, entry, job);
      if (hold === null) return true;
      // said once per hold (its words can change as time passes: a pace's percentages)
      const key = `${hold.state}\0${hold.provider}\0${hold.until ?? ''}`;
      if (key !== said && !(hold.state === 'provider_suspended' && hold.provider === opts.own)) {
        said = key;
        const state = {
          state: hold.state,
          why: hold.why,
          matched: hold.provider,
          ...(hold.until !== null ? { retry_at: hold.until } : {}),
        };
        store.updateAttempt(ctx.id, plan.name, { state, lastEvent: 'state' });
        ctx.emit({
          name: plan.name,
          event: 'state',
          message: `${hold.state}: ${hold.why}`,
          state: hold.state,
          why: hold.why,
          ...(hold.until !== null ? { retry_at: hold.until } : {}),
        });
        phase =
          `${plan.name} is held: ${hold.why}${opts.away === true ? '; the workspace is free meanwhile' : ''}`.slice(
            0,
            400,
          );
        ctx.phase(phase);
      }
      const untilMs = hold.until === null ? HOLD_POLL_MS : (hold.until - operations.now()) * 1000;
      await sleepUnlessAborted(Math.max(10, Math.min(HOLD_MAX_SLEEP_MS, untilMs)), signal);
    }
  } finally {
    // another phase said meanwhile (a sibling's hold, the job's own) stands
    if (phase !== null && ctx.job.phase === phase && before !== null) ctx.phase(before);
  }
}

/** The effect of the attempt a new attempt of each kind takes over from, carried out by admitting it. */
const ADMITTED_BY: Partial<Record<AttemptKind, AttemptEffect>> = {
  fix: 'admit_fix_attempt',
  retry: 'admit_retry_attempt',
  escalation: 'admit_escalation_attempt',
};

/** Why the plan's attempt is made: its own word, else a fixer's is a fix round and any other the task's first. */
const kindOf = (plan: WorkerPlan): AttemptKind => plan.kind ?? (plan.role === 'fixer' ? 'fix' : 'first');

/** Admits the plan's attempt into the job's ledger and writes its row, `queued`. */
function admitAttempt(ctx: JobContext, plan: WorkerPlan): LedgerEntry {
  const entry = ctx.attempts.admit(plan.name, plan.task.name, plan.role, plan.route, kindOf(plan));
  ctx.services.store.insertAttempt({
    jobId: ctx.id,
    worker: plan.name,
    task: plan.task.name,
    attempt: entry.attempt.number,
    role: plan.role,
    runner: plan.route.runner,
    model: plan.route.model,
    entry: plan.route.entry,
    provider: plan.route.provider,
    status: 'queued',
    queuedAt: epochS(),
    logFile: join(ctx.jobDir, `${plan.name}.log`),
    ord: plan.ord,
    machine: entry.attempt,
  });
  return entry;
}

/** A report for a worker that never got a process. */
export function notStarted(
  status: RunnerReport['status'],
  outcome: RunnerReport['outcome'],
  stopReason: string,
  error: string | null,
): RunnerReport {
  return blankReport({ status, outcome, stopReason, error, isCancelled: status === 'cancelled' });
}

/** Coalesces output lines into at most one event per interval carrying the newest bytes. */
class OutputCoalescer {
  readonly #emit: (text: string) => void;
  #lines: string[] = [];
  #bytes = 0;
  #timer: NodeJS.Timeout | null = null;
  #lastEmit = 0;

  constructor(emit: (text: string) => void) {
    this.#emit = emit;
  }

  push(lines: string[]): void {
    for (const line of lines) {
      this.#lines.push(line);
      this.#bytes += Buffer.byteLength(line) + 1;
    }
    while (this.#bytes > OUTPUT_EVENT_BYTES && this.#lines.length > 1)
      this.#bytes -= Buffer.byteLength(this.#lines.shift() as string) + 1;
    if (this.#timer) return;
    const wait = Math.max(0, this.#lastEmit + OUTPUT_EVENT_MS - performance.now());
    this.#timer = setTimeout(() => this.#flush(), wait);
  }

  #flush(): void {
    this.#timer = null;
    if (this.#lines.length === 0) return;
    let text = this.#lines.join('\n');
    if (Buffer.byteLength(text) > OUTPUT_EVENT_BYTES)
      text = Buffer.from(text).subarray(-OUTPUT_EVENT_BYTES).toString('utf8');
    this.#lines = [];
    this.#bytes = 0;
    this.#emit(text);
    // measured after the event is stored, so stored timestamps are 250 ms apart too
    this.#lastEmit = performance.now();
  }

  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#flush();
  }
}
