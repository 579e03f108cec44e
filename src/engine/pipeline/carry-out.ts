import type { ChangeSet } from '../../evidence/types.js';
import { policyRoleOf } from '../../domain/write-policy.js';
import type { Snapshot } from '../../domain/snapshot.js';
import type { ChangesJson, GitFacts } from '../../domain/changes.js';
import { buildChangesJson, diffSnapshots, readGitFacts, takeSnapshot } from '../../evidence/index.js';
import type { JobResult, VerificationJson } from '../../domain/result.js';
import { describeVerify, type TaskSpec } from '../../domain/request.js';
import { buildHandoff } from '../../domain/handoff.js';
import type { TaskGatesJson } from '../../domain/gates.js';
import { autopsySection } from '../../domain/escalation.js';
import { gateTasks, needsYes, TaskLadders } from '../routing/escalation.js';
import { askToClimb } from '../admission/approval.js';
import type { Route } from '../../domain/route.js';
import { routeOfRung } from '../../domain/routing.js';
import {
  readCommittedHints,
  WORKSPACE_HINTS_FILE,
  type CommittedHintsReading,
} from '../../verification/workspace-hints.js';
import { detectTestCommand, type DetectedCommand } from '../../verification/detect.js';
import { adviceForCommand, frameworkBehindCommand } from '../../verification/npm-script.js';
import type { TestFramework } from '../../verification/parsers/types.js';
import { readWorkspaceText } from '../../platform/files/bounded-read.js';
import { verifyWork, type BaselineCache, type CheckRun, type CheckRunHooks } from '../../verification/verify.js';
import { checkingOf } from '../../domain/checking.js';
import { buildFixerInstruction } from '../../verification/fixer-instruction.js';
import { compareArtifacts, verificationArtifact } from '../../verification/convergence.js';
import { epochS } from '../clock.js';
import type { JobContext } from '../job-context.js';
import { runWorker, supersede, type StepAway, type WorkerEnd, type WorkerPlan, refuseWorker } from './attempt-run.js';
import { settleJob, emptyTotals, recordOutcomes, verificationFacts, type SettleInput } from '../settle/settle.js';
import type { JobPatch } from '../../store/store.js';
import { checkJobCriteria } from '../../verification/criteria.js';
import { captureOutputs, type OutputStates } from '../../verification/outputs.js';
import { recordJobProcesses } from '../maintenance/recovery.js';
import type { Place } from '../placement/placement.js';
import { taskPhases } from '../../domain/phase-order.js';
import { auditStep } from './write-audit.js';
import { findHarnessChanges, isTestFilePath } from '../../verification/harness.js';
import { CHANGING_TASK_TYPES } from '../../domain/status.js';
import { applyObjectives, objectivesFileOf, recordObjectiveEvidence } from './objectives.js';
import { followUpSession } from '../admission/follow-up.js';
import { sandboxesOwnRuns } from './own-guard.js';

/**
 * The tasks one place serves and how their progress is told: the whole job in the shared workspace
 * (its status and result move with them), or one task in its worktree (spec 06; its phases are the
 * job's, prefixed with its name, and its snapshots, logs and fix attempts are named after it).
 */
export interface Scope {
  tasks: TaskSpec[];
  /** Prefix of snapshot labels and verification logs ('' for the whole job). */
  tag: string;
  /** Fix attempt N's name and row order. */
  fixer(round: number): { name: string; ord: number };
  /** A status change and the phase it starts (a task's place: the phase only). */
  enter(status: 'running' | 'verifying', phase: string, patch?: JobPatch): void;
  phase(message: string, patch?: JobPatch): void;
  /** The job's result so far (a task's place: not the job's; nothing). */
  progress(patch: Partial<JobResult>): void;
  /** The batch this scope's attempts belong to when it spans scopes (a worktree fan-out's parallel tasks): a launch failure stops them all. */
  batch?: AbortController;
  /** Paths every snapshot here includes even when ignored; default its tasks' files and outputs (a worktree job's tasks share one set, as they share one pre-snapshot). */
  alwaysInclude?: string[];
  /** Takes the pre-snapshot instead of checkpointing the place (a worktree job's base, checkpointed once and reused by each task). */
  pre?(workspace: string, alwaysInclude: string[], label: string): Promise<Snapshot>;
  /**
   * The work judged here is more than this scope's own (a worktree job's reviewers in the merged
   * tree, spec 06): the full suite runs, and no fix round — a fixer of the merged tree would have
   * no implementer's policy to write by.
   */
  integrated?: true;
  /**
   * Lets go of the place while `wait` waits for a person (a climb to a rung that needs a yes, spec
   * 05), then takes it again: the place to go on in, or null when the job was cancelled meanwhile.
   */
  yieldPlace?(wait: () => Promise<boolean | null>): Promise<{ yes: boolean | null; place: Place | null }>;
  /**
   * The hints the job goes by, read once from the user's workspace (issue 32): a worktree's HEAD is
   * gaffer's base commit, which holds the working copy, so it is no judge of what was committed.
   */
  hints?: Promise<CommittedHintsReading>;
}

