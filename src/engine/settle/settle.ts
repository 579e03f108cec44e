import type { ChangeSet } from '../../evidence/types.js';
import { totalSpend } from '../../domain/spend.js';
import type { ChangesJson } from '../../domain/changes.js';
import {
  attributesNamingDrivers,
  describeDependenciesChangedAlone,
  describeGitCode,
  describeOutsideEvidence,
  findClaimedOnly,
} from '../../evidence/index.js';

import { computeProof, type ProofFacts } from '../../domain/proof.js';
import type {
  ConvergenceJson,
  CriteriaCheckJson,
  JobResult,
  TotalsJson,
  VerificationJson,
  WorktreesJson,
} from '../../domain/result.js';
import { CHANGING_TASK_TYPES, type JobStatus } from '../../domain/status.js';
import { isFinalAttempt, type AttemptFacts } from '../../domain/attempt-machine.js';
import type { EffectHandlers } from '../pipeline/attempt-ledger.js';
import { workerEndOf } from '../../domain/attempt-results.js';
import { buildVerdict } from '../../domain/verdict.js';
import { describeWorktrees } from '../../domain/fanout.js';
import { epochS } from '../clock.js';
import type { JobContext } from '../job-context.js';
import type { WorkerEnd } from '../pipeline/attempt-run.js';
import type { JobEndFacts } from '../../domain/outcome.js';
import { logOutcomes } from './outcome-log.js';
import { recordObjectiveEvidence } from '../pipeline/objectives.js';
import type { TaskGatesJson } from '../../domain/gates.js';
import type { EscalationJson } from '../../domain/escalation.js';

/** Everything a job's end is decided from. */
export interface SettleInput {
  workers: WorkerEnd[];
  fixers: WorkerEnd[];
  changes: ChangesJson | null;
  /** The full (uncapped) worker change set. */
  changeSet: ChangeSet | null;
  verification: VerificationJson | null;
  cancelled: boolean;
  fixRounds: number;
  convergence?: ConvergenceJson;
  /** The job's and its tasks' criteria, checked after the last verification (criteria.ts); null/absent when none were declared. */
  criteria?: CriteriaCheckJson | null;
  /** Why the job failed before its workers, when it did. */
  error?: string;
  /** Workers that wrote outside their write policy, `<worker>: <paths>` (spec 06's audit). */
  writeViolations?: string[];
  /** The checkpoint and the last snapshot of the workers' work, once the job got that far. */
  checkpoint?: NonNullable<JobContext['job']['checkpoint']>;
  /** A worktree job (spec 06): each task's attempts are settled by its own verification and criteria. */
  perTask?: ReadonlyMap<string, { verification: VerificationJson | null; criteriaMet: boolean }>;
  /** A worktree job: the tasks whose own worktree saw no change (else known only for the job as a whole). */
  changedNothing?: string[];
  /** A worktree job's branches, worktrees and merge. */
  worktrees?: WorktreesJson;
  /** A verdict that stands for the built one: a job whose every task was denied is `not approved` (spec 05). */
  verdict?: string;
  /** The tasks' own gates (spec 05), one entry per attempt judged, in order. */
  gates?: TaskGatesJson[];
  /** Each climb up a task's ladder, and each task returned to its spawner (spec 05). */
  escalation?: EscalationJson[];
  /** What kept a worktree job's passing branches out of the workspace (a conflict, a merged tree that fails): doubts, and the job is `partial`. */
  mergeProblems?: NonNullable<ProofFacts['mergeProblems']>;
}

/** A job stopped before its work was judged: nothing collected, nothing verified; `workers` are the attempts it had. */
export function stoppedBeforeWork(workers: WorkerEnd[] = []): SettleInput {
  return { workers, fixers: [], changes: null, changeSet: null, verification: null, cancelled: true, fixRounds: 0 };
}

export function emptyTotals(): TotalsJson {
  return {
    tool_calls: 0,
    failed_calls: 0,
    rounds: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    spend: 'nothing ran',
    errors: 0,
    cancelled: 0,
  };
}

/** What the verification says to an attempt: whether it blocks `done`. */
export function verificationFacts(v: VerificationJson): NonNullable<AttemptFacts['verification']> {
  return { blocking: v.blocking, couldNotStart: v.could_not_start ?? false };
}

