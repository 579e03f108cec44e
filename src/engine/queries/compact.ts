import type { AskJson } from '../../domain/approval.js';
import { spendText, type Spend } from '../../domain/spend.js';
import type {
  CompactJob,
  CompactResult,
  CompactVerification,
  CompactWorker,
  ProgressEntry,
} from '../../domain/answer.js';
import { describeVerify, type JobSpec } from '../../domain/request.js';
import type { ObjectiveEvidence } from '../../domain/objectives.js';
import type { JobResult, VerificationJson, WorktreesJson } from '../../domain/result.js';
import { isFinalStatus } from '../../domain/status.js';
import { describeSlowChecking } from '../../domain/checking.js';
import { idsNamedByVerdict } from '../../domain/verdict.js';
import type { AttemptRow, JobRow } from '../../store/store.js';
import { ceilingOf, type WorkspacePace } from './ceiling.js';
import { epochS } from '../clock.js';
import { CHANGES_LISTS, VERIFICATION_ID_LISTS, VERIFICATION_LISTS } from '../../domain/answer-schema.js';
import type { ChangesJson } from '../../domain/changes.js';
import { bound, boundLists, cutText, IdLedger, LIST_SHOWN, putBounded } from './compact-ids.js';
import {
  collapseRepeats,
  cutPathArguments,
  dropPassingLines,
  dropRuntimeFrames,
  elideMiddle,
  keepTail,
  relativizePaths,
  shareBudget,
} from './compact-text.js';

export const INSTRUCTION_CUT = 200;
export const INSTRUCTION_CUT_ENDED = 80;
export const SUMMARY_CUT = 600;
export const SUMMARY_CUT_FULL = 1_200;
/** All workers' summaries together, in the compact answer: each gets a share (at least the floor, at most SUMMARY_CUT). */
export const SUMMARY_BUDGET = 1_200;
export const SUMMARY_FLOOR = 120;
/** The verification's output tail when its failures were parsed into test ids (they say which tests); else the spec's 1,500. */
export const OUTPUT_TAIL_PARSED = 600;
export const OUTPUT_TAIL_CUT = 1_500;
/** Related test files listed in the compact answer (the rest counted in `related_files_count`). */
export const RELATED_FILES_SHOWN = 3;
/** Earlier rounds of the verification shown (the last ones; `previous_count` counts them all). */
export const PREVIOUS_SHOWN = 3;
/** Failure excerpts shown, each cut to DETAIL_CUT; the proof's details and a climb's why are cut there too. */
export const FAILURE_DETAILS_SHOWN = 3;
export const DETAIL_CUT = 300;

// the answer's types are the domain's (domain/answer.ts); named here too for the callers that build on this module
export type { CompactJob, CompactVerification, CompactWorker, ProgressEntry } from '../../domain/answer.js';

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * Builds the compact answer from what the store holds; `full` keeps instructions and summaries
 * longer; `pace` (what jobs in the workspace took) may raise a live job's ceiling.
 */
