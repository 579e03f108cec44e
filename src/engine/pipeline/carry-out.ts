import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { ChangeSet } from '../../evidence/types.js';
import { policyRoleOf } from '../../domain/write-policy.js';
import type { Snapshot } from '../../domain/snapshot.js';
import type { ChangesJson, GitFacts } from '../../domain/changes.js';
import { buildChangesJson, diffSnapshots, readGitFacts, takeSnapshot } from '../../evidence/index.js';
import type { CriteriaCheckJson, JobResult, VerificationJson } from '../../domain/result.js';
import { describeVerify, type TaskSpec } from '../../domain/request.js';
import { buildHandoff } from '../../domain/handoff.js';
import type { TaskGatesJson } from '../../domain/gates.js';
import { autopsySection } from '../../domain/escalation.js';
import { gateTasks, needsYes, TaskLadders, type Climb } from '../routing/escalation.js';
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
import type { EffectHandlers } from './attempt-ledger.js';
import { runWorker, supersede, type StepAway, type WorkerEnd, type WorkerPlan, refuseWorker } from './attempt-run.js';
import {
  settleJob,
  emptyTotals,
  recordOutcomes,
  stoppedBeforeWork,
  verificationFacts,
  type SettleInput,
} from '../settle/settle.js';
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
 * Carries out a scope's tasks in one place (the shared workspace: the whole job; a worktree job:
 * each task in its own worktree, spec 06): what the job's end is decided from.
 */
export function carryOut(ctx: JobContext, place: Place, scope: Scope): Promise<SettleInput> {
  return new PlaceRun(ctx, place, scope).run();
}

/** What the place's checkpoint fixed before any worker ran. */
interface Checkpointed {
  pre: Snapshot;
  evidence: EvidenceTrail;
  /** What the verification runs, decided from the checkpoint (detectAtCheckpoint). */
  detection: CheckpointDetection;
  verifyScope: 'related' | 'all';
}

/**
 * Waits for a snapshot being taken and runs `meanwhile` (a status change) on the loop's next turn:
 * by then the snapshot's git call is running, so what is written is written while git looks, not
 * before it starts — a trivial job's two looks were each ~0.1–0.2 ms later for it. A snapshot that
 * fails still waits for `meanwhile`: nothing said after the job's failure overwrites it.
 */
async function whileLooking(taking: Promise<Snapshot>, meanwhile: () => void): Promise<Snapshot> {
  taking.catch(() => undefined); // awaited below, after the turn
  await yieldToLoop();
  meanwhile();
  return taking;
}

/** A verification round's word about the one before (spec 03 "Convergence"). */
type Comparison = ReturnType<typeof compareArtifacts>;

/**
 * One place's run: its checkpoint and the tasks' first attempts in their steps, then the work the
 * place owes its attempts once for all of them — a method per effect of the attempt table:
 * `#collect` (collect_evidence), `#verification` (run_verification), `#resultGates`
 * (check_result_gates), `#fixRound` (admit_fix_attempt) and `#climb` (admit_escalation_attempt).
 * Their answers reach the attempts through the interpreter (`supersede`, the step's audit, the
 * settle), so what follows each is the table's row.
 */
class PlaceRun {
  readonly #ctx: JobContext;
  readonly #scope: Scope;
  /** Where the attempts work: the place taken back after the job let go of it while a hold waited. */
  #place: Place;
  #at: Checkpointed | null = null;
  /** Paths every snapshot here includes even when ignored (set at the checkpoint). */
  #alwaysInclude: string[] = [];
  #lastWork: Snapshot | null = null;
  readonly #violations: string[] = [];
  #aways = 0;
  readonly #workers: WorkerEnd[] = [];
  readonly #fixers: WorkerEnd[] = [];
  /** Attempts a climb up the ladder took over from (spec 05). */
  readonly #superseded: WorkerEnd[] = [];
  #fixRoundsRun = 0;
  readonly #baselines: BaselineCache = new Map();
  readonly #checks: CheckRun[] = [];
  readonly #onRun: CheckRunHooks;
  /** The rung's verification rounds (spec 03, 05): the last round's number, what each before said, its artifact, and whether they converged. */
  #rung = 1;
  #round = 0;
  #previous: { summary: string; failures: string[] }[] = [];
  #artifact = '';
  #converged: Comparison | null = null;
  #criteria: CriteriaCheckJson | null = null;
  readonly #gates: TaskGatesJson[] = [];
  readonly #ladders: TaskLadders;
  /**
   * Lets go of the shared workspace while `wait` waits — a climb's yes (spec 05), an attempt held by
   * a budget or a suspended provider (spec 07) — and takes it back: what changed meanwhile is not
   * the workers' doing. Absent where the place is the job's own (a task's worktree: kept).
   */
  readonly #away: StepAway | undefined;

