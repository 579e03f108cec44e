import type { ChangesJson } from './changes.js';
import type { CriteriaCheckJson, ProofJson, Uncertainty, VerificationJson } from './result.js';
import type { WorkerStatus } from './status.js';

/** What the proof is computed from: only what gaffer observed (spec 03 "Proof"). */
export interface ProofFacts {
  changes: ChangesJson | null;
  verification: VerificationJson | null;
  /** Claimed files that did not change on disk. */
  claimedOnly: string[];
  /** How many distinct files the workers claimed. */
  claimedCount: number;
  /** The task workers' statuses (fixers excluded). */
  workerStatuses: WorkerStatus[];
  /** True when at least one task was of a type that should change something. */
  expectsChanges: boolean;
  criteria: CriteriaCheckJson | null;
  cancelled: boolean;
  largeFilesByStat: boolean;
  testsWeakened: boolean;
  /** Workers whose runner uses a model but never said which model served (spec 04 attestation). */
  unattestedWorkers?: string[];
  /** Keys of external agents (agent CLIs) that ran without the sandbox (spec 04). */
  unsandboxedExternal?: string[];
  /** Workers that wrote outside their write policy (spec 06), each as `<worker>: <paths>`. */
  writeViolations?: string[];
  /** A worktree job's merge that did not carry every passing branch into the workspace (spec 06): a conflict, or a merged tree that fails its verification. */
  mergeProblems?: { code: 'merged_tree_fails' | 'merge_conflict' | 'merge_not_applied'; detail: string }[];
  /** A task's own gates (spec 05) that failed, or could not tell and were not read by a judge: each a doubt. */
  gateProblems?: { code: 'gates_failed' | 'gates_ambiguous'; detail: string }[];
  /** Workers a limit ended, each in words (issue 11): named in `worker_not_done`. */
  limitsHit?: string[];
  /**
   * Writes the evidence does not hold, described; `runsCode` when among them is a git hook, git config or
   * an editor config (what runs on the next commit or editor open); null when none.
   */
  outsideEvidence?: { detail: string; runsCode: boolean } | null;
  /** Issue 32: git config or attributes the workers set that make git run a program, in words; null when none. Never `proved`. */
  gitCode?: string | null;
  /**
   * Dependencies the workers changed while no manifest or lockfile changed, in words (issue 32): the tests
   * ran against what they patched, so nothing they say is proof and the job is not done; null when none.
   */
  dependenciesChangedAlone?: string | null;
}

/** Uncertainty penalties of spec 03. */
export const PENALTIES = {
  no_verification: 0.5,
  verification_inconclusive: 0.4,
  job_cancelled: 0.5,
  tests_weakened: 0.4,
  no_changes_observed: 0.3,
  claimed_not_observed: 0.3,
  criteria_unmet: 0.3,
  worker_not_done: 0.3,
  write_policy_violation: 0.3,
  merged_tree_fails: 0.3,
  merge_conflict: 0.2,
  merge_not_applied: 0.2,
  gates_failed: 0.3,
  gates_ambiguous: 0.2,
  external_agent_unsandboxed: 0.2,
  pre_existing_failures: 0.15,
  criteria_unchecked_each: 0.1,
  criteria_unchecked_max: 0.3,
  flaky_tests: 0.1,
  diff_truncated: 0.1,
  mtime_evidence: 0.1,
  large_files_by_stat: 0.05,
  model_unattested: 0.05,
  // issue 10: the checkpoint's tests judge the work; scope and start-up are named, never silent
  verification_could_not_start: 0.5,
  original_tests_fail: 0.3,
  original_tests_not_run: 0.2,
  original_tests_inconclusive: 0.2,
  tests_touched: 0.2,
  scope_related_only: 0.2,
  outside_evidence_writes: 0.2,
  git_code_planted: 0.3,
  // issue 32: the tests ran through dependencies the workers patched; the weightiest doubt, it leads
  dependencies_changed_alone: 0.6,
  // issue 32: the files are evidence all the same; a test runner's among them is a harness change
  hidden_by_ignore: 0.05,
} as const;

