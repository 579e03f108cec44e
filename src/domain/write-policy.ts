// spec 06 "Write policies and the mutation audit": what a worker may write, derived before it
// starts, and how what it really wrote is judged after it ends. One table for every runner: the
// builtin agent refuses a write outside it as it happens; for runners gaffer cannot stop
// mid-write (agent CLIs, shell) this audit judges their writes after the fact.
import { isQuotedPath } from './escaped-path.js';
import type { TaskType, WorkerRole } from './status.js';

/** Task types whose workers only read the project (spec 06's reviewer / verifier row). */
export const READ_ONLY_TASK_TYPES: ReadonlySet<TaskType> = new Set(['review', 'verify', 'judge', 'triage', 'research']);

/** The write-policy row a worker falls under (spec 06). */
export type PolicyRole = 'implementer' | 'fixer' | 'reviewer';

/** The parts of a task the policy is derived from. */
export interface PolicyTask {
  name: string;
  type: TaskType;
  files: readonly string[];
  outputs: readonly string[];
  tests_may_change: boolean;
}

/** What one worker may write. */
export interface WritePolicy {
  role: PolicyRole;
  /** Anything in the workspace: an implementer given no `files`, or a fixer of such a job. */
  anywhere: boolean;
  /** Files and folders it may write (a folder: anything below it). */
  paths: string[];
  /** It may change or delete existing test files (else only its named paths among them). */
  testsMayChange: boolean;
}

/** How a worker's writes were judged (the worker row's `write_audit`). */
export type WriteAuditVerdict = 'ok' | 'violation' | 'failed-no-mutation';

/** The audit's answer: the verdict and, for a violation, every path written outside the policy. */
export interface WriteAudit {
  verdict: WriteAuditVerdict;
  /** Sorted; empty unless `violation`. */
  outside: string[];
}

/** What a worker (or a batch of workers that shared the workspace at once) changed on disk. */
export interface WrittenPaths {
  added: readonly string[];
  modified: readonly string[];
  deleted: readonly string[];
}

/** The row of the table a worker falls under: fix rounds are fixers; read-only task types are reviewers. */
export function policyRoleOf(task: Pick<PolicyTask, 'type'>, role: WorkerRole): PolicyRole {
  if (role === 'fixer') return 'fixer';
  if (role === 'reviewer' || READ_ONLY_TASK_TYPES.has(task.type)) return 'reviewer';
  return 'implementer';
}

/**
 * The policy of one worker (spec 06 table): an implementer its task's `files` (anything when none
 * are named) and `outputs`; a reviewer only its `outputs`; a fixer what the job's implementers
 * may write, and test files when the task it fixes may change tests.
 */
export function writePolicyFor(task: PolicyTask, role: WorkerRole, jobTasks: readonly PolicyTask[]): WritePolicy {
  const policyRole = policyRoleOf(task, role);
  if (policyRole === 'reviewer')
    return { role: policyRole, anywhere: false, paths: [...task.outputs], testsMayChange: false };
  if (policyRole === 'implementer') {
    return {
      role: policyRole,
      anywhere: task.files.length === 0,
      paths: [...task.files, ...task.outputs],
      testsMayChange: task.tests_may_change,
    };
  }
  const implementers = jobTasks.filter((t) => policyRoleOf(t, 'worker') === 'implementer');
  return {
    role: policyRole,
    anywhere: implementers.some((t) => t.files.length === 0),
    paths: [...new Set(implementers.flatMap((t) => [...t.files, ...t.outputs]))],
    testsMayChange: task.tests_may_change || implementers.some((t) => t.tests_may_change),
  };
}

/**
 * Judges what a worker wrote against its policy. A path is inside it when the policy names it (or
 * a folder above it) or it is `exempt` (gaffer's own files, siblings' declared outputs); else, an
 * existing test file changed or deleted is outside unless the policy lets tests change; else the
 * path is inside for a policy of the whole workspace, or an implementer that declared it as an
 * out-of-plan edit. Nothing outside: `failed-no-mutation` for a worker that failed and wrote
 * nothing, else `ok`.
 */
