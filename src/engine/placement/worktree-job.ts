import { rmSync } from 'node:fs';
import path, { join } from 'node:path';
import type { TaskSpec } from '../../domain/request.js';
import type { MergedJson, VerificationJson, WorktreeTaskJson, WorktreesJson } from '../../domain/result.js';
import { combineCriteria, combineVerifications, predictConflicts, unionChanges } from '../../domain/fanout.js';
import {
  applyToWorkingTree,
  commitWorkingTree,
  commitWorktree,
  deleteBranch,
  mergeInto,
  readRepo,
  serialized,
  type BaseCommit,
  type RepoFacts,
} from '../../evidence/worktree-git.js';
import { dropShadowRepo, takeSnapshot } from '../../evidence/index.js';
import type { Snapshot } from '../../domain/snapshot.js';
import type { IndexSeed } from '../../evidence/seed-index.js';
import { detectTestCommand } from '../../verification/detect.js';
import { parseCriterion } from '../../domain/criterion-forms.js';
import { epochS } from '../clock.js';
import type { JobContext } from '../job-context.js';
import {
  allPaths,
  carryOut,
  failedFirstAttempt,
  inRequestOrder,
  resultSoFar,
  verifyChange,
  type Scope,
} from '../pipeline/carry-out.js';
import { taskPhases } from '../../domain/phase-order.js';
import {
  checkoutsAtOnce,
  finishTaskWorktree,
  preparesEachWorktree,
  removeTaskWorktree,
  worktreeRoot,
  WorktreePlacement,
  type TaskWorktree,
} from './worktree.js';
import { Semaphore } from '../semaphore.js';
import { sandboxesOwnRuns } from '../pipeline/own-guard.js';
import type { JobPlacement } from './job-placement.js';
import { settleJob, type SettleInput } from '../settle/settle.js';
import type { Approval } from '../admission/approval.js';
import { applyObjectives, objectivesFileOf } from '../pipeline/objectives.js';
import { followUpApplyFrom, followUpFolder } from '../admission/worktree-follow-up.js';
import {
  readCommittedHints,
  type CommittedHintsReading,
  type WorkspaceHints,
} from '../../verification/workspace-hints.js';

/** One task carried out in its worktree. */
interface TaskRun {
  task: TaskSpec;
  outcome: SettleInput;
  row: WorktreeTaskJson | null;
  passed: boolean;
}

/** The merged tree's branch: `+` is never in a task's name, so it cannot be a task's branch. */
const MERGED = '+merged';

/**
 * A worktree job (spec 06): a base commit of the workspace as the user sees it, then each task
 * carried out in its own worktree on `gaffer/<job>/<task>` — its own checkpoint, attempts, evidence,
 * verification and fix rounds — in parallel where its gates are safe to, else one at a time. A task
 * that passed leaves its branch and loses its worktree; one that failed keeps both. With
 * `merge: "auto"` the passing branches are merged in task order in a worktree of their own, the
 * merged tree is verified once more, and only a verified merge is applied to the workspace.
 */
export const worktreeJob: JobPlacement = { kind: 'worktree', run: (ctx, approval) => runWorktreeJob(ctx, approval) };