/** Decides proved / partial / unproved / contradicted with a confidence and every doubt named. */
export function computeProof(f: ProofFacts): ProofJson {
  const uncertainty: Uncertainty[] = [];
  const shown: string[] = [];
  const doubt = (code: keyof typeof PENALTIES, detail: string, penalty: number = PENALTIES[code]) =>
    uncertainty.push({ code, detail, penalty });

  const v = f.verification;
  const verified = v !== null && v.ran && !v.inconclusive && v.ok !== null;
  const changed = f.changes?.count ?? 0;
  const workersNotDone = f.workerStatuses.filter((s) => s !== 'done');

  if (f.cancelled) doubt('job_cancelled', 'the job was cancelled before it finished');
  if (v === null || !v.ran) doubt('no_verification', v?.summary || 'verification was off');
  else if (v.could_not_start) doubt('verification_could_not_start', v.summary);
  else if (v.inconclusive || v.ok === null)
    doubt(
      'verification_inconclusive',
      `${v.summary || 'the verification could not decide'}${v.advice ? ` — ${v.advice}` : ''}`,
    );
  const judged = judgedByOriginalTests(v);
  for (const d of judged) doubt(d.code, d.detail);
  if (v?.ran && v.scope === 'related')
    doubt(
      'scope_related_only',
      'only the tests related to the changed files ran; the full suite never ran on the final state',
    );
  if (f.gitCode) doubt('git_code_planted', f.gitCode);
  // what can run code later costs `proved`; the excluded folders' counts (a build, an install) only a little
  if (f.dependenciesChangedAlone) doubt('dependencies_changed_alone', f.dependenciesChangedAlone);
  if (f.outsideEvidence)
    doubt(
      'outside_evidence_writes',
      f.outsideEvidence.detail,
      f.outsideEvidence.runsCode ? PENALTIES.outside_evidence_writes : 0.05,
    );
  // before worker_not_done (the same penalty): a violation is why its worker did not finish, and leads the verdict
  for (const m of f.mergeProblems ?? []) doubt(m.code, m.detail);
  for (const g of f.gateProblems ?? []) doubt(g.code, g.detail);
  if ((f.writeViolations?.length ?? 0) > 0)
    doubt('write_policy_violation', `wrote outside the write policy: ${f.writeViolations?.join('; ') ?? ''}`);
  if (workersNotDone.length > 0) {
    const limited = (f.limitsHit?.length ?? 0) > 0 ? `; ${f.limitsHit?.join('; ') ?? ''}` : '';
    doubt(
      'worker_not_done',
      `${workersNotDone.length} of ${f.workerStatuses.length} workers did not finish (${workersNotDone.join(', ')})${limited}`,
    );
  }
  if ((f.changes?.hidden_by_ignore?.length ?? 0) > 0)
    doubt(
      'hidden_by_ignore',
      `written, and hidden by ignore rules the workers wrote: ${f.changes?.hidden_by_ignore?.join(', ') ?? ''}`,
    );
  if (f.expectsChanges && changed === 0 && f.changes !== null) doubt('no_changes_observed', 'nothing changed on disk');
  if (f.claimedOnly.length > 0)
    doubt('claimed_not_observed', `claimed but unchanged on disk: ${f.claimedOnly.slice(0, 5).join(', ')}`);
  if (v?.pre_existing_only && v.ok === false)
    doubt(
      'pre_existing_failures',
      `failures that were there before the work: ${v.pre_existing.length}${(v.known_failures?.length ?? 0) > 0 ? ` (${v.known_failures?.length ?? 0} declared known)` : ''}`,
    );
  if (v && v.flaky.length > 0) doubt('flaky_tests', `${v.flaky.length} test(s) passed only on rerun`);
  if (f.testsWeakened) doubt('tests_weakened', 'tests were removed or skipped since the baseline');
  if (f.criteria && f.criteria.unmet.length > 0) doubt('criteria_unmet', `unmet: ${f.criteria.unmet.join('; ')}`);
  if (f.criteria && f.criteria.unchecked.length > 0) {
    const penalty = Math.min(
      PENALTIES.criteria_unchecked_max,
      PENALTIES.criteria_unchecked_each * f.criteria.unchecked.length,
    );
    uncertainty.push({
      code: 'criteria_unchecked',
      detail: `cannot be checked mechanically: ${f.criteria.unchecked.join('; ')}`,
      penalty,
    });
  }
  if (f.changes?.snapshot_truncated)
    doubt('diff_truncated', 'the mtime snapshot hit its file cap: changes may be missing');
  if (f.changes?.source === 'mtime') doubt('mtime_evidence', 'changes come from sizes and mtimes, not content');
  if ((f.unattestedWorkers?.length ?? 0) > 0)
    doubt('model_unattested', `no runner reported the model that served: ${f.unattestedWorkers?.join(', ') ?? ''}`);
  if ((f.unsandboxedExternal?.length ?? 0) > 0)
    doubt(
      'external_agent_unsandboxed',
      `external agent(s) ran unsandboxed: ${f.unsandboxedExternal?.join(', ') ?? ''}`,
    );
  if (f.largeFilesByStat)
    doubt('large_files_by_stat', 'files over the size cap were compared by size, mtime and inode');

  if (v?.ran && v.ok === true) shown.push(`verification passed: ${v.summary}`);
  if (changed > 0) shown.push(`${changed} file${changed === 1 ? '' : 's'} changed on disk`);
  if (f.claimedCount > 0 && f.claimedOnly.length === 0)
    shown.push(`${f.claimedCount} claimed file${f.claimedCount === 1 ? '' : 's'} changed on disk`);
  if (f.criteria && f.criteria.met.length > 0)
    shown.push(
      `criteria met: ${f.criteria.met.length}/${f.criteria.met.length + f.criteria.unmet.length + f.criteria.unchecked.length}`,
    );

  const contradicted = (v?.blocking ?? false) || f.claimedOnly.length > 0 || (f.criteria?.unmet.length ?? 0) > 0;
  const proved =
    !contradicted &&
    !f.cancelled &&
    verified &&
    v.ok === true &&
    workersNotDone.length === 0 &&
    (f.writeViolations?.length ?? 0) === 0 &&
    (f.mergeProblems?.length ?? 0) === 0 &&
    (f.gateProblems?.length ?? 0) === 0 &&
    (!f.expectsChanges || changed > 0) &&
    !f.testsWeakened &&
    judged.length === 0 &&
    v.scope !== 'related' &&
    !(f.outsideEvidence?.runsCode ?? false) &&
    !f.gitCode &&
    !f.dependenciesChangedAlone &&
    (f.criteria === null || (f.criteria.unmet.length === 0 && f.criteria.unchecked.length === 0));
  const verdict: ProofJson['verdict'] = contradicted
    ? 'contradicted'
    : proved
      ? 'proved'
      : !verified
        ? 'unproved'
        : 'partial';

  const confidence = Math.max(0, 1 - uncertainty.reduce((sum, u) => sum + u.penalty, 0));
  return { verdict, confidence: Math.round(confidence * 100) / 100, shown, uncertainty };
}