export function auditWrites(
  policy: WritePolicy,
  written: WrittenPaths,
  opts: {
    declared?: readonly string[];
    exempt?: readonly string[];
    isTestFile: (path: string) => boolean;
    /** Paths written back to what the checkpoint had: putting a test back as it was is never a violation. */
    restored?: readonly string[];
    workerFailed: boolean;
  },
): WriteAudit {
  const declared = policy.role === 'implementer' ? (opts.declared ?? []) : [];
  const exempt = opts.exempt ?? [];
  const outside = new Set<string>();
  for (const change of ['added', 'modified', 'deleted'] as const) {
    for (const path of written[change]) {
      // a name that is not UTF-8 (listed quoted) is no name a policy can give: outside unless anything goes
      if (isQuotedPath(path)) {
        if (!policy.anywhere) outside.add(path);
        continue;
      }
      if (underAny(path, exempt) || underAny(path, policy.paths)) continue;
      // spec 06: tests are protected by the same table — a declaration does not open them
      const isProtectedTest =
        change !== 'added' && !policy.testsMayChange && opts.isTestFile(path) && !(opts.restored ?? []).includes(path);
      if (isProtectedTest || !(policy.anywhere || underAny(path, declared))) outside.add(path);
    }
  }
  if (outside.size > 0) return { verdict: 'violation', outside: [...outside].sort() };
  const wroteNothing = written.added.length + written.modified.length + written.deleted.length === 0;
  return { verdict: opts.workerFailed && wroteNothing ? 'failed-no-mutation' : 'ok', outside: [] };
}

/** One worker of an audited step: its policy and what it declared. */
export interface AuditedWorker {
  policy: WritePolicy;
  /** Paths it declared under "Out-of-plan edits" (they count for an implementer only). */
  declared?: readonly string[];
  /** Paths that never count against it (siblings' declared outputs). */
  exempt?: readonly string[];
  workerFailed: boolean;
}

/**
 * Audits one step of a job's work: a worker alone in its workspace, or workers that shared it at
 * once, whose writes cannot be told apart — a path is charged only when none of them may write
 * it, and then to every one of them. One answer per worker, in order.
 */
export function auditBatchWrites(
  workers: readonly AuditedWorker[],
  written: WrittenPaths,
  opts: { isTestFile: (path: string) => boolean; restored?: readonly string[] },
): WriteAudit[] {
  const audits = workers.map((w) =>
    auditWrites(w.policy, written, {
      ...opts,
      declared: w.declared ?? [],
      exempt: w.exempt ?? [],
      workerFailed: w.workerFailed,
    }),
  );
  if (audits.length < 2) return audits;
  const common = audits.reduce<string[]>(
    (shared, a, i) => (i === 0 ? a.outside : shared.filter((p) => a.outside.includes(p))),
    [],
  );
  return audits.map((a) =>
    a.verdict !== 'violation'
      ? a
      : common.length > 0
        ? { verdict: 'violation', outside: common }
        : { verdict: 'ok', outside: [] },
  );
}

/** The reason on a violating worker's row: its role and the paths, at most 5 then `+N more` (spec 06). */
export function describeViolation(policy: WritePolicy, outside: readonly string[]): string {
  return `wrote outside its write policy (${describePolicy(policy)}): ${listOutside(outside)}`;
}

/** Paths written outside a policy as spec 06 shows them: at most 5, then `+N more`. */
export function listOutside(outside: readonly string[]): string {
  const more = outside.length > 5 ? ` +${outside.length - 5} more` : '';
  return `${outside.slice(0, 5).join(', ')}${more}`;
}

/** The policy in a few words, for the reason. */
export function describePolicy(policy: WritePolicy): string {
  if (policy.role === 'reviewer')
    return policy.paths.length > 0
      ? `a reviewer may write only its outputs`
      : `a reviewer may write nothing in the project`;
  const scope = policy.anywhere
    ? 'anything in the workspace'
    : `only ${policy.paths.length === 1 ? 'its named file' : 'its named files'}`;
  return `${policy.role === 'fixer' ? 'a fixer' : 'an implementer'} may write ${scope}${policy.testsMayChange ? '' : ', no existing test'}`;
}

/**
 * The paths a worker declared in its report under an "Out-of-plan edits" heading (spec 06): the
 * list items after it, up to a blank line or the next heading.
 */
export function declaredOutOfPlanEdits(summary: string): string[] {
  const lines = summary.split('\n');
  const start = lines.findIndex((l) => /^\s*(#+\s*|\*\*)?out-of-plan edits\b/i.test(l));
  if (start < 0) return [];
  const paths: string[] = [];
  for (const line of lines.slice(start + 1)) {
    const item = /^\s*[-*]\s+`?([^`\s]+)`?/.exec(line);
    if (item?.[1]) paths.push(item[1].replace(/^\.\//, ''));
    else if (line.trim() !== '' || paths.length > 0) break;
  }
  return paths;
}

function underAny(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => {
    const r = root.replace(/\/+$/, '');
    return path === r || path.startsWith(`${r}/`);
  });
}