async function runWorktreeJob(ctx: JobContext, approval: Approval): Promise<void> {
  const spec = ctx.spec;
  const settings = ctx.services.worktrees;
  const from = spec.follow_up_base;
  ctx.enter(
    'running',
    from
      ? `starting from ${from.branch} (${from.commit.slice(0, 12)}), the followed task's work`
      : 'making the base commit',
    { started: epochS() },
  );
  const repo = await readRepo(spec.workspace);
  if ('refused' in repo) throw new Error(`the workspace ${repo.refused}`);
  // issue 16: a follow-up of a worktree task builds on that task's branch, not on the workspace
  const base = from
    ? { commit: from.commit }
    : await serialized(repo, () => commitWorkingTree(repo, `gaffer: base of job ${ctx.id}`));
  // spec 07: the objectives the tasks name, read as the base holds them (no worker has started), get evidence at the end
  // issue 32: the hints as the user's HEAD holds them (the worktrees' HEAD is the base, which holds the working copy)
  const hints = await userHints(ctx);
  await applyObjectives(ctx, null, objectivesFileOf(hints.hints), []);
  const root = worktreeRoot(ctx.services);
  const folder = followUpFolder(ctx, root);
  const folders = folder !== null && spec.follow_up ? new Map([[spec.follow_up.task, folder]]) : undefined;
  const placement = new WorktreePlacement({
    repo,
    base,
    workspace: spec.workspace,
    root,
    settings,
    logDir: ctx.jobDir,
    ...(folders ? { folders } : {}),
  });
  // spec 06 "Phase order": review and verify tasks run after the implementers, in the merged tree of their work
  const [implementers = [], late = []] = taskPhases(approval.approved);
  const classes = classify(ctx, implementers, late, settings.parallelSafeGates, hints.hints);
  const runs: TaskRun[] = [];
  // written as each worktree is made and each task ends: a restart finds where the work lies
  const sofar: WorktreesJson = {
    base: base.commit,
    merge: spec.merge,
    tasks: [],
    classes,
    merges: [],
    predicted_conflicts: [],
    submodules: 'not initialized',
  };
  const record = (row: WorktreeTaskJson) => {
    sofar.tasks = [...sofar.tasks.filter((t) => t.task !== row.task), row];
    ctx.update({ result: resultSoFar(ctx, { worktrees: { ...sofar } }) });
  };
  // the parallel tasks are one batch: a launch failure of one stops the others (spec 06)
  const batch = new AbortController();
  // every task's worktree starts as the same tree: it is checkpointed once, in the first one made, and each task's pre-snapshot is that
  const shared = sharedPre(ctx, baseShadowOf(repo));
  const alwaysInclude = implementers.flatMap((t) => [...t.files, ...t.outputs]);
  const drops: Promise<void>[] = [];
  // a task's shadow index can start from its checkout's index when its worktree is the repository's top (the index's paths are then the workspace's)
  const seedTree = repo.prefix === '' ? base.tree : undefined;
  const fan: FanOut = {
    repo,
    placement,
    record,
    alwaysInclude,
    drops,
    ...(shared ? { pre: shared } : {}),
    ...(seedTree ? { seedTree } : {}),
  };
  const cap = settings.maxConcurrency ?? ctx.services.executor.cap;
  const fanout = new Semaphore(cap);
  // the next tasks' worktrees are made while the running ones finish: as many ahead as checkouts run at once (up to the cap)
  const ahead = new Semaphore(cap + Math.min(cap, checkoutsAtOnce()));
  const parallel = classes.filter((c) => c.class === 'parallel');
  // the tasks take their turns in the request's order, whichever worktree was made first: each asks
  // for its turn once the one before it has asked (the semaphore then grants them in that order)
  const asked = parallel.map(() => {
    let resolve = (): void => undefined;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  });
  await Promise.all(
    parallel.map(async (c, i) => {
      const task = taskNamed(ctx, c.task);
      const made = await ahead.acquire();
      const ask = asked[i] as { resolve: () => void };
      try {
        // a cancelled job makes no more worktrees
        if (ctx.isCancelled) return;
        const placed = await placeTask(ctx, fan, task);
        await asked[i - 1]?.promise;
        const turn = fanout.acquire();
        ask.resolve();
        const release = await turn;
        try {
          // made ahead, and the job was cancelled before its turn: as if it had not been made
          if (ctx.isCancelled && 'wt' in placed && (await unplace(repo, placed.wt))) return;
          // once this task's work is on its branch, while its worktree is removed: the next task starts, and
          // the next worktree is made (its `worktree add` goes before this removal in the repository's turn)
          const done = () => {
            release();
            made();
          };
          runs.push(await runTask(ctx, { ...fan, batch, done }, task, placed));
        } finally {
          release();
        }
      } finally {
        // one that never asked (cancelled, or its worktree could not be made) lets the next ask
        ask.resolve();
        made();
      }
    }),
  );
  for (const c of classes.filter((x) => x.class === 'sequential' && implementers.some((t) => t.name === x.task))) {
    if (ctx.isCancelled) break;
    const task = taskNamed(ctx, c.task);
    runs.push(await runTask(ctx, fan, task, await placeTask(ctx, fan, task)));
  }
  runs.sort((a, b) => spec.tasks.indexOf(a.task) - spec.tasks.indexOf(b.task));
  // each task's shadow repository, which read the base's objects, is gone; the base's is the repository's, kept for its next job
  await Promise.all(drops);

  const passing = runs.filter((r) => r.passed && r.row?.commit);
  const worktrees: WorktreesJson = {
    ...sofar,
    tasks: runs.flatMap((r) => (r.row ? [r.row] : [])),
    predicted_conflicts: predictConflicts(passing.map((r) => ({ task: r.task.name, files: r.row?.files ?? [] }))),
  };
  if (worktrees.predicted_conflicts.length > 0) {
    ctx.phase(
      `predicted conflicts: ${worktrees.predicted_conflicts.map((c) => `${c.tasks.join(' & ')} both changed ${c.files.slice(0, 3).join(', ')}`).join('; ')}`,
    );
  }
  let merged: Integrated | null = null;
  if (((spec.merge === 'auto' && passing.length > 0) || late.length > 0) && !ctx.isCancelled) {
    ctx.enter(
      'verifying',
      late.length > 0
        ? `merging the passing branches for ${late.map((t) => t.name).join(', ')}`
        : 'merging the passing branches',
    );
    const sandboxed = sandboxesOwnRuns(ctx);
    const applyFrom = spec.merge === 'auto' ? await followUpApplyFrom(ctx.services.store, spec) : null;
    if (applyFrom) ctx.phase(`merge: ${applyFrom.why}`);
    const site: MergeSite = {
      repo,
      base,
      root,
      sandboxed,
      job: ctx.id,
      name: MERGED,
      ...(applyFrom ? { applyFrom: applyFrom.commit } : {}),
    };
    merged = await integrate(
      ctx,
      (message) => ctx.phase(message),
      site,
      passing.map((r) => r.row as WorktreeTaskJson),
      { late, apply: spec.merge === 'auto' },
    );
    worktrees.merges.push(merged.json);
  }
  const reviewed = merged?.late ?? null;

  const outcomes = [...runs.map((r) => r.outcome), ...(reviewed ? [reviewed] : [])];
  // the tasks an applied merge took are judged by the merged tree's verification (the workspace's final state); each of the others by its own
  const inWorkspace = new Set(merged?.json.applied ? merged.json.tasks : []);
  const verification = combineVerifications([
    ...runs.filter((r) => !inWorkspace.has(r.task.name)).map((r) => ({ name: r.task.name, v: r.outcome.verification })),
    ...(merged ? [{ name: 'merged', v: merged.verification }] : []),
  ]);
  const noneStarted = outcomes.every((o) => o.error !== undefined);
  settleJob(ctx, {
    workers: inRequestOrder(ctx, [...outcomes.flatMap((o) => o.workers), ...approval.refused]),
    fixers: outcomes.flatMap((o) => o.fixers),
    changes: unionChanges(outcomes.map((o) => o.changes)),
    changeSet: outcomes.some((o) => o.changeSet)
      ? {
          added: union(outcomes.map((o) => o.changeSet?.added)),
          modified: union(outcomes.map((o) => o.changeSet?.modified)),
          deleted: union(outcomes.map((o) => o.changeSet?.deleted)),
        }
      : null,
    verification,
    cancelled: ctx.isCancelled,
    fixRounds: outcomes.reduce((n, o) => n + o.fixRounds, 0),
    criteria: combineCriteria(outcomes.map((o) => o.criteria)),
    writeViolations: outcomes.flatMap((o) => o.writeViolations ?? []),
    gates: outcomes.flatMap((o) => o.gates ?? []),
    escalation: outcomes.flatMap((o) => o.escalation ?? []),
    ...(noneStarted
      ? {
          error: outcomes
            .map((o) => o.error)
            .filter(Boolean)
            .join('; '),
        }
      : {}),
    perTask: new Map([
      ...runs.map(
        (r) =>
          [
            r.task.name,
            { verification: r.outcome.verification, criteriaMet: r.outcome.criteria?.complete ?? true },
          ] as const,
      ),
      // the reviewers are judged with the merged tree they ran in
      ...late.map(
        (t) =>
          [
            t.name,
            { verification: merged?.verification ?? null, criteriaMet: reviewed?.criteria?.complete ?? true },
          ] as const,
      ),
    ]),
    changedNothing: runs
      .filter((r) => r.outcome.changes !== null && r.outcome.changes.count === 0)
      .map((r) => r.task.name),
    worktrees,
    mergeProblems: mergeProblemsOf(worktrees, merged?.verification ?? null, spec.merge),
  });
}