/**
 * Decides proof and verdict from what was observed, settles every attempt still open through the
 * machine, reads the job's status from its tasks' final attempts, writes them, and announces the end.
 */
export function settleJob(ctx: JobContext, s: SettleInput): void {
  const spec = ctx.spec;
  const all = [...s.workers, ...s.fixers];
  const wordsOf = (w: WorkerEnd) => workerEndOf(ctx.attempts.entry(w.plan.name).attempt);
  const changed = s.changeSet ? [...s.changeSet.added, ...s.changeSet.modified, ...s.changeSet.deleted].sort() : [];
  const claims = [...new Set(all.filter((w) => w.report.makesClaims).flatMap((w) => w.report.filesChanged))];
  // spec 03: only a truncated mtime snapshot makes a claim unverifiable; then nobody is accused
  const claimedOnly = s.changeSet && !s.changes?.snapshot_truncated ? findClaimedOnly(claims, s.changeSet) : [];
  const criteria = s.criteria ?? null;
  // the task workers' statuses as their rows say them (a worker gaffer's own shutdown stopped reads `interrupted`)
  const workerStatuses = s.workers.map((w) => wordsOf(w).status);
  const nothingRan = s.error !== undefined;
  // spec 04: only runners that use a model can attest one; shell never does
  const unattestedWorkers = all
    .filter((w) => w.started && w.plan.route.runner !== 'shell' && !w.report.modelServed)
    .map((w) => w.plan.name);
  // spec 04: an agent CLI that ran without the sandbox costs the proof and is said on the verdict
  const unsandboxedExternal = [
    ...new Set(
      all
        .filter(
          (w) => w.started && !w.report.sandboxed && ctx.services.runners.get(w.plan.route.runner)?.external === true,
        )
        .map((w) => w.plan.route.runner),
    ),
  ];

  // issue 10 "done means done": a task that was to change something and changed nothing is not done; in a
  // shared workspace changes cannot be told apart by task, so this is known when the job changed nothing
  const nothingChanged = s.changedNothing
    ? s.workers
        .filter(
          (w) =>
            w.report.status === 'done' &&
            CHANGING_TASK_TYPES.has(w.plan.task.type) &&
            s.changedNothing?.includes(w.plan.task.name),
        )
        .map((w) => w.plan.name)
    : !nothingRan && !s.cancelled && s.changes !== null && s.changes.count === 0
      ? s.workers
          .filter((w) => w.report.status === 'done' && CHANGING_TASK_TYPES.has(w.plan.task.type))
          .map((w) => w.plan.name)
      : [];
  for (const name of nothingChanged) {
    const w = s.workers.find((x) => x.plan.name === name);
    if (!w) continue;
    w.report = { ...w.report, outcome: 'expected_error', stopReason: 'nothing_changed' };
    const words = ctx.attempts.note(name, { nothingChanged: true });
    ctx.services.store.updateAttempt(ctx.id, name, { outcome: words.outcome, report: { ...w.report } });
  }
  // issue 11: a worker a limit ended says which, on the proof and the verdict
  const limitsHit = all
    .filter((w) => w.report.limit !== undefined)
    .map((w) => `${w.plan.name} ${w.report.error ?? `ended by the ${w.report.limit ?? ''} limit`}`);
  const outside = describeOutsideEvidence(s.changes?.outside_evidence);
  // issue 32: git config or attributes set to run a program lead the verdict and cost `proved`
  const gitCode = describeGitCode([
    ...(s.changes?.outside_evidence?.git_code ?? []),
    ...attributesNamingDrivers(spec.workspace, changed),
  ]);
  const tampered = describeDependenciesChangedAlone(s.changes?.outside_evidence, changed);

  // spec 05: each task's own gates on its final work; a failed or undecided one is a doubt
  const finalGates = lastGates(s.gates ?? []);
  const gateProblems = [...finalGates.values()].flatMap((g) => {
    const open = g.results.filter((r) => r.result !== 'pass');
    if (open.length === 0) return [];
    const words = open
      .map((r) => `${r.gate}: ${r.result}${r.climb ? ' (needs a person)' : ''} — ${r.detail}`)
      .join('; ');
    return [
      {
        code: g.verdict === 'fail' ? ('gates_failed' as const) : ('gates_ambiguous' as const),
        detail: `${g.task}: ${words}`,
      },
    ];
  });
  const returned = (s.escalation ?? []).filter((e) => e.returned);

  const proof = nothingRan
    ? null
    : computeProof({
        changes: s.changes,
        verification: s.verification,
        claimedOnly,
        claimedCount: claims.length,
        workerStatuses,
        expectsChanges: spec.tasks.some((t) => CHANGING_TASK_TYPES.has(t.type)),
        criteria,
        cancelled: s.cancelled,
        largeFilesByStat: Boolean(ctx.job.checkpoint?.pre.largeFilesByStat),
        unattestedWorkers,
        testsWeakened: (s.verification?.tests_weakened?.length ?? 0) > 0,
        unsandboxedExternal,
        limitsHit,
        writeViolations: s.writeViolations ?? [],
        mergeProblems: s.mergeProblems ?? [],
        gateProblems,
        gitCode,
        outsideEvidence:
          outside.doubt === null ? null : { detail: outside.doubt, runsCode: outside.verdictPart !== null },
        dependenciesChangedAlone: tampered,
      });

  const interrupted = s.cancelled && ctx.interruptReason !== null;
  const error = interrupted ? (ctx.interruptReason ?? undefined) : s.error;
  closeAttempts(
    ctx,
    s,
    {
      verification: s.verification ? verificationFacts(s.verification) : null,
      // issue 32: tests that ran through patched dependencies pass no task's gates
      gates: {
        criteriaMet: criteria?.complete ?? true,
        contradicted: proof?.verdict === 'contradicted' || tampered !== null,
      },
    },
    finalGates,
  );
  // spec 01: the job's status from its tasks' final attempts; a cancel or a shutdown is the job's own
  const byTasks: JobStatus = ctx.attempts.jobStatus({ cancelled: s.cancelled, interrupted });
  recordOutcomes(ctx, {
    cancelled: s.cancelled && !interrupted,
    interrupted,
    returned: new Set(returned.map((r) => r.task)),
    escalation: s.escalation ?? [],
  });
  // each task passed alone, their merge did not: not done (spec 06)
  // issue 32: dependencies changed with no manifest or lockfile change block `done`
  const status: JobStatus =
    ((s.mergeProblems?.length ?? 0) > 0 || tampered !== null) && byTasks === 'done' ? 'partial' : byTasks;

  const totals = emptyTotals();
  for (const w of all) {
    const r = w.report;
    totals.tool_calls += r.toolCalls;
    totals.failed_calls += r.failedCalls;
    totals.rounds += r.rounds;
    totals.input_tokens += r.inputTokens;
    totals.output_tokens += r.outputTokens;
    if (r.status === 'cancelled') totals.cancelled++;
    else if (r.status !== 'done') totals.errors++;
  }
  // issue 15: an unknown cost is null and said, never added as 0
  Object.assign(
    totals,
    totalSpend(all.flatMap((w) => (w.report.spend ? [{ name: w.plan.name, spend: w.report.spend }] : []))),
  );

  const result: JobResult = {
    files_changed: changed,
    claimed_only: claimedOnly,
    changes: s.changes,
    verification: s.verification,
    ...(criteria ? { criteria_check: criteria } : {}),
    ...(s.convergence ? { convergence: s.convergence, stopped_by: 'convergence' as const } : {}),
    fix_rounds_run: s.fixRounds,
    ...(s.worktrees ? { worktrees: s.worktrees } : {}),
    ...(s.gates?.length ? { gates: s.gates } : {}),
    ...(s.escalation?.length ? { escalation: s.escalation } : {}),
    proof,
    totals,
    exit_code: status === 'done' ? 0 : 1,
  };

  const reportedStates = all
    .filter((w) => w.report.detection)
    .map((w) => `${w.plan.name} ${w.report.detection?.state ?? ''}`);
  const verdict =
    s.verdict ??
    buildVerdict({
      status,
      error: error ?? null,
      workerStatuses,
      filesChanged: s.changes ? s.changes.count : null,
      verification: s.verification,
      fixRoundsRun: s.fixRounds,
      converged: s.convergence?.converged ?? false,
      proof,
      claimedOnly,
      criteriaUnmet: criteria?.unmet ?? [],
      reportedStates,
      unsandboxedExternal,
      refusals: all.flatMap((w) => w.report.refusals.map((r) => `${w.plan.name} → ${r.tool} ×${r.count}`)),
      nothingChanged,
      limitsHit,
      gitCode,
      dependenciesChangedAlone: tampered,
      outsideEvidence: outside.verdictPart,
      worktrees: s.worktrees ? describeWorktrees(s.worktrees) : null,
      escalation: (s.escalation ?? []).map((e) =>
        e.to !== null && !e.denied
          ? `${e.task} escalated ${e.from} → ${e.to}`
          : `${e.task} returned to its spawner${e.denied ? ' (climb not approved)' : ''}`,
      ),
      impactOrder: spec.task_order?.impact?.map((t) => t.task) ?? [],
    });
  // spec 07: written before the end is announced, so a caller that saw the job end finds them
  recordObjectiveEvidence(ctx, status, changed);

  ctx.settle('settled', status, {
    result: { ...result },
    verdict,
    error: error ?? null,
    finished: epochS(),
    ...(s.checkpoint ? { checkpoint: s.checkpoint } : {}),
  });
}