export function buildCompact(
  job: JobRow,
  attempts: AttemptRow[],
  opts: {
    full?: boolean;
    workerCap: number;
    asks?: readonly AskJson[];
    pace?: WorkspacePace | null;
    evidence?: readonly ObjectiveEvidence[];
    /** The node that took each attempt, by worker name (a cluster's attempts). */
    nodes?: ReadonlyMap<string, string>;
  },
): CompactJob {
  const full = opts.full ?? false;
  const spec: JobSpec = job.spec;
  const live = !isFinalStatus(job.status);
  const compact: CompactJob = {
    id: job.id,
    title: job.title,
    status: job.status,
    verdict: job.verdict,
    error: job.error,
    owner: job.owner,
    workspace: job.workspace,
    created: job.created,
    started: job.started,
    finished: job.finished,
    duration_s: job.started !== null ? round1((job.finished ?? epochS()) - job.started) : null,
    tasks: spec.tasks.map((t) => {
      const task = {
        name: t.name,
        // the coordinator wrote it: once the job has ended a shorter echo names the task well enough (issue 33)
        instruction: full ? t.instruction : cut(t.instruction, live ? INSTRUCTION_CUT : INSTRUCTION_CUT_ENDED),
        files: t.files,
        runner: t.runner,
        model: t.model,
        type: t.type,
        // why the roster routed it where it did: the learner's figures always; the first rung's plain why with `full`
        ...(t.roster && (full || t.roster.learned) ? { routed: t.roster.why } : {}),
      };
      // as in the worker rows: no model named is said by leaving it out
      return full ? task : dropEmpty(task, TASK_KEEP);
    }),
    parallel: spec.parallel,
    verify: describeVerify(spec.verify),
    verify_scope: spec.verify_scope,
    fix_rounds: spec.fix_rounds,
  };
  // issue 33: once a verification ran, its `mode`, `command` and `scope` say how the job was verified
  if (!full && job.result?.verification?.ran === true) {
    delete compact.verify;
    delete compact.verify_scope;
  }
  // the lint's advice is for the one writing the request: once the job is over, its codes say what was missing
  // a job that ended done and proved needs no advice on what its request lacked (issue 33: a clean answer stays small)
  const provedDone = job.status === 'done' && job.result?.proof?.verdict === 'proved';
  if (spec.spec_lint && (full || !provedDone))
    compact.spec_lint = full || live ? spec.spec_lint : { mode: spec.spec_lint.mode, codes: spec.spec_lint.codes };
  if (spec.task_order) compact.task_order = spec.task_order;
  // spec 07: the evidence records the job left its objectives are for `full`
  if (spec.objectives)
    compact.objectives = full ? { ...spec.objectives, evidence: [...(opts.evidence ?? [])] } : spec.objectives;
  if (spec.warnings) compact.warnings = spec.warnings;
  if (spec.follow_up) compact.follow_up = { ...spec.follow_up };
  if (spec.merge_of) compact.merge_of = { ...spec.merge_of };
  if (spec.criteria.length > 0) compact.criteria = spec.criteria;
  if (opts.asks && opts.asks.length > 0) compact.asks = [...opts.asks];

  const result = job.result;
  if (result !== null || attempts.length > 0) {
    const nothingYet: Partial<JobResult> = {};
    const { fix_rounds_run: _internal, ...visible } = result ?? nothingYet;
    const workers = attempts
      .filter((a) => a.started !== null || a.finished !== null)
      .map((a) => compactWorker(a, full, opts.nodes?.get(a.worker)));
    if (!full) fitSummaries(workers);
    const answer: CompactResult = {
      // a worker that ended the ordinary way (`complete`) is said by its status and outcome
      // one worker's `observed` is the job's `changes` again
      workers: full
        ? workers
        : workers.map((w) =>
            dropEmpty(
              {
                ...w,
                ...(w.stop_reason === 'complete' ? { stop_reason: null } : {}),
                ...(workers.length === 1 ? { observed: '' } : {}),
              },
              WORKER_KEEP,
            ),
          ),
      ...visible,
    };
    if (!full) {
      // issue 33: each failing id said once (the ledger knows where), every list bounded with its count
      const ledger = new IdLedger();
      // the verdict's first words name the tests the work left failing (issue 33): the lists do not name them again
      for (const id of idsNamedByVerdict(visible.verification ?? null)) ledger.note(id, 'verdict');
      if (visible.verification) answer.verification = compactVerification(visible.verification, job.workspace, ledger);
      if (visible.changes) answer.changes = compactChanges(visible.changes);
      if (visible.worktrees) answer.worktrees = compactWorktrees(visible.worktrees);
      boundLists(answer, ['files_changed', 'claimed_only']);
      if (visible.criteria_check)
        answer.criteria_check = boundLists({ ...visible.criteria_check }, ['met', 'unmet', 'unchecked', 'details']);
      // the last gates and climbs say where the task stands; the count says how many came before
      if (visible.gates)
        putLast(
          answer,
          'gates',
          visible.gates.map((g) => ({
            ...g,
            results: g.results.map((r) => ({ ...r, detail: cutText(ledger.referTo(r.detail), DETAIL_CUT) })),
          })),
        );
      // each climb's why says what failed; the autopsy (every rung's gates and notes) is for `full`
      if (visible.escalation)
        putLast(
          answer,
          'escalation',
          visible.escalation.map(({ autopsy: _autopsy, ...climb }) => ({
            ...climb,
            why: cutText(ledger.referTo(climb.why), DETAIL_CUT),
          })),
        );
      if (visible.proof) {
        const proof = visible.proof;
        // a proved job's shown lines are its verdict's words again (verification passed, files changed)
        answer.proof = {
          ...proof,
          shown: proof.verdict === 'proved' ? [] : proof.shown.map((line) => ledger.referTo(line)),
          uncertainty: proof.uncertainty.map((u) => ({ ...u, detail: cutText(ledger.referTo(u.detail), DETAIL_CUT) })),
        };
      }
      if (compact.verdict !== null) compact.verdict = ledger.referTo(compact.verdict, 'verdict');
      const totals = visible.totals ? dropEmpty(visible.totals, NOTHING) : undefined;
      // an unknown cost stays null in the answer: left out, it would read as free (issue 15); an
      // all-free job's spend is its workers' durations, said already
      if (totals && visible.totals?.cost_usd === null) totals.cost_usd = null;
      if (totals && attempts.every((a) => isPlainFree(a.report?.spend))) delete totals.spend;
      if (totals && Object.keys(totals).length > 0) answer.totals = totals;
      else delete answer.totals;
    }
    if (live) delete answer.exit_code;
    compact.result = answer;
  }
  if (live) {
    compact.progress = buildProgress(spec, attempts);
    compact.phase = job.phase;
    const ceiling = ceilingOf(job, opts.workerCap, attempts, opts.pace ?? null);
    compact.ceiling_s = ceiling.seconds;
    if (ceiling.why !== null) compact.ceiling_why = ceiling.why;
    compact.wait_again = true;
  }
  return compact;
}