/** The shared workspace's scope: every task, the job's own status and result. */
export function wholeJob(ctx: JobContext, tasks: TaskSpec[] = ctx.spec.tasks): Scope {
  return {
    tasks,
    tag: '',
    fixer: (round) => ({ name: `fixer-${round}`, ord: ctx.spec.tasks.length + round - 1 }),
    enter: (status, phase, patch) => ctx.enter(status, phase, patch),
    phase: (message, patch) => ctx.phase(message, patch),
    progress: (patch) => ctx.update({ result: resultSoFar(ctx, patch) }),
  };
}

/**
 * Carries out a scope's tasks in one place: a checkpoint, every task's first attempt, then one
 * evidence trail and verification for them all, then fix attempts one at a time (spec 03) — what
 * the job's end is decided from. The shared placement runs the whole job so; a worktree job runs
 * each task so in its own worktree (spec 06).
 */
export async function carryOut(ctx: JobContext, place: Place, scope: Scope): Promise<SettleInput> {
  const spec = ctx.spec;
  const workspace = place.workspace;
  scope.enter('running', 'checkpointing the workspace', { started: ctx.job.started ?? epochS() });
  let pre: Snapshot | null = null;
  // the hints file is in the evidence: a worker's change to it is a test-harness change (spec 03)
  const hintsAtHead = await (scope.hints ?? readCommittedHints(workspace));
  const objectivesFile = objectivesFileOf(hintsAtHead.hints);
  // the objectives file too, ignored or not: spec 07 reads it from the checkpoint
  const alwaysInclude = [
    ...(scope.alwaysInclude ?? scope.tasks.flatMap((t) => [...t.files, ...t.outputs])),
    WORKSPACE_HINTS_FILE,
    objectivesFile,
  ];
  const snap = (label: string) =>
    takeSnapshot({
      workspace,
      dataDir: ctx.services.dataDir,
      jobId: ctx.id,
      label: `${scope.tag}${label}`,
      alwaysInclude,
      // every later snapshot has the checkpoint's source, so the two always compare
      ...(pre ? { like: pre } : {}),
    });
  pre = scope.pre ? await scope.pre(workspace, alwaysInclude, `${scope.tag}pre`) : await snap('pre');
  // spec 03: what `verify: "auto"` runs is decided from the workspace before any worker runs, by the
  // hints as committed at HEAD (issue 32: an earlier worker could have written the working copy)
  const checkpoint = detectAtCheckpoint(ctx, workspace, hintsAtHead);
  // spec 07: the `verify.scope` hint, read then too, applies when the request named no scope
  const verifyScope = scope.integrated
    ? 'all'
    : spec.verify_scope_given
      ? spec.verify_scope
      : (hintsAtHead.hints.verify?.scope ?? spec.verify_scope);
  if (scope.tag === '') ctx.update({ checkpoint: { pre }, result: resultSoFar(ctx, {}) });
  // spec 07 "Objectives ordering": the shared workspace's objectives, as the checkpoint holds them
  const tasks = scope.tag === '' ? await applyObjectives(ctx, pre, objectivesFile, scope.tasks) : scope.tasks;
  if (ctx.isCancelled)
    return {
      workers: [],
      fixers: [],
      changes: null,
      changeSet: null,
      verification: null,
      cancelled: true,
      fixRounds: 0,
    };

  scope.phase('workers running');
  const evidence = new EvidenceTrail(pre, { gitFacts: place.isolated !== true });
  const violations: string[] = [];
  let lastWork = pre;
  /** The snapshot after a step of the work: its writes are the workers' (spec 03), audited against their policies (spec 06). */
  const collect = async (step: WorkerEnd[], label: string): Promise<void> => {
    // first: a broken `.git` link would steer the snapshot's own git calls
    const broken = place.repair?.() ?? [];
    const after = await snap(label);
    const written = await evidence.diff(evidence.lastVerified ?? lastWork, after);
    evidence.addWorkStep(written);
    lastWork = after;
    violations.push(...auditStep(ctx, workspace, step, written, await restoredTests(evidence, written, after), broken));
  };
  const yieldPlace = scope.yieldPlace;
  let aways = 0;
  /**
   * Lets go of the shared workspace while `wait` waits — a climb's yes (spec 05), an attempt held by
   * a budget or a suspended provider (spec 07) — and takes it back: what changed meanwhile is not
   * the workers' doing. Absent where the place is the job's own (a task's worktree: kept).
   */
  const away: StepAway | undefined =
    yieldPlace &&
    (async (wait) => {
      const answer = await yieldPlace(wait);
      if (answer.place === null) return answer;
      place = answer.place;
      const back = await snap(`back-${++aways}`);
      evidence.addAwayStep(await evidence.diff(lastWork, back), back);
      lastWork = back;
      return answer;
    });
  const workers: WorkerEnd[] = [];
  const steps = workerSteps(ctx, place, tasks).map((step) =>
    step.map((plan) => ({ ...plan, ...(away ? { away } : {}) })),
  );
  let lastStep: WorkerEnd[] = [];
  for (const [i, step] of steps.entries()) {
    lastStep = await runBatch(ctx, step, place, scope.batch ?? (step.length > 1 ? new AbortController() : null));
    workers.push(...lastStep);
    if (i < steps.length - 1) await collect(lastStep, `step-${i + 1}`);
  }
  if (!ctx.isCancelled && !workers.some((w) => w.started)) {
    const why = workers.find((w) => w.report.error)?.report.error ?? 'no worker started';
    return {
      workers,
      fixers: [],
      changes: null,
      changeSet: null,
      verification: null,
      cancelled: false,
      fixRounds: 0,
      error: `no worker started: ${why}`,
    };
  }

  if (ctx.isCancelled) scope.phase('checking what changed on disk');
  else scope.enter('verifying', 'checking what changed on disk');
  await collect(lastStep, 'post');
  let changes = await evidence.changesJson(lastWork);
  scope.progress({ changes, files_changed: allPaths(await evidence.workerChanges(lastWork)) });

  if (ctx.isCancelled)
    return {
      workers,
      fixers: [],
      changes,
      changeSet: await evidence.workerChanges(lastWork),
      verification: null,
      cancelled: true,
      fixRounds: 0,
    };

  const baselines: BaselineCache = new Map();
  const checks: CheckRun[] = [];
  const onRun = checkRunHooks(ctx, scope, checks);
  // spec 03: under the sandbox, by this process's own policy (a node's `sandboxed` is a claim about another machine)
  const sandboxed = () => sandboxesOwnRuns(ctx);
  const verify = async (label: string, roundScope = verifyScope) =>
    verifyOnce(ctx, scope, {
      workspace,
      label,
      scope: roundScope,
      checkpoint,
      lastWork,
      evidence,
      snap,
      changes: await evidence.workerChanges(lastWork),
      cache: baselines,
      sandbox: sandboxed(),
      onRun,
    });
  const fixers: WorkerEnd[] = [];
  /** Attempts a climb up the ladder took over from (spec 05). */
  const superseded: WorkerEnd[] = [];
  let fixRoundsRun = 0;
  let rung = 1;

  /**
   * The verification of the work as it stands, then fix attempts one at a time while it blocks and
   * rounds are left (spec 03), each rung its own `fix_rounds`; then the full suite once when only
   * related tests ran.
   */
  const verifyAndFix = async (): Promise<{
    verification: VerificationJson;
    converged: ReturnType<typeof compareArtifacts> | null;
  }> => {
    const at = (r: number) => (rung === 1 ? `${r}` : `r${rung}-${r}`);
    let round = 0;
    let verification = await verify(at(round));
    const previous: { summary: string; failures: string[] }[] = [];
    let converged: ReturnType<typeof compareArtifacts> | null = null;
    let artifact = verificationArtifact(verification, allPaths(await evidence.workerChanges(lastWork)));
    scope.progress({ changes: await evidence.changesJson(lastWork), verification });

    const fixRounds = scope.integrated ? 0 : spec.fix_rounds;
    while (verification.blocking && round < fixRounds && !ctx.isCancelled) {
      round++;
      fixRoundsRun++;
      scope.phase(`verification failed — fix round ${round}`);
      const changedSoFar = allPaths(await evidence.workerChanges(lastWork));
      const target = pickResumeTarget(workers, fixers, verification);
      const task = target.plan.task;
      const plan: WorkerPlan = {
        task,
        // on the rung that did the work (spec 05: fix rounds come first, on the same rung)
        route: ctx.services.router.route(task, ctx.attempts.history(task.name)),
        ...scope.fixer(fixRoundsRun),
        role: 'fixer',
        instruction: buildFixerInstruction(verification, scope.tasks, changedSoFar),
        // spec 03: the session handle is carried; a runner that cannot resume starts fresh with it
        resume: target.report.session,
        ...(away ? { away } : {}),
      };
      // the fixed task's attempt is superseded by its fix attempt (a new attempt of the same task):
      // the verification's answer to it is that it can be fixed, and the table admits the fix
      const current = ctx.attempts.history(task.name).find((e) => e.attempt.state === 'verifying');
      const fixable = {
        type: 'verify_failed_fixable' as const,
        facts: { verification: verificationFacts(verification) },
      };
      fixers.push(
        current
          ? await supersede(ctx, current.worker, { run_verification: () => [fixable] }, plan, place)
          : await runWorker(ctx, plan, place),
      );
      if (ctx.isCancelled) break;

      scope.phase('checking what changed on disk');
      await collect(fixers.slice(-1), `fix-${fixRoundsRun}`);
      scope.phase(`verifying again after fix round ${round}`);
      previous.push({ summary: verification.summary, failures: verification.failures });
      const next = await verify(at(round));
      const nextArtifact = verificationArtifact(next, allPaths(await evidence.workerChanges(lastWork)));
      verification = { ...next, attempts: round + 1, previous: [...previous] };
      const comparison = compareArtifacts(artifact, nextArtifact);
      artifact = nextArtifact;
      scope.progress({ changes: await evidence.changesJson(lastWork), verification });
      if (verification.blocking && comparison.converged) {
        converged = comparison;
        scope.phase(`fix rounds converged after ${round}`);
        break;
      }
    }

    // spec 03 "Scope": related tests are for speed; `proved` needs the full suite of the final state, once
    if (
      verification.scope === 'related' &&
      !verification.blocking &&
      !ctx.isCancelled &&
      ctx.services.confirmFullSuite
    ) {
      scope.phase('running the full suite on the final state');
      const related = verification;
      const full = await verify(rung === 1 ? 'full' : `r${rung}-full`, 'all');
      verification = {
        ...full,
        // a test that passed only on rerun during the related runs stays a named doubt
        flaky: [...new Set([...related.flaky, ...full.flaky])],
        attempts: related.attempts,
        ...(related.previous ? { previous: related.previous } : {}),
        confirms_related: { related_files: related.related_files?.length ?? 0, summary: related.summary },
      };
      scope.progress({ changes: await evidence.changesJson(lastWork), verification });
    }
    return { verification, converged };
  };

  const checkCriteria = async (verification: VerificationJson) =>
    // a task in its worktree is judged by its own criteria only (job-level ones are refused with worktrees)
    checkJobCriteria(
      { ...spec, workspace, tasks: scope.tasks, criteria: scope.tag === '' ? spec.criteria : [] },
      {
        changeSet: await evidence.workerChanges(lastWork),
        verification,
        sandbox: sandboxed() ? ctx.services.sandbox : false,
        network: ctx.services.verificationNetwork,
        dependencyRoot: ctx.spec.workspace,
        signal: ctx.abort.signal,
        workDir: ctx.jobDir,
        processes: recordJobProcesses(ctx.services.store, ctx.id),
        onRun,
      },
    );

  let { verification, converged } = await verifyAndFix();
  let criteria = await checkCriteria(verification);
  // spec 05: each task's own gates, then a climb up its cost ladder while it fails and a rung is left
  const ladders = new TaskLadders(scope.tasks, ctx.services.router);
  const gates: TaskGatesJson[] = [];
  for (;;) {
    const changeSet = await evidence.workerChanges(lastWork);
    // a command gate can be made to pass by the work itself (a test, the runner's config): found only when one is declared
    const hasCommandGate = scope.tasks.some((t) => t.gates?.some((g) => g.kind === 'command'));
    const harness = hasCommandGate ? (await findHarnessChanges(changeSet, pre, workspace)).map((h) => h.path) : [];
    const judged = await gateTasks(ctx, scope.tasks, workers, {
      workspace,
      changed: allPaths(changeSet),
      harness,
      verification,
      sandbox: sandboxed(),
    });
    gates.push(...judged.filter((g) => g.results.length > 0));
    if (ctx.isCancelled || scope.integrated) break;
    const climb = ladders.next(
      workers,
      judged,
      verification,
      (v) => pickResumeTarget(workers, fixers, v).plan.task.name,
    );
    if (climb === null) break;
    const { task, to } = climb;
    scope.phase(`${task.name}: ${climb.why} — escalating to ${to.entry}`);
    const asked = needsYes(to, spec.approval, ctx.services.approval.default) || undefined;
    if (asked) {
      // spec 05: the job waits for the yes without its workspace (a task's own worktree is gaffer's: kept)
      const ask = () => askToClimb(ctx, task, to, climb.why);
      const answer = away ? await away(ask) : { yes: await ask(), place };
      if (answer.yes === false) {
        // returned where it stands; the job settles from what was judged (its workspace may be let go)
        ladders.denied(task);
        break;
      }
      if (answer.yes === null || answer.place === null) break;
    }
    // the rung's attempt is superseded by the next rung's (spec 05 "Escalation"), its gates' reading with it
    const live = ctx.attempts
      .history(task.name)
      .filter((e) => e.attempt.state === 'verifying')
      .at(-1);
    const before = workers.findIndex((w) => w.plan.task === task);
    const previous = workers[before] as WorkerEnd;
    const route = routeOfRung(to);
    scope.phase(`${task.name}: escalated to ${to.entry}`);
    rung++;
    const plan: WorkerPlan = {
      ...previous.plan,
      route,
      name: `${task.name}+${to.entry}`,
      kind: 'escalation',
      ...(asked ? { asked } : {}),
      resume: null,
      instruction: buildInstruction(ctx, task, route, autopsySection(climb.autopsy)),
    };
    // the verification's and the gates' answers to it, from which the table admits the next rung's attempt
    const blocks = verification.blocking || (verification.could_not_start ?? false);
    const verified = {
      type: blocks ? 'verify_failed' : 'verify_passed',
      facts: { verification: verificationFacts(verification) },
    } as const;
    const gatesOf = { criteriaMet: criteria?.complete ?? true, contradicted: false, declared: climb.verdict };
    const answers = {
      run_verification: () => [verified],
      check_result_gates: () => [{ type: 'escalate' as const, facts: { gates: gatesOf } }],
    };
    const end = live ? await supersede(ctx, live.worker, answers, plan, place) : await runWorker(ctx, plan, place);
    // the task's work is now the new rung's; the superseded attempts (the rung's fixers too: a fix round
    // resumes the newest work, never an older rung's session) still count in the totals
    workers[before] = end;
    superseded.push(previous, ...fixers.splice(0));
    if (ctx.isCancelled) break;
    scope.phase('checking what changed on disk');
    await collect([end], `climb-${rung}`);
    ({ verification, converged } = await verifyAndFix());
    criteria = await checkCriteria(verification);
  }

  return {
    workers,
    fixers: [...superseded, ...fixers],
    changes: await evidence.changesJson(lastWork),
    changeSet: await evidence.workerChanges(lastWork),
    verification: verification === null ? null : withChecking(verification, checks),
    cancelled: ctx.isCancelled,
    fixRounds: fixRoundsRun,
    checkpoint: { pre, post: lastWork },
    writeViolations: violations,
    ...(converged ? { convergence: converged } : {}),
    criteria,
    ...(gates.length > 0 ? { gates } : {}),
    ...(ladders.climbs.length > 0 ? { escalation: ladders.climbs } : {}),
  };
}

