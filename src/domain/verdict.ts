import type { ProofJson, VerificationJson } from './result.js';
import type { JobStatus, WorkerStatus } from './status.js';
import { describeProof } from './proof.js';
import { describeSlowChecking } from './checking.js';

export const VERDICT_MAX = 400;

/** Facts the verdict line says, in spec 01's order. */
export interface VerdictFacts {
  status: JobStatus;
  error: string | null;
  /** Task workers only (fixers have their own part). */
  workerStatuses: WorkerStatus[];
  filesChanged: number | null;
  verification: VerificationJson | null;
  fixRoundsRun: number;
  converged: boolean;
  proof: ProofJson | null;
  claimedOnly: string[];
  criteriaUnmet: string[];
  /** `worker state` pairs of detected states, e.g. `api-fix rate_limited`. */
  reportedStates: string[];
  /** Keys of external agents that ran without the sandbox (spec 04). */
  unsandboxedExternal?: string[];
  /** `worker → tool ×N` for workers refused tools (spec 01 part 10). */
  refusals?: string[];
  /** Task workers that changed nothing though their task was to change something. */
  nothingChanged?: string[];
  /** Issue 32: git config or attributes the workers set that run a program: the verdict's first words after the job's own end. */
  gitCode?: string | null;
  /** Dependencies changed with no manifest or lockfile change, in words (issue 32): why the job is not done, said first. */
  dependenciesChangedAlone?: string | null;
  /** Writes outside the evidence worth a line (git hooks and config, editor tasks), when any. */
  outsideEvidence?: string | null;
  /** A worktree job's branches and merge, in words (spec 06). */
  worktrees?: string | null;
  /** Workers a limit ended, each in words (`worker-1 ended by the process-count limit (1024)`). */
  limitsHit?: string[];
  /** Climbs up a task's cost ladder and tasks returned to their spawner, in words (spec 05). */
  escalation?: string[];
  /** spec 07: the tasks a sequential job ran by objective impact, in the order they ran (empty: not reordered). */
  impactOrder?: string[];
}

/** The one-line verdict of spec 01: parts joined by ` · `, at most 400 characters. */
export function buildVerdict(f: VerdictFacts): string {
  const parts: string[] = [];
  if (f.status === 'cancelled') parts.push('cancelled');
  else if (f.status === 'error') parts.push(`error: ${f.error ?? 'nothing ran'}`);
  else if (f.status === 'interrupted') parts.push(f.error ?? 'interrupted');
  if (f.gitCode) parts.push(f.gitCode);
  // a command that could not start is an error named first, never a quiet "inconclusive" (issue 10)
  if (f.verification?.could_not_start) parts.push(`verification could not start: ${f.verification.summary}`);
  if (f.dependenciesChangedAlone) parts.push(f.dependenciesChangedAlone);
  const unfinished = describeUnfinished(f.verification);
  if (unfinished !== null) parts.push(unfinished);
  // whenever the job is not proved, the proof's words lead (after the job's own end, when it was cut
  // short): a reader of the first words is never told "done" about work nothing proved
  const proofWords = f.proof ? describeProof(f.proof, f.verification, f.claimedOnly) : null;
  if (proofWords !== null && f.proof?.verdict !== 'proved') parts.push(proofWords);
  // issue 32: a hints file a worker could have written, or a manifest gaffer refused to read, is named early
  if ((f.verification?.ignored_files?.length ?? 0) > 0)
    parts.push(`not gone by: ${f.verification?.ignored_files?.join('; ') ?? ''}`);

  if (f.workerStatuses.length > 0) {
    const done = f.workerStatuses.filter((s) => s === 'done').length;
    const others = countBy(f.workerStatuses.filter((s) => s !== 'done'));
    parts.push(`${done}/${f.workerStatuses.length} workers done${others ? ` (${others})` : ''}`);
  }
  if ((f.limitsHit?.length ?? 0) > 0) parts.push(f.limitsHit?.join(', ') ?? '');
  if (f.filesChanged !== null) parts.push(`${f.filesChanged} file${f.filesChanged === 1 ? '' : 's'} changed on disk`);
  if ((f.nothingChanged?.length ?? 0) > 0) parts.push(`nothing changed by ${f.nothingChanged?.join(', ') ?? ''}`);
  if (f.outsideEvidence) parts.push(f.outsideEvidence);
  if (f.worktrees) parts.push(f.worktrees);
  if ((f.escalation?.length ?? 0) > 0) parts.push((f.escalation ?? []).join('; '));
  const verification = f.verification?.could_not_start ? null : describeVerification(f.verification);
  if (verification) parts.push(verification);
  if (f.fixRoundsRun > 0) {
    parts.push(
      f.converged
        ? `fix rounds converged after ${f.fixRoundsRun}`
        : `${f.fixRoundsRun} fix round${f.fixRoundsRun === 1 ? '' : 's'} ran`,
    );
  }
  if (proofWords !== null && f.proof?.verdict === 'proved') parts.push(proofWords);
  if (f.criteriaUnmet.length > 0) parts.push(`job criteria unmet: ${f.criteriaUnmet.join('; ')}`);
  if ((f.impactOrder?.length ?? 0) > 0)
    parts.push(`tasks ordered by objective impact: ${f.impactOrder?.join(' → ') ?? ''}`);
  if ((f.unsandboxedExternal?.length ?? 0) > 0)
    parts.push(`external agent(s) ran unsandboxed: ${f.unsandboxedExternal?.join(', ') ?? ''}`);
  if ((f.refusals?.length ?? 0) > 0) parts.push(`refused, not failed: ${f.refusals?.join(', ') ?? ''}`);
  if (f.reportedStates.length > 0) parts.push(`reported (not killed): ${f.reportedStates.join(', ')}`);
  // issue 33: where the checking time went, when it was much more than the suite itself: the last words
  const slow = describeSlowChecking(f.verification?.checking);
  if (slow !== null) parts.push(slow);

  const line = parts.join(' · ');
  return line.length > VERDICT_MAX ? `${line.slice(0, VERDICT_MAX - 1)}…` : line;
}