/** The last LIST_SHOWN entries of `list` as `row[key]`, with `<key>_count` when there were more. */
function putLast<R extends object, T>(row: R, key: 'gates' | 'escalation', list: readonly T[]): void {
  const out = row as Record<string, unknown>;
  out[key] = list.slice(-LIST_SHOWN);
  if (list.length > LIST_SHOWN) out[`${key}_count`] = list.length;
}

/** `changes` without the flags and lists that say nothing, each list bounded (`count` stays the exact total: issue 33). */
function compactChanges(c: ChangesJson): NonNullable<CompactResult['changes']> {
  const { git, ...rest } = c;
  const out = boundLists(dropNothing(rest, CHANGES_KEEP), CHANGES_LISTS);
  // the diff's line counts are `full`'s: `count` and the lists say what changed (issue 33: a clean answer stays small)
  return git ? { ...out, git: { repo: git.repo, dirty_count: git.dirty_count } } : out;
}

/** A worktree job's `worktrees` without what says nothing: 8 tasks' rows stay a few hundred tokens (spec 03's budget). */
function compactWorktrees(w: WorktreesJson): NonNullable<CompactResult['worktrees']> {
  return {
    ...w,
    tasks: w.tasks.map(({ commit: _commit, port: _port, path, setup, verification, ...row }) => ({
      ...boundLists({ ...row }, ['files', 'conflict_files']),
      ...(path !== null ? { path } : {}),
      ...(setup.deps.length > 0 || setup.included > 0 || setup.command !== null ? { setup } : {}),
      ...(verification !== null && verification.ok !== true ? { verification } : {}),
    })),
    merges: w.merges.map(({ path, ...merge }) => ({ ...merge, ...(path !== null ? { path } : {}) })),
  };
}