type JudgedDoubt = {
  code: 'original_tests_fail' | 'original_tests_not_run' | 'original_tests_inconclusive' | 'tests_touched';
  detail: string;
};

/**
 * What the checkpoint's tests say against `proved` when they ran beside the workers' changed tests: they
 * could not run, did not decide, fail where the task may change tests, or pass while tests were changed
 * that the task was not allowed to change (tests it only added do not count: the original tests judged).
 */
function judgedByOriginalTests(v: VerificationJson | null): JudgedDoubt[] {
  const o = v?.original_tests;
  if (!o || o.blocking) return [];
  if (!o.ran)
    return [
      {
        code: 'original_tests_not_run',
        detail: `the workers changed ${o.changed.join(', ')}; the checkpoint's tests could not be run: ${o.summary}`,
      },
    ];
  const found: JudgedDoubt[] = [];
  if (o.ok === false)
    found.push({
      code: 'original_tests_fail',
      detail: `with the checkpoint's tests, ${o.failures.length} fail: ${o.failures.slice(0, 3).join('; ')}`,
    });
  else if (o.ok === null)
    found.push({ code: 'original_tests_inconclusive', detail: `the checkpoint's tests did not decide: ${o.summary}` });
  const edited = o.changed.filter((c) => !c.endsWith(' (added)'));
  if (!o.tests_may_change && edited.length > 0) {
    found.push({
      code: 'tests_touched',
      detail: `the workers changed ${edited.slice(0, 5).join(', ')} though the task may not change tests`,
    });
  }
  return found;
}

/** The proof in the words of the verdict line (spec 01 part 6). */
export function describeProof(proof: ProofJson, verification: VerificationJson | null, claimedOnly: string[]): string {
  switch (proof.verdict) {
    case 'proved':
      return `proved ${proof.confidence.toFixed(2)}`;
    case 'unproved':
      return 'unproved: nothing could show it';
    case 'contradicted': {
      const why = verification?.original_tests?.blocking
        ? 'the original tests fail'
        : verification?.blocking
          ? 'the verification fails'
          : claimedOnly.length > 0
            ? `claimed but unchanged: ${claimedOnly.slice(0, 3).join(', ')}`
            : 'a criterion is unmet';
      return `contradicted: ${why}`;
    }
    case 'partial': {
      // the weightiest doubt names why it is not proved
      const first = [...proof.uncertainty].sort((x, y) => y.penalty - x.penalty)[0];
      return `partial ${proof.confidence.toFixed(2)}${first ? `: ${first.code}` : ''}`;
    }
  }
}