/**
 * Verifies a change made by `change` in `workspace` on its own (the merged tree of a worktree job,
 * spec 06): a checkpoint before it, a snapshot after, the full suite judged against the checkpoint's.
 */
export async function verifyChange(
  ctx: JobContext,
  workspace: string,
  scope: Scope,
  sandbox: boolean,
  change: () => Promise<void>,
): Promise<VerificationJson> {
  let pre: Snapshot | null = null;
  const snap = (label: string) =>
    takeSnapshot({
      workspace,
      dataDir: ctx.services.dataDir,
      jobId: ctx.id,
      label: `${scope.tag}${label}`,
      alwaysInclude: [WORKSPACE_HINTS_FILE],
      ...(pre ? { like: pre } : {}),
    });
  pre = await snap('pre');
  const checkpoint = detectAtCheckpoint(ctx, workspace, await (scope.hints ?? readCommittedHints(workspace)));
  await change();
  const post = await snap('post');
  const evidence = new EvidenceTrail(pre, { gitFacts: false });
  evidence.addWorkStep(await evidence.diff(pre, post));
  // issue 33: the merged tree's runs are seen as every other verification's
  const onRun = checkRunHooks(ctx, scope, []);
  return verifyOnce(ctx, scope, {
    workspace,
    label: '0',
    scope: 'all',
    checkpoint,
    lastWork: post,
    evidence,
    snap,
    changes: await evidence.workerChanges(post),
    cache: new Map(),
    sandbox,
    onRun,
  });
}