/** Worker fields always shown, even when empty; the rest are left out of the compact answer when 0, null or empty. */
const WORKER_KEEP = new Set(['name', 'role', 'attempt', 'runner', 'status', 'outcome', 'sandboxed'] as const);
const NOTHING = new Set<never>();
const ZERO_IS_A_VALUE = new Set(['duration_s']);
const TASK_KEEP = new Set(['name', 'instruction', 'files', 'runner', 'type', 'routed'] as const);

/** What changed is always said, even when nothing did; the flags and lists of the unusual only when they hold something. */
const CHANGES_KEEP = new Set(['source', 'checkpoint', 'count', 'added', 'modified', 'deleted'] as const);

/** A row with some fields left out: the kept ones always there, any other maybe. */
type Thinned<T, K extends keyof T> = Pick<T, K> & Partial<T>;

/** Copies the fields of `row` that `drop` does not leave out; `keep`'s fields stay whatever they hold. */
function thin<T extends object, K extends keyof T & string>(
  row: T,
  keep: ReadonlySet<K>,
  drop: (key: string, value: unknown) => boolean,
): Thinned<T, K> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (!drop(key, value) || (keep as ReadonlySet<string>).has(key)) out[key] = value;
  }
  // the one cast: `out` holds `row`'s own fields, every kept one among them
  return out as Thinned<T, K>;
}

/** Leaves out fields not in `keep` that say nothing happened: false, null, an empty list or object. */
function dropNothing<T extends object, K extends keyof T & string>(row: T, keep: ReadonlySet<K>): Thinned<T, K> {
  return thin(
    row,
    keep,
    (_key, value) =>
      value === false ||
      value === null ||
      (Array.isArray(value) && value.length === 0) ||
      (isPlainObject(value) && Object.keys(value).length === 0),
  );
}

const isPlainObject = (value: unknown): value is object =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The compact answer leaves out zero, null and empty fields that are not in `keep` (a clean
 * one-worker job must stay under ~400 tokens, spec 03); `?full=1` shows every field.
 */
function dropEmpty<T extends object, K extends keyof T & string>(row: T, keep: ReadonlySet<K>): Thinned<T, K> {
  // a worker that took under 0.05 s has a duration of 0: only an unknown one is left out
  return thin(
    row,
    keep,
    (key, value) =>
      value === null ||
      value === '' ||
      (value === 0 && !ZERO_IS_A_VALUE.has(key)) ||
      (Array.isArray(value) && value.length === 0),
  );
}

/** A `free` attempt's spend (or none recorded): nothing the compact answer must say beyond its duration. */
function isPlainFree(spend: Spend | undefined): boolean {
  return spend === undefined || (spend.billing === 'free' && spend.unknown === null);
}