  constructor(ctx: JobContext, place: Place, scope: Scope) {
    this.#ctx = ctx;
    this.#place = place;
    this.#scope = scope;
    this.#onRun = checkRunHooks(ctx, scope, this.#checks);
    this.#ladders = new TaskLadders(scope.tasks, ctx.services.router);
    const yieldPlace = scope.yieldPlace;
    this.#away =
      yieldPlace &&
      (async (wait) => {
        const answer = await yieldPlace(wait);
        if (answer.place === null) return answer;
        this.#place = answer.place;
        const back = await this.#snap(`back-${++this.#aways}`);
        const { evidence } = this.#checkpointed();
        evidence.addAwayStep(await evidence.diff(this.#last(), back), back);
        this.#lastWork = back;
        return answer;
      });
  }

  async run(): Promise<SettleInput> {
    const ctx = this.#ctx;
    const scope = this.#scope;
    const tasks = await this.#checkpoint();
    if (ctx.isCancelled) return stoppedBeforeWork();
    scope.phase('workers running');
    const lastStep = await this.#steps(tasks);
    const workers = this.#workers;
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
    await this.#collect(lastStep, 'post', () => {
      if (ctx.isCancelled) scope.phase('checking what changed on disk');
      else scope.enter('verifying', 'checking what changed on disk');
    });
    const changes = await this.#changes();
    scope.progress({ changes, files_changed: allPaths(await this.#workerChanges()) });
    if (ctx.isCancelled)
      return {
        workers,
        fixers: [],
        changes,
        changeSet: await this.#workerChanges(),
        verification: null,
        cancelled: true,
        fixRounds: 0,
      };
    // from here, what comes next is what the verification and the gates answer: a fix round, a climb, or the end
    let verification = await this.#verification();
    for (;;) {
      if (this.#fixDue(verification)) {
        verification = await this.#fixRound(verification);
        continue;
      }
      verification = await this.#confirmFullSuite(verification);
      const climb = await this.#resultGates(verification);
      if (climb === null || !(await this.#climb(climb, verification))) break;
      verification = await this.#verification();
    }
    return {
      workers,
      fixers: [...this.#superseded, ...this.#fixers],
      changes: await this.#changes(),
      changeSet: await this.#workerChanges(),
      verification: withChecking(verification, this.#checks),
      cancelled: ctx.isCancelled,
      fixRounds: this.#fixRoundsRun,
      checkpoint: { pre: this.#checkpointed().pre, post: this.#last() },
      writeViolations: this.#violations,
      ...(this.#converged ? { convergence: this.#converged } : {}),
      criteria: this.#criteria,
      ...(this.#gates.length > 0 ? { gates: this.#gates } : {}),
      ...(this.#ladders.climbs.length > 0 ? { escalation: this.#ladders.climbs } : {}),
    };
  }

  /** take_checkpoint, once for the place: the pre-snapshot, and what it decides (the verification, the objectives); the tasks in the order they run. */
  async #checkpoint(): Promise<TaskSpec[]> {
    const ctx = this.#ctx;
    const scope = this.#scope;
    const spec = ctx.spec;
    const workspace = this.#place.workspace;
    // the hints file is in the evidence: a worker's change to it is a test-harness change (spec 03)
    const hintsAtHead = await (scope.hints ?? readCommittedHints(workspace));
    const objectivesFile = objectivesFileOf(hintsAtHead.hints);
    // the objectives file too, ignored or not: spec 07 reads it from the checkpoint
    this.#alwaysInclude = [
      ...(scope.alwaysInclude ?? scope.tasks.flatMap((t) => [...t.files, ...t.outputs])),
      WORKSPACE_HINTS_FILE,
      objectivesFile,
    ];
    const pre = await whileLooking(
      scope.pre ? scope.pre(workspace, this.#alwaysInclude, `${scope.tag}pre`) : this.#snap('pre'),
      // a cancel that came first stands: the job goes no further than this checkpoint
      () => {
        if (!ctx.isCancelled)
          scope.enter('running', 'checkpointing the workspace', { started: ctx.job.started ?? epochS() });
      },
    );
    this.#at = {
      pre,
      evidence: new EvidenceTrail(pre, { gitFacts: this.#place.isolated !== true }),
      // spec 03: what `verify: "auto"` runs is decided from the workspace before any worker runs, by the
      // hints as committed at HEAD (issue 32: an earlier worker could have written the working copy)
      detection: detectAtCheckpoint(ctx, workspace, hintsAtHead),
      // spec 07: the `verify.scope` hint, read then too, applies when the request named no scope
      verifyScope: scope.integrated
        ? 'all'
        : spec.verify_scope_given
          ? spec.verify_scope
          : (hintsAtHead.hints.verify?.scope ?? spec.verify_scope),
    };
    this.#lastWork = pre;
    if (scope.tag === '') ctx.update({ checkpoint: { pre }, result: resultSoFar(ctx, {}) });
    // spec 07 "Objectives ordering": the shared workspace's objectives, as the checkpoint holds them
    return scope.tag === '' ? applyObjectives(ctx, pre, objectivesFile, scope.tasks) : scope.tasks;
  }

  /** A snapshot of the place; every one after the checkpoint has its source, so the two always compare. */
  #snap(label: string): Promise<Snapshot> {
    const pre = this.#at?.pre;
    return takeSnapshot({
      workspace: this.#place.workspace,
      dataDir: this.#ctx.services.dataDir,
      jobId: this.#ctx.id,
      label: `${this.#scope.tag}${label}`,
      alwaysInclude: this.#alwaysInclude,
      ...(pre ? { like: pre } : {}),
    });
  }

  #checkpointed(): Checkpointed {
    if (this.#at === null) throw new Error('the place has no checkpoint yet');
    return this.#at;
  }

  #last(): Snapshot {
    return this.#lastWork ?? this.#checkpointed().pre;
  }

  #workerChanges(): Promise<ChangeSet> {
    return this.#checkpointed().evidence.workerChanges(this.#last());
  }

  #changes(): Promise<ChangesJson> {
    return this.#checkpointed().evidence.changesJson(this.#last());
  }

  /** The tasks' first attempts, step by step, each step's evidence collected before the next (the last's by the caller). */
  async #steps(tasks: TaskSpec[]): Promise<WorkerEnd[]> {
    const away = this.#away;
    const steps = workerSteps(this.#ctx, this.#place, tasks).map((step) =>
      step.map((plan) => ({ ...plan, ...(away ? { away } : {}) })),
    );
    let lastStep: WorkerEnd[] = [];
    for (const [i, step] of steps.entries()) {
      const batch = this.#scope.batch ?? (step.length > 1 ? new AbortController() : null);
      lastStep = await runBatch(this.#ctx, step, this.#place, batch);
      this.#workers.push(...lastStep);
      if (i < steps.length - 1) await this.#collect(lastStep, `step-${i + 1}`);
    }
    return lastStep;
  }

  /** collect_evidence: the snapshot after a step of the work; its writes are the workers' (spec 03), audited against their policies (spec 06). */
  async #collect(step: WorkerEnd[], label: string, meanwhile?: () => void): Promise<void> {
    const { evidence } = this.#checkpointed();
    // first: a broken `.git` link would steer the snapshot's own git calls
    const broken = this.#place.repair?.() ?? [];
    const after = await (meanwhile ? whileLooking(this.#snap(label), meanwhile) : this.#snap(label));
    const written = await evidence.diff(evidence.lastVerified ?? this.#last(), after);
    evidence.addWorkStep(written);
    this.#lastWork = after;
    const restored = await restoredTests(evidence, written, after);
    this.#violations.push(...auditStep(this.#ctx, this.#place.workspace, step, written, restored, broken));
  }

  /** One verification of the work as it stands; `label` names its logs and snapshot. */
  async #verify(label: string, scope = this.#checkpointed().verifyScope): Promise<VerificationJson> {
    const at = this.#checkpointed();
    return verifyOnce(this.#ctx, this.#scope, {
      workspace: this.#place.workspace,
      label,
      scope,
      checkpoint: at.detection,
      lastWork: this.#last(),
      evidence: at.evidence,
      snap: (l) => this.#snap(l),
      changes: await this.#workerChanges(),
      cache: this.#baselines,
      sandbox: sandboxesOwnRuns(this.#ctx),
      onRun: this.#onRun,
    });
  }

  /** A verification round's label: `0`, `1` … on the first rung, `r2-0` … on a later one. */
  #label(round: number | 'full'): string {
    return this.#rung === 1 ? `${round}` : `r${this.#rung}-${round}`;
  }

  /** run_verification, a rung's first round: the work as it stands (spec 03). */
  async #verification(): Promise<VerificationJson> {
    const verification = await this.#verify(this.#label(0));
    this.#round = 0;
    this.#previous = [];
    this.#converged = null;
    this.#artifact = verificationArtifact(verification, allPaths(await this.#workerChanges()));
    this.#scope.progress({ changes: await this.#changes(), verification });
    return verification;
  }

  /** The verification blocks and the rung has a fix round left that has not converged (spec 03; none in a merged tree). */
  #fixDue(verification: VerificationJson): boolean {
    const rounds = this.#scope.integrated ? 0 : this.#ctx.spec.fix_rounds;
    return verification.blocking && this.#round < rounds && this.#converged === null && !this.#ctx.isCancelled;
  }

  /**
   * admit_fix_attempt: the verification's answer to the task's attempt is that it can be fixed; the
   * table admits its fix attempt, a new attempt of the same task (spec 03 "Resume") — then its
   * evidence and the verification again, compared with the round before.
   */
  async #fixRound(verification: VerificationJson): Promise<VerificationJson> {
    const ctx = this.#ctx;
    const scope = this.#scope;
    const round = ++this.#round;
    this.#fixRoundsRun++;
    scope.phase(`verification failed — fix round ${round}`);
    const changedSoFar = allPaths(await this.#workerChanges());
    const target = pickResumeTarget(this.#workers, this.#fixers, verification);
    const task = target.plan.task;
    const plan: WorkerPlan = {
      task,
      // on the rung that did the work (spec 05: fix rounds come first, on the same rung)
      route: ctx.services.router.route(task, ctx.attempts.history(task.name)),
      ...scope.fixer(this.#fixRoundsRun),
      role: 'fixer',
      instruction: buildFixerInstruction(verification, scope.tasks, changedSoFar),
      // spec 03: the session handle is carried; a runner that cannot resume starts fresh with it
      resume: target.report.session,
      ...(this.#away ? { away: this.#away } : {}),
    };
    const current = ctx.attempts.history(task.name).find((e) => e.attempt.state === 'verifying');
    const fixable = {
      type: 'verify_failed_fixable' as const,
      facts: { verification: verificationFacts(verification) },
    };
    this.#fixers.push(
      current
        ? await supersede(ctx, current.worker, { run_verification: () => [fixable] }, plan, this.#place)
        : await runWorker(ctx, plan, this.#place),
    );
    if (ctx.isCancelled) return verification;
    scope.phase('checking what changed on disk');
    await this.#collect(this.#fixers.slice(-1), `fix-${this.#fixRoundsRun}`);
    scope.phase(`verifying again after fix round ${round}`);
    this.#previous.push({ summary: verification.summary, failures: verification.failures });
    const next = await this.#verify(this.#label(round));
    const artifact = verificationArtifact(next, allPaths(await this.#workerChanges()));
    const again = { ...next, attempts: round + 1, previous: [...this.#previous] };
    const comparison = compareArtifacts(this.#artifact, artifact);
    this.#artifact = artifact;
    scope.progress({ changes: await this.#changes(), verification: again });
    if (again.blocking && comparison.converged) {
      this.#converged = comparison;
      scope.phase(`fix rounds converged after ${round}`);
    }
    return again;
  }

  /** spec 03 "Scope": related tests are for speed; `proved` needs the full suite of the final state, once. */
  async #confirmFullSuite(related: VerificationJson): Promise<VerificationJson> {
    const ctx = this.#ctx;
    if (related.scope !== 'related' || related.blocking || ctx.isCancelled || !ctx.services.confirmFullSuite)
      return related;
    this.#scope.phase('running the full suite on the final state');
    const full = await this.#verify(this.#label('full'), 'all');
    const verification = {
      ...full,
      // a test that passed only on rerun during the related runs stays a named doubt
      flaky: [...new Set([...related.flaky, ...full.flaky])],
      attempts: related.attempts,
      ...(related.previous ? { previous: related.previous } : {}),
      confirms_related: { related_files: related.related_files?.length ?? 0, summary: related.summary },
    };
    this.#scope.progress({ changes: await this.#changes(), verification });
    return verification;
  }

  /** check_result_gates: the criteria, each task's own gates (spec 05), and the climb up its ladder they call for, if any. */
  async #resultGates(verification: VerificationJson): Promise<Climb | null> {
    const ctx = this.#ctx;
    const scope = this.#scope;
    const workspace = this.#place.workspace;
    const sandboxed = sandboxesOwnRuns(ctx);
    const changeSet = await this.#workerChanges();
    // a task in its worktree is judged by its own criteria only (job-level ones are refused with worktrees)
    this.#criteria = await checkJobCriteria(
      { ...ctx.spec, workspace, tasks: scope.tasks, criteria: scope.tag === '' ? ctx.spec.criteria : [] },
      {
        changeSet,
        verification,
        sandbox: sandboxed ? ctx.services.sandbox : false,
        network: ctx.services.verificationNetwork,
        dependencyRoot: ctx.spec.workspace,
        signal: ctx.abort.signal,
        workDir: ctx.jobDir,
        processes: recordJobProcesses(ctx.services.store, ctx.id),
        onRun: this.#onRun,
      },
    );
    // a command gate can be made to pass by the work itself (a test, the runner's config): found only when one is declared
    const hasCommandGate = scope.tasks.some((t) => t.gates?.some((g) => g.kind === 'command'));
    const pre = this.#checkpointed().pre;
    const harness = hasCommandGate ? (await findHarnessChanges(changeSet, pre, workspace)).map((h) => h.path) : [];
    const judged = await gateTasks(ctx, scope.tasks, this.#workers, {
      workspace,
      changed: allPaths(changeSet),
      harness,
      verification,
      sandbox: sandboxed,
    });
    this.#gates.push(...judged.filter((g) => g.results.length > 0));
    if (ctx.isCancelled || scope.integrated) return null;
    return this.#ladders.next(
      this.#workers,
      judged,
      verification,
      (v) => pickResumeTarget(this.#workers, this.#fixers, v).plan.task.name,
    );
  }

  /**
   * admit_escalation_attempt: the gates' answer to the task's attempt is a climb (spec 05); after a
   * yes when the rung needs one, the table admits the next rung's attempt, and its evidence is
   * collected. False when the job stops here (the yes refused or not given, the job cancelled).
   */
  async #climb(climb: Climb, verification: VerificationJson): Promise<boolean> {
    const ctx = this.#ctx;
    const scope = this.#scope;
    const { task, to } = climb;
    scope.phase(`${task.name}: ${climb.why} — escalating to ${to.entry}`);
    const asked = needsYes(to, ctx.spec.approval, ctx.services.approval.default) || undefined;
    if (asked) {
      // spec 05: the job waits for the yes without its workspace (a task's own worktree is gaffer's: kept)
      const ask = () => askToClimb(ctx, task, to, climb.why);
      const answer = this.#away ? await this.#away(ask) : { yes: await ask(), place: this.#place };
      if (answer.yes === false) {
        // returned where it stands; the job settles from what was judged (its workspace may be let go)
        this.#ladders.denied(task);
        return false;
      }
      if (answer.yes === null || answer.place === null) return false;
    }
    // the rung's attempt is superseded by the next rung's (spec 05 "Escalation"), its gates' reading with it
    const live = ctx.attempts
      .history(task.name)
      .filter((e) => e.attempt.state === 'verifying')
      .at(-1);
    const before = this.#workers.findIndex((w) => w.plan.task === task);
    const previous = this.#workers[before] as WorkerEnd;
    const route = routeOfRung(to);
    scope.phase(`${task.name}: escalated to ${to.entry}`);
    this.#rung++;
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
      type: blocks ? ('verify_failed' as const) : ('verify_passed' as const),
      facts: { verification: verificationFacts(verification) },
    };
    const gates = { criteriaMet: this.#criteria?.complete ?? true, contradicted: false, declared: climb.verdict };
    const answers: EffectHandlers = {
      run_verification: () => [verified],
      check_result_gates: () => [{ type: 'escalate', facts: { gates } }],
    };
    const end = live
      ? await supersede(ctx, live.worker, answers, plan, this.#place)
      : await runWorker(ctx, plan, this.#place);
    // the task's work is now the new rung's; the superseded attempts (the rung's fixers too: a fix round
    // resumes the newest work, never an older rung's session) still count in the totals
    this.#workers[before] = end;
    this.#superseded.push(previous, ...this.#fixers.splice(0));
    if (ctx.isCancelled) return false;
    scope.phase('checking what changed on disk');
    await this.#collect([end], `climb-${this.#rung}`);
    return true;
  }
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