function describeVerification(v: VerificationJson | null): string | null {
  if (v === null) return null;
  if (!v.ran) return `not verified: ${v.summary || 'verification off'}`;
  if (v.inconclusive || v.ok === null)
    return `verification inconclusive (${v.summary})${v.advice ? ` — ${v.advice}` : ''}`;
  if (v.ok) return `verification passed (${v.summary})`;
  if (v.blocking) return `verification FAILED (${v.summary})`;
  if (v.pre_existing_only)
    return `verification failed, ${(v.known_failures?.length ?? 0) > 0 ? 'known or pre-existing failures only' : 'pre-existing only'}, not blocking (${v.summary})`;
  return `verification failed, not blocking (${v.summary})`;
}

/** Ids in words: the first three, then how many more. */
function someIds(ids: readonly string[], total = ids.length): string {
  return `${ids.slice(0, 3).join(', ')}${total > 3 ? ` and ${total - 3} more` : ''}`;
}

/** Issue 33: the tests a blocking verification leaves failing that are the work's own: failed at the checkpoint and still fail, and missing since. */
function unfinished(v: VerificationJson | null): { still: string[]; missing: string[] } {
  if (v === null || !v.blocking) return { still: [], missing: [] };
  const known = new Set(v.known_failures ?? []);
  const flaky = new Set(v.flaky);
  // when the checkpoint's tests fail against changed tests, that is the story (said by the proof's words)
  const still = v.original_tests?.blocking
    ? []
    : v.pre_existing.filter((id) => !known.has(id) && !flaky.has(id) && !id.startsWith('<'));
  return { still, missing: v.missing_tests ?? [] };
}

/** The failing ids the verdict's first words name (at most 3 of each kind): a compact answer's lists need not name them again. */
export function idsNamedByVerdict(v: VerificationJson | null): string[] {
  const { still, missing } = unfinished(v);
  return [...still.slice(0, 3), ...missing.slice(0, 3)];
}

/**
 * Issue 33: what the work left failing that is its own, said first: tests that failed before the work and
 * still fail (the job's to fix unless declared known), and tests that ran at the checkpoint and not now.
 */
export function describeUnfinished(v: VerificationJson | null): string | null {
  const { still, missing } = unfinished(v);
  const parts: string[] = [];
  if (still.length > 0) {
    const n = still.length;
    const fixed =
      v?.checkpoint_failures !== undefined
        ? `; the work fixed ${v.fixed?.length ?? 0} of ${v.checkpoint_failures}`
        : '';
    parts.push(
      `${n} test${n === 1 ? '' : 's'} failed before the work and still fail${n === 1 ? 's' : ''} (${someIds(still)})${fixed}; declare known failures if they are not this job's`,
    );
  }
  if (missing.length > 0) {
    // a runner that names no passing test gives the fall in the count instead of ids
    const counted = missing.length === 1 && /^\d+ fewer test/.test(missing[0] ?? '');
    parts.push(
      `the suite did not run to its end: ${counted ? missing[0] : `${missing.length} test${missing.length === 1 ? '' : 's'} that ran at the checkpoint did not run (${someIds(missing)})`}`,
    );
  }
  return parts.length > 0 ? parts.join('; ') : null;
}

function countBy(values: string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([v, n]) => `${n} ${v}`).join(', ');
}