function compactWorker(a: AttemptRow, full: boolean, node: string | undefined): CompactWorker {
  const r = a.report;
  const row: CompactWorker = {
    name: a.worker,
    role: a.role,
    attempt: a.attempt,
    runner: a.runner,
    model: a.model,
    ...(a.entry !== null ? { entry: a.entry } : {}),
    ...(a.provider !== null ? { provider: a.provider } : {}),
    status: a.status,
    outcome: a.outcome,
    stop_reason: r?.stopReason ?? null,
    error: r?.error ?? null,
    rounds: r?.rounds ?? 0,
    tool_calls: r?.toolCalls ?? 0,
    failed_calls: r?.failedCalls ?? 0,
    input_tokens: r?.inputTokens ?? 0,
    output_tokens: r?.outputTokens ?? 0,
    cost_usd: r?.spend ? r.spend.usd : (r?.costUsd ?? null),
    // compact: a free attempt's spend is its duration, said already; money, usage and unknown are said
    spend: r?.spend && (full || !isPlainFree(r.spend)) ? spendText(r.spend) : null,
    duration_s: r ? round1(r.durationMs / 1000) : a.started !== null ? round1(epochS() - a.started) : null,
    files_changed: full ? (r?.filesChanged ?? []) : bound(r?.filesChanged ?? []).shown,
    ...(!full && (r?.filesChanged.length ?? 0) > LIST_SHOWN ? { files_changed_count: r?.filesChanged.length } : {}),
    summary: full ? cut(r?.summary ?? '', SUMMARY_CUT_FULL) : collapseRepeats(r?.summary ?? ''),
    sandboxed: r?.sandboxed ?? false,
    network: r?.network === 'none' && !full ? null : (r?.network ?? null),
    write_audit: r?.writeAudit === 'ok' && !full ? null : (r?.writeAudit ?? null),
    observed: r?.observed ?? null,
  };
  const detection = r?.detection ?? a.state;
  if (detection) {
    row.state = detection.state;
    row.why = detection.why;
  }
  if (r && r.refusals.length > 0) row.refusals = r.refusals;
  if (r?.session) row.session = r.session;
  if (a.routeWhy !== null) row.rerouted = a.routeWhy;
  if (node !== undefined) row.node = node;
  return row;
}

/**
 * Shares SUMMARY_BUDGET between the workers' summaries (a worker that did not end done has the
 * more to say and weighs double) and keeps each summary's start and end within its share.
 */
function fitSummaries(workers: CompactWorker[]): void {
  const shares = shareBudget(
    workers.map((w) => w.summary.length),
    workers.map((w) => (w.status === 'done' ? 1 : 2)),
    { budget: SUMMARY_BUDGET, floor: SUMMARY_FLOOR, cap: SUMMARY_CUT },
  );
  workers.forEach((w, i) => {
    w.summary = elideMiddle(w.summary, shares[i] ?? SUMMARY_FLOOR);
  });
}

/**
 * The verification in the compact answer (issue 33): each failing id named once (the ledger, in
 * VERIFICATION_ID_LISTS' order, then the original tests', then the earlier rounds'), every list
 * bounded with its count, the summaries naming listed ids by their list; the output tail with
 * workspace paths made relative, runtime stack frames, repeated lines and — when the failures were
 * parsed into test ids, which say which tests — passing-test lines folded, and only its last
 * OUTPUT_TAIL_PARSED chars kept then.
 */