/** A task a person did not approve (spec 05): its first attempt settled `refused`, no process. */
export function refusedTask(ctx: JobContext, task: TaskSpec, why: string): WorkerEnd {
  return refuseWorker(ctx, firstAttemptPlan(ctx, task, null), why);
}

/** A task's first attempt ended before it started, for `why` (its worktree could not be made). */
export function failedFirstAttempt(ctx: JobContext, task: TaskSpec, why: string): Promise<WorkerEnd> {
  const place: Place = {
    workspace: ctx.spec.workspace,
    failure: why,
    turn: () => Promise.resolve(() => undefined),
    release: () => undefined,
  };
  const plan = firstAttemptPlan(ctx, task, null);
  return runWorker(ctx, plan, place);
}

/**
 * What `verify: "auto"` runs, decided at the checkpoint: the hints as committed at HEAD (a working
 * copy that differs is named, never obeyed) and the manifests as the workspace holds them, each one
 * that is not a regular file inside it named and left out (issue 32).
 */
function detectAtCheckpoint(ctx: JobContext, workspace: string, reading: CommittedHintsReading): CheckpointDetection {
  // issue 33: failures declared known by the request and by the hints as committed (a worker cannot add one)
  const known = [...new Set([...(ctx.spec.known_failures ?? []), ...(reading.hints.verify?.known_failures ?? [])])];
  const verify = ctx.spec.verify;
  if (verify.mode === 'off') return { detected: null, ignored: [], known, framework: null, advice: null };
  const ignored = verify.mode === 'auto' && reading.untrusted !== null ? [reading.untrusted] : [];
  const detected = verify.mode === 'auto' ? detectTestCommand(workspace, reading.hints, ignored) : null;
  // issue 33: the runner behind `npm test` and what else its script runs, from the manifest as it is before any worker
  const manifest = readWorkspaceText(workspace, 'package.json');
  const command = verify.mode === 'command' ? verify.command : (detected?.command ?? null);
  const framework = detected?.framework ?? (command === null ? null : frameworkBehindCommand(command, manifest));
  // only a run of the test script itself is settled by naming the runner inside it
  const advice =
    manifest === null || command === null || (detected?.skipped?.length ?? 0) > 0
      ? null
      : adviceForCommand(command, manifest);
  return { detected, ignored, known, framework, advice };
}