/** Each task's gates on its final judged attempt. */
function lastGates(all: readonly TaskGatesJson[]): Map<string, TaskGatesJson> {
  return new Map(all.map((g) => [g.task, g]));
}

/**
 * Logs every task's outcome (spec 05) before the job's final status is announced, so a caller that
 * saw the job end finds its outcomes counted. A log that cannot be written is said on the job, and
 * the job still settles as its work decided.
 */
export function recordOutcomes(ctx: JobContext, job: JobEndFacts): void {
  const problems = logOutcomes(ctx, job);
  if (problems.length > 0) ctx.phase(`outcome log not written: ${problems.join('; ')}`.slice(0, 400));
}

/**
 * Settles every attempt still open: a cancelled or stopping job's through cancel or interrupt; else
 * each through the job's last verification and its result gates (shared placement: one verification
 * and one proof serve every task's final attempt, spec 03) — the job's answers to the effects its
 * attempts owe, carried by the interpreter with the attempts' own (a stop answers `processes_gone`,
 * a release lets go). What a settled attempt of a stopped job still owes (the next attempt its
 * cancel kept out) is dropped.
 */
function closeAttempts(
  ctx: JobContext,
  s: SettleInput,
  jobFacts: Pick<AttemptFacts, 'verification' | 'gates'>,
  taskGates: ReadonlyMap<string, TaskGatesJson>,
): void {
  const stopping = ctx.interruptReason !== null;
  for (const e of ctx.attempts.all()) {
    const own = s.perTask?.get(e.attempt.task);
    const shared = own
      ? {
          verification: own.verification ? verificationFacts(own.verification) : null,
          gates: { criteriaMet: own.criteriaMet, contradicted: jobFacts.gates?.contradicted ?? false },
        }
      : jobFacts;
    const declared = taskGates.get(e.attempt.task)?.verdict;
    const facts = declared && shared.gates ? { ...shared, gates: { ...shared.gates, declared } } : shared;
    const blocks = facts.verification !== null && (facts.verification.blocking || facts.verification.couldNotStart);
    const passes = facts.gates !== null && facts.gates.criteriaMet && !facts.gates.contradicted;
    // a stopped job's work is not judged: what it did is carried without a word, then it stops
    const answers: EffectHandlers = s.cancelled
      ? { collect_evidence: () => [], run_verification: () => [], check_result_gates: () => [] }
      : {
          collect_evidence: () => [{ type: 'evidence_taken' }],
          run_verification: () => [
            { type: blocks ? 'verify_failed' : 'verify_passed', facts: { verification: facts.verification } },
          ],
          check_result_gates: () => [
            { type: passes ? 'result_gates_passed' : 'result_gates_failed', facts: { gates: facts.gates } },
          ],
        };
    ctx.attempts.driveNow(e.worker, [], answers);
    if (s.cancelled && !isFinalAttempt(e.attempt)) {
      const stop = stopping ? 'interrupt' : e.attempt.state === 'cancelling' ? 'processes_gone' : 'cancel';
      ctx.attempts.driveNow(e.worker, [{ type: stop }], answers);
    }
    if (s.cancelled) ctx.attempts.drop(e.worker);
  }
}
