import type { ChangeSet } from '../../evidence/types.js';
import {
  auditBatchWrites,
  declaredOutOfPlanEdits,
  describeViolation,
  listOutside,
  writePolicyFor,
  type WriteAudit,
} from '../../domain/write-policy.js';
import { isTestFilePath } from '../../verification/harness.js';
import { realWorkspace, resolveInWorkspace } from '../../runners/builtin/workspace-paths.js';
import type { JobContext } from '../job-context.js';
import type { WorkerEnd } from './attempt-run.js';
import { workerEndOf } from '../../domain/attempt-results.js';

/**
 * spec 06's mutation audit of one step of the job's work: a worker that had the workspace to
 * itself, or workers that shared it at once (their writes cannot be told apart there: a path is
 * charged only when none of them may write it, and then to each). Each worker's evidence is then
 * taken: its attempt leaves `collecting` with the audit's answer, and its row says it — a
 * violation makes the worker `error` with the paths in its reason (spec 06). `restored`: paths
 * the step put back as the checkpoint had them (a fix round undoing a worker's edit to a test).
 * `broken`: what the place had to put back after the step (`Place.repair`): a violation of each of
 * its workers whatever their policies. Returns the violations in words, `<worker>: <paths>`, for the proof.
 */
export function auditStep(
  ctx: JobContext,
  workspace: string,
  ends: readonly WorkerEnd[],
  written: ChangeSet,
  restored: readonly string[],
  broken: readonly string[] = [],
): string[] {
  const ran = ends.filter((end) => end.started && ctx.attempts.entry(end.plan.name).attempt.state === 'collecting');
  // the step's snapshot is the evidence its attempts owe: a cancelled one's too (spec 01), which then lets go of its share of the place
  for (const end of ends)
    if (!ran.includes(end)) ctx.attempts.driveNow(end.plan.name, [], { collect_evidence: () => [] });
  const onDisk = canonicalPaths(workspace);
  const outputsOf = (task: string) => ctx.spec.tasks.filter((t) => t.name !== task).flatMap((t) => t.outputs);
  const workers = ran.map((end) => {
    const policy = writePolicyFor(end.plan.task, end.plan.role, ctx.spec.tasks);
    return {
      policy: { ...policy, paths: onDisk(policy.paths) },
      declared: onDisk(declaredOutOfPlanEdits(end.report.summary)),
      // siblings' declared outputs never count against a worker (spec 06)
      exempt: onDisk(outputsOf(end.plan.task.name)),
      workerFailed: end.report.status !== 'done',
    };
  });
  const audits = auditBatchWrites(workers, written, { isTestFile: isTestFilePath, restored });
  const observed = describeObserved(written, ran.length);
  const violations: string[] = [];
  ran.forEach((end, i) => {
    const own = audits[i] as WriteAudit;
    // what the place had to put back (a worktree's `.git` link) no policy lets a worker write
    const audit: WriteAudit =
      broken.length === 0 ? own : { verdict: 'violation', outside: [...new Set([...own.outside, ...broken])].sort() };
    const worker = workers[i];
    if (worker === undefined) return;
    const isViolation = audit.verdict === 'violation';
    end.report = {
      ...end.report,
      writeAudit: audit.verdict,
      observed,
      ...(isViolation
        ? {
            status: 'error' as const,
            outcome: 'panic' as const,
            stopReason: 'write_policy_violation',
            error: describeViolation(worker.policy, audit.outside),
          }
        : {}),
    };
    // the evidence's answer: taken, and whether it found a write outside the policy
    const taken = { type: 'evidence_taken' as const, facts: { writeViolation: isViolation } };
    ctx.attempts.driveNow(end.plan.name, [], { collect_evidence: () => [taken] });
    const words = workerEndOf(ctx.attempts.entry(end.plan.name).attempt);
    ctx.services.store.updateAttempt(ctx.id, end.plan.name, {
      status: words.status,
      outcome: words.outcome,
      report: { ...end.report },
    });
    if (!isViolation) return;
    // the worker's `done` event went out when its process ended: the audit's word follows it
    ctx.emit({
      name: end.plan.name,
      event: 'error',
      message: end.report.error ?? 'write policy violation',
      status: words.status,
      outcome: words.outcome ?? 'panic',
    });
    violations.push(`${end.plan.name}: ${listOutside(audit.outside)}`);
  });
  return violations;
}

/** A step's change in a few words: `2 modified, 1 added`, `nothing`, and who shared the step. */
function describeObserved(written: ChangeSet, workers: number): string {
  const parts = (['modified', 'added', 'deleted'] as const)
    .filter((k) => written[k].length > 0)
    .map((k) => `${written[k].length} ${k}`);
  return `${parts.join(', ') || 'nothing'}${workers > 1 ? ` (a step shared by ${workers} workers)` : ''}`;
}

/**
 * The evidence names what changed by its real path: a named path through a link inside the
 * workspace (`inner/x` where `inner` → `src`) counts as its target too. A path that leads out is
 * kept as written only (a link made to lead out is never a way in).
 */
function canonicalPaths(workspace: string): (paths: readonly string[]) => string[] {
  const root = realWorkspace(workspace);
  return (paths) =>
    paths.flatMap((path) => {
      const resolved = resolveInWorkspace(root, path);
      return resolved.ok && resolved.rel !== path ? [path, resolved.rel] : [path];
    });
}