/** What the checkpoint decides about the verification before any worker runs (detectAtCheckpoint). */
interface CheckpointDetection {
  /** What `verify: "auto"` runs; null under an explicit command or none found. */
  detected: DetectedCommand | null;
  /** What the detection did not go by, named on every verification. */
  ignored: string[];
  /** Failures declared known (the request's and the committed hints'). */
  known: string[];
  /** The runner behind the command that runs, when known. */
  framework: TestFramework | null;
  /** How an inconclusive run of the test script would become conclusive (its script runs more than tests); null when nothing to say. */
  advice: string | null;
}

/** One verification of the tree the workers left (`round` names its logs: 0, 1, … or `full`). */
async function verifyOnce(
  ctx: JobContext,
  scope: Scope,
  v: {
    workspace: string;
    /** Names its logs and snapshot: `0`, `1`, … `full`; `r2-0` … on a later rung. */
    label: string;
    scope: 'related' | 'all';
    /** What the checkpoint decided (detectAtCheckpoint). */
    checkpoint: CheckpointDetection;
    lastWork: Snapshot;
    evidence: EvidenceTrail;
    snap: (label: string) => Promise<Snapshot>;
    changes: ChangeSet;
    cache: BaselineCache;
    sandbox: boolean;
    /** Told of each run the verification makes (issue 33). */
    onRun?: CheckRunHooks;
  },
): Promise<VerificationJson> {
  const spec = ctx.spec;
  if (spec.verify.mode !== 'off') scope.phase('running the verification');
  const verification = await verifyWork({
    workspace: v.workspace,
    verify: spec.verify,
    detected: v.checkpoint.detected,
    framework: v.checkpoint.framework,
    scope: v.scope,
    timeoutS: spec.verify_timeout_s,
    expectedOutput: spec.expected_output_contains,
    pre: v.evidence.pre,
    post: v.lastWork,
    changes: v.changes,
    testsMayChange: scope.tasks.some((t) => t.tests_may_change),
    knownFailures: v.checkpoint.known,
    fullSuiteFollows: v.scope === 'related' && ctx.services.confirmFullSuite,
    ownsCheckpointFailures: scope.tasks.some((t) => CHANGING_TASK_TYPES.has(t.type)),
    workDir: ctx.jobDir,
    label: `${scope.tag}${v.label}`,
    cache: v.cache,
    signal: ctx.abort.signal,
    sandbox: v.sandbox ? ctx.services.sandbox : false,
    network: ctx.services.verificationNetwork,
    dependencyRoot: ctx.spec.workspace,
    // spec 07: recorded while they run, so a crash leaves nothing running that recovery cannot stop
    processes: recordJobProcesses(ctx.services.store, ctx.id),
    ...(v.onRun ? { onRun: v.onRun } : {}),
  });
  const { ignored, detected, advice } = v.checkpoint;
  if (ignored.length > 0) verification.ignored_files = ignored;
  // issue 33: the steps of the test script auto mode left out, and how an inconclusive run would settle
  if (verification.ran && (detected?.skipped?.length ?? 0) > 0) verification.left_out = detected?.skipped;
  if (verification.ran && verification.inconclusive && !verification.could_not_start && advice !== null)
    verification.advice = advice;
  if (verification.ran) {
    // spec 03: the verification's own writes are snapshotted separately, never blamed on workers
    const afterVerify = await v.snap(`verify-${v.label}`);
    v.evidence.addVerificationStep(await v.evidence.diff(v.lastWork, afterVerify), afterVerify);
  }
  return verification;
}