function compactVerification(v: VerificationJson, workspace: string, ledger: IdLedger): CompactVerification {
  const {
    output_tail: _tail,
    previous,
    original_tests: original,
    checking,
    fixed,
    checkpoint_failures: _checkpointFailures,
    ...rest
  } = v;
  const out: CompactVerification = { ...rest, ...shortenRelated(v) };
  // issue 33: where the checking time went is the verdict's to say when it matters (over 5× the suite); the
  // tests the work fixed and the checkpoint's count are for a failure's "fixed 1 of 4" — `?full=1` keeps all
  if (checking && describeSlowChecking(checking) !== null) out.checking = checking;
  if (v.ok === false && v.checkpoint_failures !== undefined)
    Object.assign(out, { checkpoint_failures: v.checkpoint_failures, fixed: fixed ?? [] });
  for (const key of VERIFICATION_ID_LISTS) putBounded(out, key, ledger.say(key, out[key]));
  // passed: every failure it saw is a flaky one, listed in `flaky`
  if (v.ok === true) delete out.failures_count;
  for (const key of VERIFICATION_LISTS) putBounded(out, key, bound(out[key] ?? []));
  if (out.failure_details) {
    const details = bound(out.failure_details, FAILURE_DETAILS_SHOWN);
    out.failure_details = details.shown.map(({ id, excerpt }) => {
      const of = id === undefined ? null : ledger.placeOf(id);
      if (id !== undefined && of === null) ledger.note(id, 'failure_details');
      return {
        ...(of !== null ? { of } : id !== undefined ? { id } : {}),
        excerpt: cutText(collapseRepeats(dropRuntimeFrames(relativizePaths(excerpt, workspace))), DETAIL_CUT),
      };
    });
    if (details.count !== undefined) out.failure_details_count = details.count;
  }
  if (original) {
    const o: NonNullable<CompactVerification['original_tests']> = { ...boundLists({ ...original }, ['changed']) };
    putBounded(o, 'failures', ledger.say('original_tests.failures', original.failures));
    putBounded(o, 'flaky', ledger.say('original_tests.flaky', original.flaky));
    o.summary = ledger.referTo(o.summary);
    out.original_tests = o;
  }
  if (previous) {
    const left = Math.max(0, previous.length - PREVIOUS_SHOWN);
    out.previous = previous.slice(left).map((round, i) => {
      const row: NonNullable<CompactVerification['previous']>[number] = { summary: ledger.referTo(round.summary) };
      putBounded(row, 'failures', ledger.say(`previous[${i}].failures`, round.failures));
      return row;
    });
    if (left > 0) out.previous_count = previous.length;
  }
  out.summary = ledger.referTo(out.summary);
  // the related run's summary matters when the full suite failed where it passed; a passing one says what it confirms
  if (out.confirms_related)
    out.confirms_related =
      v.ok === true
        ? { related_files: out.confirms_related.related_files }
        : { ...out.confirms_related, summary: ledger.referTo(out.confirms_related.summary ?? '') };
  // a passing run's tail (flaky tests named already) is `full`'s: the compact answer of a clean job stays small
  if (v.output_tail === '' || v.ok === true) return out;
  const parsed = v.failures.length > 0 && v.failures.every((id) => !id.startsWith('<'));
  const tail = collapseRepeats(
    dropRuntimeFrames(relativizePaths(parsed ? dropPassingLines(v.output_tail) : v.output_tail, workspace)),
  );
  return { ...out, output_tail: keepTail(tail, parsed ? OUTPUT_TAIL_PARSED : OUTPUT_TAIL_CUT) };
}

/**
 * Related scope spells every selected file into the command and lists them again in
 * `related_files`: on a real project that alone outweighs the rest of a clean answer (spec 03:
 * ~400 tokens). The compact answer keeps the command up to its file arguments and the first
 * RELATED_FILES_SHOWN files with their count; `?full=1` has both whole.
 */
function shortenRelated(
  v: VerificationJson,
): Partial<Pick<CompactVerification, 'command' | 'related_files' | 'related_files_count'>> {
  const files = v.related_files;
  const out: Partial<Pick<CompactVerification, 'command' | 'related_files' | 'related_files_count'>> = {};
  if (v.command !== null && v.scope === 'related') out.command = cutPathArguments(v.command, files ?? []);
  if (files && files.length > RELATED_FILES_SHOWN) {
    out.related_files = files.slice(0, RELATED_FILES_SHOWN);
    out.related_files_count = files.length;
  }
  return out;
}

/** Every task appears from the start (as queued), so a 4-task job at a cap of 2 never looks like 2 workers. */
function buildProgress(spec: JobSpec, attempts: AttemptRow[]): Record<string, ProgressEntry> {
  const progress: Record<string, ProgressEntry> = {};
  for (const task of spec.tasks)
    progress[task.name] = { last_event: 'queued', round: null, elapsed_s: 0, last_tool: null, state: null };
  for (const a of attempts) {
    const state = a.state;
    const entry: ProgressEntry = {
      last_event: a.lastEvent ?? a.status,
      round: null,
      elapsed_s: a.started === null ? 0 : round1((a.finished ?? epochS()) - a.started),
      last_tool: null,
      state: state?.state ?? null,
    };
    if (state?.why) entry.why = state.why;
    if (state?.matched) entry.matched = state.matched;
    progress[a.worker] = entry;
  }
  return progress;
}