/** What every task of a worktree job shares: the repository, its placement (the base, the worktrees' folder), the record of its rows, its parallel batch. */
interface FanOut {
  repo: RepoFacts;
  placement: WorktreePlacement;
  record(row: WorktreeTaskJson): void;
  batch?: AbortController;
  /** What every task's snapshots include (their pre-snapshot may be one). */
  alwaysInclude: string[];
  pre?: SharedPre;
  /** The tree of the base the worktrees check out, when their indexes can seed their shadow indexes. */
  seedTree?: string;
  /** The tasks' shadow repositories being removed (off the lane: the next task need not wait for it). */
  drops: Promise<void>[];
  /** Told when the task's work is on its branch (its slot goes to the next task while its worktree is removed). */
  done?: () => void;
}

/** A task's worktree as made, or why it could not be. */
type Placed = { wt: TaskWorktree } | { why: string };

/** Makes a task's worktree (placement/worktree.ts): a parallel task's may be made before its turn. */
async function placeTask(ctx: JobContext, fan: FanOut, task: TaskSpec): Promise<Placed> {
  try {
    const wt = await fan.placement.acquire({
      jobId: ctx.id,
      workspace: ctx.spec.workspace,
      task: task.name,
      signal: ctx.abort.signal,
      onWait: (message) => ctx.phase(message),
    });
    if (wt === null) throw new Error('the job was cancelled first');
    return { wt };
  } catch (err) {
    return { why: `its worktree could not be made: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** Removes a worktree made ahead for a task that never started, and its branch (at the base: nothing of anyone's); false when git refused either. */
async function unplace(repo: RepoFacts, wt: TaskWorktree): Promise<boolean> {
  if (wt.baseIndex !== null) rmSync(wt.baseIndex, { force: true });
  if ((await removeTaskWorktree(repo, wt)) !== null) return false;
  return (await serialized(repo, () => deleteBranch(repo, wt.branch, true))) === null;
}

/** A task in its worktree (as placed): carried out, committed, and removed when it passed. */
async function runTask(ctx: JobContext, fan: FanOut, task: TaskSpec, placed: Placed): Promise<TaskRun> {
  const { repo, record } = fan;
  if ('why' in placed) {
    const why = placed.why;
    const end = await failedFirstAttempt(ctx, task, why);
    return {
      task,
      outcome: {
        workers: [end],
        fixers: [],
        changes: null,
        changeSet: null,
        verification: null,
        cancelled: ctx.isCancelled,
        fixRounds: 0,
        error: why,
      },
      row: null,
      passed: false,
    };
  }
  const { wt } = placed;
  const setup = { deps: wt.notes.deps, included: wt.notes.included, command: wt.notes.setup };
  record({
    task: task.name,
    branch: wt.branch,
    commit: null,
    state: 'kept',
    path: wt.dir,
    why: 'the task is running',
    files: [],
    port: wt.port,
    setup,
    verification: null,
  });
  const { pre } = fan;
  const seed =
    fan.seedTree !== undefined && wt.baseIndex !== null ? { file: wt.baseIndex, tree: fan.seedTree } : undefined;
  const outcome = await carryOut(ctx, wt, {
    ...taskScope(ctx, task),
    alwaysInclude: fan.alwaysInclude,
    ...(fan.batch ? { batch: fan.batch } : {}),
    ...(pre
      ? {
          pre: (workspace: string, alwaysInclude: string[], label: string) =>
            pre(workspace, alwaysInclude, label, seed),
        }
      : {}),
  });
  const files = outcome.changeSet ? allPaths(outcome.changeSet) : [];
  const passed =
    outcome.error === undefined &&
    !outcome.cancelled &&
    outcome.workers.every((w) => w.report.status === 'done') &&
    !(outcome.verification?.blocking ?? false) &&
    (outcome.writeViolations?.length ?? 0) === 0 &&
    (outcome.criteria?.complete ?? true) &&
    // its own gates on its final work (spec 05)
    (outcome.gates?.filter((g) => g.task === task.name).at(-1)?.verdict ?? 'pass') === 'pass';
  const end = await finishTaskWorktree(repo, wt, files, passed, ctx.id, fan.done);
  // its snapshots served this task alone: its work is on its branch (and in its kept worktree)
  const dir = wt.workspace;
  fan.drops.push(
    dropShadowRepo(ctx.services.dataDir, dir).catch((err) =>
      ctx.phase(
        `${task.name}: its shadow repository was not removed: ${err instanceof Error ? err.message : String(err)}`,
      ),
    ),
  );
  const state = end.removed ? 'removed' : passed ? 'remove_refused' : 'kept';
  ctx.phase(
    `${task.name}: ${state === 'removed' ? `passed; worktree removed, branch ${wt.branch} kept` : `worktree kept at ${wt.dir}${end.why ? ` (${end.why})` : ''}`}`,
  );
  const v = outcome.verification;
  const row: WorktreeTaskJson = {
    task: task.name,
    branch: wt.branch,
    commit: end.commit,
    state,
    path: end.removed ? null : wt.dir,
    ...(end.why ? { why: end.why } : {}),
    files,
    port: wt.port,
    setup,
    verification: v ? { ok: v.ok, summary: v.summary, blocking: v.blocking } : null,
  };
  record(row);
  return { task, outcome, passed, row };
}

/** Where a merge is made: the repository, the base the branches grew from, the worktrees' folder. */
export interface MergeSite {
  repo: RepoFacts;
  base: BaseCommit;
  root: string;
  /** Verify under the sandbox (this process's policy: sandboxesOwnRuns). */
  sandboxed: boolean;
  /** The job whose branches are merged: the merged branch is its (`gaffer/<job>/<name>`), whichever job makes it. */
  job: string;
  /** The merge's branch and folder name below the job's (`+merged`, or `+merged-2` for a later one). */
  name: string;
  /** Where the change applied to the workspace starts, when not at `base` (a worktree follow-up, followUpApplyFrom). */
  applyFrom?: string;
}

/** A merged tree: its record, its verification, and — when review/verify tasks ran in it — their outcome. */
export interface Integrated {
  json: MergedJson;
  verification: VerificationJson | null;
  late: SettleInput | null;
}

/**
 * The branches merged in task order in a worktree of their own (a conflicting one is skipped, its
 * files named on its row). Then the job's review and verify tasks (`late`) are carried out there,
 * against the implementers' merged work (spec 06 "Phase order"), and the merged tree is verified as
 * a whole with them; what they wrote within their policies (their outputs) goes on the merged
 * branch. With `apply`, and only when that verification passed and no reviewer broke its policy,
 * the change is applied to the workspace under the workspace's lock. `say` tells each step.
 */
export async function integrate(
  ctx: JobContext,
  say: (message: string) => void,
  site: MergeSite,
  rows: WorktreeTaskJson[],
  opts: { late: TaskSpec[]; apply: boolean },
): Promise<Integrated> {
  const { repo, base } = site;
  // set up as a task's worktree is (includes, dependencies, port, setup): its verification needs what theirs did
  const placement = new WorktreePlacement({
    repo,
    base,
    workspace: ctx.spec.workspace,
    root: site.root,
    settings: ctx.services.worktrees,
    logDir: ctx.jobDir,
  });
  const wt = await placement.acquire({
    jobId: site.job,
    workspace: ctx.spec.workspace,
    task: site.name,
    signal: new AbortController().signal,
    onWait: say,
  });
  if (wt === null) throw new Error('the merged tree has no worktree');
  const { branch, dir } = wt;
  // its commits start from the merges' tip, not from the base its checkout kept
  if (wt.baseIndex !== null) rmSync(wt.baseIndex, { force: true });
  const mergedTasks: string[] = [];
  let tip: string | null = null;
  const mergeAll = async () => {
    for (const row of rows) {
      const result = await serialized(repo, () =>
        mergeInto(dir, row.branch, `gaffer: merge ${row.task} (job ${ctx.id})`),
      );
      if ('merged' in result) {
        tip = result.merged;
        row.merge = 'merged';
        delete row.conflict_files;
        mergedTasks.push(row.task);
      } else {
        row.merge = 'conflict';
        row.conflict_files = result.conflicts;
        say(
          `${row.task}: conflicts with the branches merged before it in ${result.conflicts.slice(0, 5).join(', ') || result.reason}; its branch is kept`,
        );
      }
    }
  };
  let verification: VerificationJson | null;
  let late: SettleInput | null = null;
  if (opts.late.length === 0)
    verification = await verifyChange(ctx, wt.workspace, mergedScope(ctx, say), site.sandboxed, mergeAll);
  else {
    await mergeAll();
    late = await carryOut(ctx, wt, lateScope(ctx, opts.late, say));
    verification = late.verification;
    const wrote = late.changeSet ? allPaths(late.changeSet) : [];
    if (wrote.length > 0 && (late.writeViolations?.length ?? 0) === 0) {
      const paths = wrote.map((p) => (repo.prefix ? join(repo.prefix, p) : p));
      tip =
        (await commitWorktree(
          wt.git,
          branch,
          { commit: tip ?? base.commit, index: null },
          `gaffer: ${opts.late.map((t) => t.name).join(', ')} (job ${ctx.id})`,
          paths,
        )) ?? tip;
    }
  }
  await dropShadowRepo(ctx.services.dataDir, wt.workspace);
  const json: MergedJson = {
    branch,
    commit: tip,
    tasks: mergedTasks,
    applied: false,
    verification: verification
      ? { ok: verification.ok, summary: verification.summary, blocking: verification.blocking }
      : null,
    path: dir,
  };
  // a branch is `merged` only once its change is in the workspace
  const notApplied = (why: string): Integrated => {
    for (const row of rows) if (row.merge === 'merged') row.merge = 'not_merged';
    return { json: { ...json, why }, verification, late };
  };
  const verified =
    verification !== null &&
    !(
      verification.blocking ||
      verification.could_not_start ||
      (verification.ran && verification.ok === null && verification.inconclusive)
    );
  if (!opts.apply) {
    // merge "none": the merged tree was made for the reviewers; its branch stays for review, its worktree when it failed
    const removed = verified && (await removeTaskWorktree(repo, wt)) === null;
    return notApplied(
      `merge "none": made for ${opts.late.map((t) => t.name).join(', ')}; nothing applied, branch ${branch} kept${removed ? '' : `, worktree kept at ${dir}`}`,
    );
  }
  // a cancel stopped the verification: whatever it answered proves nothing, and the workspace is left alone
  if (ctx.isCancelled) return notApplied(`cancelled: nothing applied, the merge is kept at ${dir}`);
  if (tip === null) return notApplied('no branch merged cleanly');
  if (wt.failure !== undefined)
    return notApplied(`the merged tree could not be set up for its verification (${wt.failure}): nothing applied`);
  if ((late?.writeViolations?.length ?? 0) > 0)
    return notApplied(
      `${opts.late.map((t) => t.name).join(', ')} wrote outside its write policy in the merged tree: nothing applied`,
    );
  // applied only when its verification passed; with verify none, only when nothing blocks
  if (!verified) {
    say(
      `the merged tree fails its verification (${verification?.summary ?? 'not verified'}); nothing was applied to the workspace, the merge is kept at ${dir}`,
    );
    return notApplied('the merged tree fails its verification: nothing applied');
  }
  say('applying the verified merge to the workspace');
  const place = await ctx.services.placement.acquire({
    jobId: ctx.id,
    workspace: ctx.spec.workspace,
    signal: ctx.abort.signal,
    onWait: say,
  });
  if (!place) return notApplied('cancelled before the merge was applied');
  try {
    const mergedTip: string = tip;
    const refused = await serialized(repo, () => applyToWorkingTree(repo, site.applyFrom ?? base.commit, mergedTip));
    if (refused !== null)
      return notApplied(`the workspace changed since the base commit and the merge does not apply to it: ${refused}`);
  } finally {
    place.release();
  }
  const removed = (await removeTaskWorktree(repo, wt)) === null;
  return { json: { ...json, applied: true, path: removed ? null : dir }, verification, late };
}

/**
 * spec 06 "Isolation is earned": a task runs beside others only when the job is parallel and each
 * of its gates (its verification command, its command criteria) is on `parallel_safe_gates`.
 */
function classify(
  ctx: JobContext,
  implementers: readonly TaskSpec[],
  late: readonly TaskSpec[],
  safe: readonly string[],
  hints: WorkspaceHints,
): WorktreesJson['classes'] {
  const spec = ctx.spec;
  const verifyCommand =
    spec.verify.mode === 'command'
      ? spec.verify.command
      : spec.verify.mode === 'auto'
        ? (detectTestCommand(spec.workspace, hints)?.command ?? null)
        : null;
  const own = implementers.map((task): WorktreesJson['classes'][number] => {
    if (!spec.parallel) return { task: task.name, class: 'sequential', why: 'the job is not parallel' };
    const commands = task.criteria.flatMap((c) => {
      const form = parseCriterion(c);
      return form?.kind === 'command' ? [form.command] : [];
    });
    // its own command gates (spec 05) run in its worktree too
    const ownGates = (task.gates ?? []).flatMap((g) => (g.kind === 'command' ? [g.command] : []));
    const gates = [...(verifyCommand ? [verifyCommand] : []), ...commands, ...ownGates];
    if (gates.length === 0)
      return { task: task.name, class: 'sequential', why: 'it has no gates to judge it safe to run beside others' };
    const unsafe = gates.filter((g) => !safe.includes(g));
    if (unsafe.length > 0)
      return {
        task: task.name,
        class: 'sequential',
        why: `gate ${unsafe.map((g) => `\`${g}\``).join(', ')} is not on fanout.parallel_safe_gates (it might touch shared state)`,
      };
    return { task: task.name, class: 'parallel', why: 'every gate is on fanout.parallel_safe_gates' };
  });
  const after = late.map((task): WorktreesJson['classes'][number] => ({
    task: task.name,
    class: 'sequential',
    why: `a ${task.type} task: runs after the implementers, against their merged work in ${MERGED}`,
  }));
  return [...own, ...after];
}

/** A task's progress as the job's phases, named; its snapshots, logs and fix attempts named after it. */
const hintsRead = new WeakMap<JobContext, Promise<CommittedHintsReading>>();

/** The job's hints as the user's HEAD holds them, read once (issue 32): every scope of the job goes by them. */
function userHints(ctx: JobContext): Promise<CommittedHintsReading> {
  let read = hintsRead.get(ctx);
  if (read === undefined) hintsRead.set(ctx, (read = readCommittedHints(ctx.spec.workspace)));
  return read;
}

function taskScope(ctx: JobContext, task: TaskSpec): Scope {
  const index = ctx.spec.tasks.indexOf(task);
  return {
    hints: userHints(ctx),
    tasks: [task],
    tag: `${task.name}.`,
    fixer: (round) => ({
      name: `${task.name}+fix-${round}`,
      ord: ctx.spec.tasks.length + index * ctx.spec.fix_rounds + round - 1,
    }),
    enter: (_status, phase) => ctx.phase(`${task.name}: ${phase}`),
    phase: (message) => ctx.phase(`${task.name}: ${message}`),
    progress: () => undefined,
  };
}

/**
 * What names the shadow repository the bases of a repository's worktree jobs are checkpointed in:
 * one per repository, kept from job to job (pruned with the snapshots of the jobs it holds, as any
 * shadow repository), so a job's base checkpoint hashes its first worktree's files as always but
 * writes only the objects an earlier base did not have — not a copy of the whole tree per job,
 * created and deleted again. A key, never a folder.
 */
function baseShadowOf(repo: RepoFacts): string {
  return path.join(repo.commonDir, 'gaffer-worktree-base');
}

/** A task's pre-snapshot taken from the shared base; `seed`: its checked-out index, to start its shadow index from. */
type SharedPre = (workspace: string, alwaysInclude: string[], label: string, seed?: IndexSeed) => Promise<Snapshot>;

/**
 * The tasks' shared pre-snapshot: the first worktree made is checkpointed (into the repository's
 * base shadow repository, keyed by `basePath`) before its worker, and each task's pre-snapshot is that
 * checkpoint read through its own shadow repository, with its own record of the places outside
 * the evidence; its shadow index starts from its own checkout's index when the checkpoint holds
 * that index's tree (seed-index.ts), so its snapshot after its worker hashes only what changed.
 * Undefined when a setup or install command runs in each worktree (they may then differ); a base
 * the checkpoint could not hold by content (the mtime fallback, files by stat) is not shared either.
 */
function sharedPre(ctx: JobContext, basePath: string): SharedPre | undefined {
  if (preparesEachWorktree(ctx.services.worktrees, ctx.spec.workspace)) return undefined;
  let base: Promise<Snapshot> | null = null;
  return async (workspace, alwaysInclude, label, seed) => {
    const common = { workspace, dataDir: ctx.services.dataDir, jobId: ctx.id, alwaysInclude };
    // the first worktree's checkout seeds the base's shadow index when the last job's base was a checkout of the same tree
    base ??= takeSnapshot({ ...common, label: 'base', shadowOf: basePath, ...(seed ? { seedIndex: seed } : {}) });
    const taken = await base;
    const reusable = taken.source === 'checkpoint' && !taken.largeFilesByStat;
    return takeSnapshot({
      ...common,
      label,
      ...(reusable ? { reuse: taken, ...(seed ? { seedIndex: seed } : {}) } : {}),
    });
  };
}

/** The review and verify tasks in the merged tree: named after them, judged with the whole suite, no fix round. */
function lateScope(ctx: JobContext, tasks: TaskSpec[], say: (message: string) => void): Scope {
  return {
    tasks,
    tag: 'merged.',
    fixer: () => {
      throw new Error('the merged tree has no fix rounds');
    },
    enter: (_status, phase) => say(`merged: ${phase}`),
    phase: (message) => say(`merged: ${message}`),
    progress: () => undefined,
    hints: userHints(ctx),
    integrated: true,
  };
}

function mergedScope(ctx: JobContext, say: (message: string) => void): Scope {
  return {
    hints: userHints(ctx),
    tasks: [],
    tag: 'merged-',
    fixer: () => {
      throw new Error('the merged tree has no fix rounds');
    },
    enter: (_status, phase) => say(`merged: ${phase}`),
    phase: (message) => say(`merged: ${message}`),
    progress: () => undefined,
  };
}

function taskNamed(ctx: JobContext, name: string): TaskSpec {
  const task = ctx.spec.tasks.find((t) => t.name === name);
  if (!task) throw new Error(`no task ${name}`);
  return task;
}

const union = (lists: (string[] | undefined)[]): string[] => [...new Set(lists.flatMap((l) => l ?? []))].sort();

/** The doubts a merge leaves (spec 06): each conflicting branch, and a merge that was not applied (its merged tree failed its verification, or did not apply). */
function mergeProblemsOf(
  w: WorktreesJson,
  verification: VerificationJson | null,
  merge: 'none' | 'auto',
): NonNullable<SettleInput['mergeProblems']> {
  const problems: NonNullable<SettleInput['mergeProblems']> = w.tasks
    .filter((t) => t.merge === 'conflict')
    .map((t) => ({
      code: 'merge_conflict',
      detail: `${t.task} conflicts with the branches merged before it in ${(t.conflict_files ?? []).slice(0, 5).join(', ')}; not merged, branch ${t.branch} kept`,
    }));
  const last = w.merges.at(-1);
  // merge "none" applies nothing by design: its merged tree (made for the reviewers) leaves no doubt of its own
  if (!last || last.applied || last.commit === null || merge === 'none') return problems;
  const failed =
    verification !== null &&
    (verification.blocking ||
      verification.could_not_start === true ||
      last.why?.startsWith('the merged tree') === true);
  problems.push(
    failed
      ? {
          code: 'merged_tree_fails',
          detail: `the merged tree of ${last.tasks.join(', ')} fails its verification (each passed alone): ${verification?.summary ?? last.why ?? ''}; nothing applied`,
        }
      : {
          code: 'merge_not_applied',
          detail: `the merge of ${last.tasks.join(', ')} was not applied to the workspace: ${last.why ?? 'unknown'}`,
        },
  );
  return problems;
}