/** What a run's start is called in the job's phase (the verification's own and the full suite's phases are said already). */
const CHECK_PHASES: Partial<Record<CheckRun['what'], string>> = {
  baseline: "running the same command on the checkpoint's content (the baseline)",
  rerun: 'rerunning failing tests by their ids (flaky or not)',
  'original tests': "running the checkpoint's tests against the new code",
  criterion: 'checking a command criterion',
};

/**
 * Issue 33: every run a verification makes is seen — its start as the job's phase, its end as a
 * `check` event with its duration — and kept, so the answer can say where the checking time went.
 */
function checkRunHooks(ctx: JobContext, scope: Scope, log: CheckRun[]): CheckRunHooks {
  return {
    start: (what, command) => {
      const phase = CHECK_PHASES[what];
      if (phase !== undefined) scope.phase(`${phase}: ${command}`.slice(0, 300));
    },
    end: (run) => {
      log.push(run);
      const s = Math.round(run.durationMs / 100) / 10;
      ctx.emit({
        name: 'job',
        event: 'check',
        message: `${scope.tag}${run.what} took ${s} s (${run.summary})`.slice(0, 400),
        what: run.what,
        command: run.command,
        duration_s: s,
        ...(scope.tag ? { task: scope.tag.replace(/[.:/-]$/, '') } : {}),
      });
    },
  };
}

/** The final verification with where the job's checking time went (issue 33). */
function withChecking(v: VerificationJson, checks: readonly CheckRun[]): VerificationJson {
  const checking = checkingOf(checks.map((c) => ({ what: c.what, s: c.durationMs / 1000 })));
  return checking === null ? v : { ...v, checking };
}

/**
 * The tasks' first attempts in the steps they run in: in a sequential job one attempt a step, in
 * the phases' order; in a parallel job one step a phase, its attempts at once up to the executor's
 * cap, each taking its turn in the place (spec 06 "Phase order": reviewers after implementers).
 */
function workerSteps(ctx: JobContext, place: Place, tasks: TaskSpec[]): WorkerPlan[][] {
  const spec = ctx.spec;
  // spec 06: a declared output counts as written only if it differs from what the checkpoint had
  const outputsAtCheckpoint = captureOutputs(
    place.workspace,
    tasks.flatMap((t) => t.outputs),
  );
  const phases = taskPhases(tasks).map((phase) =>
    phase.map((task) => firstAttemptPlan(ctx, task, outputsAtCheckpoint)),
  );
  return spec.parallel ? phases : phases.flat().map((plan) => [plan]);
}

function firstAttemptPlan(ctx: JobContext, task: TaskSpec, outputsAtCheckpoint: OutputStates | null): WorkerPlan {
  const route = ctx.services.router.route(task, ctx.attempts.history(task.name));
  return {
    task,
    route,
    name: task.name,
    // a review/verify/judge/triage/research task's row says it is a reviewer (spec 03's `role`)
    role: policyRoleOf(task, 'worker') === 'reviewer' ? 'reviewer' : 'worker',
    instruction: buildInstruction(ctx, task, route),
    // issue 16: a follow-up's first attempt resumes the followed task's session, looked up in the store
    resume: followUpSession(ctx.services.store, ctx.spec.follow_up, task.name),
    // the rows keep the request's order; `task_order` says the order they ran in
    ord: ctx.spec.tasks.indexOf(task),
    ...(outputsAtCheckpoint ? { outputsAtCheckpoint } : {}),
    ...(ctx.approvedByAsk.has(task.name) ? { asked: true as const } : {}),
  };
}

/**
 * A step's attempts at once, as one batch when there is one: a launch failure of one stops the
 * others (spec 06), each ending `error` with `batch_stopped` and the reason; the job goes on to its evidence.
 */
function runBatch(
  ctx: JobContext,
  step: WorkerPlan[],
  place: Place,
  batch: AbortController | null,
): Promise<WorkerEnd[]> {
  return Promise.all(step.map((plan) => runTaskAttempts(ctx, batch ? { ...plan, batch } : plan, place)));
}

/**
 * A task's first attempt and, when it exited 0 without its declared outputs, one retry: its work
 * is missing, not wrong (spec 06) — a new attempt of the same route with a new session, told what
 * was missing. A violation, a timeout or a failed verification is never retried here.
 */
async function runTaskAttempts(ctx: JobContext, plan: WorkerPlan, place: Place): Promise<WorkerEnd> {
  const first = await runWorker(ctx, plan, place);
  if (first.report.stopReason !== 'outputs_missing' || ctx.isCancelled) return first;
  const missing = first.report.error ?? 'a declared output was not written';
  const retry: WorkerPlan = {
    ...plan,
    // `+` is never in a task's name: the retry's row cannot collide with another task's
    name: `${plan.name}+retry`,
    kind: 'retry',
    resume: null,
    instruction: `${plan.instruction}\n\n## Your previous attempt\nIt ended without its declared outputs (${missing}). Write every declared output.`,
  };
  // its evidence is its declared outputs, read as its process ended (attempt-run.ts): missing
  return supersede(ctx, plan.name, { collect_evidence: () => [{ type: 'outputs_missing' }] }, retry, place);
}

/** The test files a step changed back to what the checkpoint had (looked up only when it changed an existing test). */
async function restoredTests(evidence: EvidenceTrail, written: ChangeSet, after: Snapshot): Promise<string[]> {
  const touched = [...written.modified, ...written.deleted].filter(isTestFilePath);
  if (touched.length === 0) return [];
  const since = await evidence.diff(evidence.pre, after);
  const differs = new Set(allPaths(since));
  return touched.filter((p) => !differs.has(p));
}

/**
 * What a worker is told: an agent gets gaffer's handoff prompt (spec 05), built from the task; a
 * runner that is not an agent (`shell`) gets the instruction as written — it may be its command.
 */
function buildInstruction(ctx: JobContext, task: TaskSpec, route: Route, autopsy?: string): string {
  // a command is run as written: nothing is added to it, an autopsy least of all
  if (ctx.services.runners.get(route.runner)?.takesPrompt !== true) return task.instruction;
  const handoff = buildHandoff({
    task,
    route,
    jobContext: ctx.spec.context,
    verify: describeVerify(ctx.spec.verify),
    rules: ctx.services.handoffRules,
    source: `gaffer job ${ctx.id}`,
  });
  return autopsy ? `${handoff}\n\n${autopsy}` : handoff;
}

/**
 * spec 03 "Resume": the worker that touched a file named by the failing tests, else any worker that
 * changed something, else the last that ran; later beats earlier.
 */
function pickResumeTarget(workers: WorkerEnd[], fixers: WorkerEnd[], v: VerificationJson): WorkerEnd {
  const ran = [...workers, ...fixers].filter((w) => w.started);
  const candidates = ran.length ? ran : workers;
  const named = (w: WorkerEnd) => w.report.filesChanged.some((f) => v.failures.some((failure) => failure.includes(f)));
  const latest = (list: WorkerEnd[]) => list[list.length - 1];
  return (
    latest(candidates.filter(named)) ??
    latest(candidates.filter((w) => w.report.filesChanged.length > 0)) ??
    (latest(candidates) as WorkerEnd)
  );
}

export function failJob(ctx: JobContext, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  const workersRan = ctx.services.store.listAttempts(ctx.id).some((a) => a.started !== null);
  // spec 05: every task's outcome is logged, this end's too (a task whose attempt was still live: `error`)
  recordOutcomes(ctx, {
    cancelled: ctx.isCancelled && ctx.interruptReason === null,
    interrupted: ctx.interruptReason !== null,
  });
  recordObjectiveEvidence(ctx, workersRan ? 'partial' : 'error', ctx.job.result?.files_changed ?? []);
  ctx.enter(workersRan ? 'partial' : 'error', 'settled', {
    finished: epochS(),
    error: `gaffer failed: ${message}`,
    verdict: `error: gaffer failed: ${message}`.slice(0, 400),
  });
}

export function resultSoFar(ctx: JobContext, patch: Partial<JobResult>): JobResult {
  const base: JobResult = ctx.job.result ?? {
    files_changed: [],
    claimed_only: [],
    changes: null,
    verification: null,
    fix_rounds_run: 0,
    proof: null,
    totals: emptyTotals(),
  };
  return { ...base, ...patch };
}

export const allPaths = (c: ChangeSet): string[] => [...c.added, ...c.modified, ...c.deleted].sort();

/**
 * Keeps apart what the workers changed from what the verification wrote (spec 03): the job's
 * changes are the diff from the checkpoint, less paths only the verification touched.
 */
class EvidenceTrail {
  readonly #pre: Snapshot;
  readonly #byWorkers = new Set<string>();
  readonly #byVerification = new Set<string>();
  readonly #whileAway = new Set<string>();
  #lastVerified: Snapshot | null = null;
  // the same pair is asked for several times per step; git work is the job's main cost
  readonly #diffs = new Map<string, Promise<ChangeSet>>();
  readonly #gitFacts = new Map<string, Promise<GitFacts | undefined>>();

  readonly #readGitFacts: boolean;

  /** `gitFacts`: read the user's repository's `git status` facts (not in a checkout of gaffer's own, whose facts are not the user's). */
  constructor(pre: Snapshot, opts: { gitFacts: boolean }) {
    this.#pre = pre;
    this.#readGitFacts = opts.gitFacts;
  }

  /** The change set between two snapshots, computed once per pair. */
  diff(a: Snapshot, b: Snapshot): Promise<ChangeSet> {
    const key = `${a.id}:${b.id}`;
    let diff = this.#diffs.get(key);
    if (!diff) this.#diffs.set(key, (diff = diffSnapshots(a, b)));
    return diff;
  }

  get pre(): Snapshot {
    return this.#pre;
  }

  get lastVerified(): Snapshot | null {
    return this.#lastVerified;
  }

  addWorkStep(step: ChangeSet): void {
    for (const p of allPaths(step)) this.#byWorkers.add(p);
  }

  addVerificationStep(step: ChangeSet, after: Snapshot): void {
    for (const p of allPaths(step)) this.#byVerification.add(p);
    this.#lastVerified = after;
  }

  /** What changed while the job let go of its workspace (a climb waiting for a yes, spec 05): someone else's, unless a worker writes it later. */
  addAwayStep(step: ChangeSet, after: Snapshot): void {
    for (const p of allPaths(step)) this.#whileAway.add(p);
    this.#lastVerified = after;
  }

  async workerChanges(lastWork: Snapshot): Promise<ChangeSet> {
    const all = await this.diff(this.#pre, lastWork);
    const keep = (p: string) => this.#byWorkers.has(p) || (!this.#byVerification.has(p) && !this.#whileAway.has(p));
    return { added: all.added.filter(keep), modified: all.modified.filter(keep), deleted: all.deleted.filter(keep) };
  }

  async changesJson(lastWork: Snapshot): Promise<ChangesJson> {
    const changes = await this.workerChanges(lastWork);
    const verificationWrote = [...this.#byVerification].filter((p) => !this.#byWorkers.has(p)).sort();
    let facts = this.#gitFacts.get(lastWork.id);
    if (!facts)
      this.#gitFacts.set(
        lastWork.id,
        (facts = this.#readGitFacts ? readGitFacts(this.#pre.workspace) : Promise.resolve(undefined)),
      );
    const git = await facts;
    return buildChangesJson(this.#pre, changes, { verificationWrote, after: lastWork, ...(git ? { git } : {}) });
  }
}

/** Workers in the order of the request's tasks (a refused task's row among the others'). */
export function inRequestOrder(ctx: JobContext, workers: WorkerEnd[]): WorkerEnd[] {
  const at = (w: WorkerEnd) => ctx.spec.tasks.indexOf(w.plan.task);
  return [...workers].sort((a, b) => at(a) - at(b));
}
