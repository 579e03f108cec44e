import type { VerificationJson } from '../domain/result.js';
import { frameworkNamedBy, summarizeCounts } from './parsers/index.js';
import { failureExcerpts } from './failure-context.js';
import { describeHarnessChange, type HarnessChange } from './harness.js';
import { readLog, type SuiteRun } from './run-suite.js';
import { findWeakenedTests } from './weakening.js';

export const OUTPUT_TAIL_CHARS = 1_500;
export const FAILURES_SHOWN = 10;
export const FAILURE_CHARS = 200;

/** Kinds whose output gaffer knows how to read: their silence means "did not run", not "passed". */
const TEST_RUNNER_KINDS = new Set(['node', 'pytest', 'go', 'cargo']);

export const SUITE_DID_NOT_COMPLETE = '<suite did not complete>';
export const RUNNER_ERROR = '<runner error>';

/** How one run reads on its own, before any comparison. */
export interface RunReading {
  /** null: inconclusive. */
  ok: boolean | null;
  inconclusive: boolean;
  failures: string[];
  summary: string;
  /** A non-zero exit with no parsed failure from a known test runner: conclusive only if the baseline exits 0. */
  runnerError: boolean;
  outputMatched?: boolean;
  /** The command could not start (exit 126/127, a spawn failure): an error to name, not a quiet "inconclusive". */
  couldNotStart?: boolean;
}

/** Reads one run (spec 03 "Inconclusive", the SWE-bench guards, the oracle). */
export function readRun(
  run: SuiteRun,
  opts: { kind: string | null; timeoutS: number; expectedOutput: string | null },
): RunReading {
  const p = run.parsed;
  const counts = summarizeCounts(p);
  const inconclusive = (summary: string): RunReading => ({
    ok: null,
    inconclusive: true,
    failures: [],
    summary,
    runnerError: false,
  });
  if (run.isCancelled) return inconclusive('cancelled before it finished');
  // issue 11: ended by gaffer's process-count or memory cap, like a timeout: the suite did not decide
  if (run.limit !== undefined) return inconclusive(run.limit.words);
  if (run.timedOut) return inconclusive(`timed out after ${opts.timeoutS} s`);
  if (run.cause !== null) return { ...inconclusive(`could not start: ${run.cause}`), couldNotStart: true };
  // sh says 127 when the command is not found, 126 when it cannot be executed
  if (run.exitCode === 127 || run.exitCode === 126) {
    return {
      ...inconclusive(`the command could not run (exit ${run.exitCode}): ${lastLine(run.tail)}`),
      couldNotStart: true,
    };
  }
  if (run.exitCode === null) return inconclusive(`killed by ${run.signal ?? 'a signal'}`);
  if (p.failed.length === 0 && p.collectionError)
    return inconclusive(`collection errors: no test ran (exit ${run.exitCode})`);
  if (p.failed.length === 0 && p.noTestsRan) return inconclusive(`no tests ran (exit ${run.exitCode})`);

  // an explicit command that names a framework (`npx tape …`) is a known runner too: the guards hold for every format
  const knownRunner =
    p.framework !== null ||
    (opts.kind !== null && TEST_RUNNER_KINDS.has(opts.kind)) ||
    frameworkNamedBy(run.command) !== null;
  const matched = run.landmarkSeen;
  const withMatch = (r: RunReading): RunReading => (matched === undefined ? r : { ...r, outputMatched: matched });
  if (run.exitCode === 0) {
    if (matched === false)
      return withMatch({
        ok: false,
        inconclusive: false,
        failures: [],
        summary: `exit 0 but the output lacks the expected landmark`,
        runnerError: false,
      });
    // guard: zero parsed tests and no sign the suite ran is "did not run", not a pass
    const parsedAny =
      p.passed.length + p.failed.length > 0 || (p.counts !== null && p.counts.passed + p.counts.failed > 0);
    if (knownRunner && !parsedAny && !p.ranSignal) return inconclusive('exit 0 but no sign that any test ran');
    // issue 33: tests ran but the runner never reached its end (the code under test ended the process, a
    // test called exit): whatever passed so far is not the suite passing
    if (p.framework !== null && p.incomplete !== null) {
      const before = p.failed.length > 0 ? `; ${p.failed.length} failed before it stopped` : '';
      return inconclusive(`the suite did not run to its end: ${p.incomplete}${before}`);
    }
    if (p.failed.length > 0) {
      return withMatch({
        ok: false,
        inconclusive: false,
        failures: p.failed,
        summary: counts ?? `${p.failed.length} failed (exit 0)`,
        runnerError: false,
      });
    }
    return withMatch({ ok: true, inconclusive: false, failures: [], summary: counts ?? 'exit 0', runnerError: false });
  }
  if (p.failed.length > 0)
    return withMatch({
      ok: false,
      inconclusive: false,
      failures: p.failed,
      summary: counts ?? `exit ${run.exitCode}`,
      runnerError: false,
    });
  // guard: a non-zero exit with no parsed failure is a runner error (decided against the baseline)
  if (knownRunner)
    return withMatch({
      ok: false,
      inconclusive: false,
      failures: [RUNNER_ERROR],
      summary: `exit ${run.exitCode} with no failing test named`,
      runnerError: true,
    });
  return withMatch({
    ok: false,
    inconclusive: false,
    failures: [],
    summary: counts ?? `exit ${run.exitCode}`,
    runnerError: false,
  });
}

/** Tests that ran at the checkpoint and not after, in words: their count, or the fall in the count when the runner names none. */
export function describeMissing(missing: readonly string[]): string {
  if (missing.length === 1 && FEWER_TESTS.test(missing[0] ?? ''))
    return `${missing[0]} (counted: the runner names no passing test)`;
  return `${missing.length} test${missing.length === 1 ? '' : 's'} that ran at the checkpoint did not run`;
}

const FEWER_TESTS = /^\d+ fewer test\(s\) ran than before the work$/;

/** What running the checkpoint's tests against the new code showed (original-tests.ts). */
export type OriginalTestsRun =
  | { ran: true; command: string; run: SuiteRun; reading: RunReading; flaky: string[]; changed: HarnessChange[] }
  | { ran: false; why: string; changed: HarnessChange[] };

/** Everything the verdict on a verification is made of. */
export interface JudgeInput {
  mode: VerificationJson['mode'];
  kind: string | null;
  command: string;
  scope: 'related' | 'all' | null;
  relatedFiles?: string[];
  after: SuiteRun;
  reading: RunReading;
  /** The same command on the checkpoint's content, when it ran. */
  baseline: { run: SuiteRun; reading: RunReading } | null;
  /** New failing ids that passed on a targeted rerun. */
  flaky: string[];
  testsTouched: string[];
  testsWeakened: string[];
  /** The checkpoint's tests run against the new code, when the workers changed tests or the harness. */
  original: OriginalTestsRun | null;
  /** A task may change tests: a failure of the original tests then lowers the proof instead of blocking. */
  testsMayChange: boolean;
  /** Issue 33: test ids or globs declared known (the request's and the committed hints'): never this job's to fix. */
  knownFailures: readonly string[];
  /** Issue 33: the job changes code, so a test that failed at the checkpoint and still fails is its to fix. */
  ownsCheckpointFailures: boolean;
}

/**
 * Whether a failing id is declared known: equal to an entry, or matched by one with `*` (any run of
 * characters, `/` and `::` included: ids are not paths) and `?` (one character).
 */
export function knownFailureMatcher(patterns: readonly string[]): (id: string) => boolean {
  const exact = new Set(patterns.filter((p) => !/[*?]/.test(p)));
  const globs = patterns
    .filter((p) => /[*?]/.test(p))
    .map(
      (p) =>
        new RegExp(
          `^${p
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '.*')
            .replace(/\?/g, '.')}$`,
          's',
        ),
    );
  return (id) => exact.has(id) || globs.some((re) => re.test(id));
}

/**
 * Decides ok / inconclusive / blocking and the new vs pre-existing split (spec 03 "What blocks done").
 * Issue 33, graded as SWE-bench grades a patch: for a job that changes code, a test that failed at the
 * checkpoint and still fails is the job's to fix (it blocks) unless it is declared known or proved flaky
 * by its own rerun; a test that ran at the checkpoint and did not run after the work is a failure.
 */
export function judgeVerification(j: JudgeInput): VerificationJson {
  let { ok, inconclusive, failures, summary } = j.reading;
  const base = j.baseline;
  const baseFailed = new Set(base?.reading.failures ?? []);
  const baseConclusive = base !== null && !base.reading.inconclusive && !base.reading.runnerError;

  if (inconclusive && baseConclusive) {
    // the workers' change made the suite hang or stop collecting: a new failure
    ok = false;
    inconclusive = false;
    failures = [SUITE_DID_NOT_COMPLETE];
    summary = `${summary}; it completed before the work`;
  }
  if (j.reading.runnerError) {
    if (base !== null && base.run.exitCode === 0) summary = `${summary}; it passed before the work`;
    else {
      ok = null;
      inconclusive = true;
      failures = [];
    }
  }
  // issue 33: the same command on the checkpoint listed tests that did not run now (the harness unchanged:
  // a changed one is judged by its weakening and by the checkpoint's tests)
  const missing =
    base !== null && baseConclusive && ok !== null && j.testsTouched.length === 0
      ? findWeakenedTests(base.run.parsed, j.after.parsed)
      : [];
  if (missing.length > 0) {
    ok = false;
    summary = `${summary}; ${describeMissing(missing)}`;
  }

  const real = failures;
  const flaky = j.flaky.filter((id) => real.includes(id));
  const isKnown = knownFailureMatcher(j.knownFailures);
  const known = real.filter((id) => !flaky.includes(id) && !id.startsWith('<') && isKnown(id));
  // without ids, an exit-code failure is pre-existing when the baseline failed too
  const exitOnly = ok === false && real.length === 0 && missing.length === 0;
  const exitOnlyPreExisting = exitOnly && base !== null && base.run.exitCode !== 0 && !base.reading.inconclusive;
  const preExisting = base === null ? [] : real.filter((f) => baseFailed.has(f));
  const newFailures = real.filter((f) => !preExisting.includes(f) && !flaky.includes(f) && !known.includes(f));
  const nonFlaky = real.filter((f) => !flaky.includes(f));
  if (ok === false && real.length > 0 && nonFlaky.length === 0 && missing.length === 0) ok = true; // flaky failures aside, it passed
  // what the job answers for: in a regression check (`auto`), failures that were there before only when it changes code
  const excused = (id: string) =>
    known.includes(id) || (j.mode !== 'command' && !j.ownsCheckpointFailures && preExisting.includes(id));
  const ours = nonFlaky.filter((id) => !excused(id));
  const exitOnlyOurs = exitOnly && (j.mode === 'command' || !exitOnlyPreExisting || j.ownsCheckpointFailures);
  const conclusiveFail = ok === false && !inconclusive;
  const blocking = conclusiveFail && (ours.length > 0 || exitOnlyOurs || missing.length > 0);
  // failed, and not blocking: only failures that were there before (or are declared known)
  const preExistingOnly = ok === false && !blocking;
  // fixed: failed at the checkpoint, and passed now by its id (or, where passing tests go unnamed, no longer failing in a run that completed)
  const passedNow = new Set(j.after.parsed.passed);
  const completed = j.reading.ok !== null && !real.some((id) => id.startsWith('<')) && missing.length === 0;
  const fixed =
    base === null
      ? []
      : [...baseFailed].filter(
          (id) =>
            !id.startsWith('<') && (passedNow.has(id) || (completed && passedNow.size === 0 && !real.includes(id))),
        );
  const checkpointFailures =
    base !== null && baseConclusive ? [...baseFailed].filter((id) => !id.startsWith('<')).length : null;

  // issue 33: what each failing test reported, for the fixer and the next rung
  const details =
    ok === false ? failureExcerpts((j.after.logFile && readLog(j.after.logFile)) || j.after.tail, nonFlaky) : [];
  const json: VerificationJson = {
    mode: j.mode,
    ran: true,
    ok,
    inconclusive,
    kind: j.kind,
    command: j.command,
    scope: j.scope,
    ...(j.relatedFiles ? { related_files: j.relatedFiles } : {}),
    exit_code: j.after.exitCode,
    timed_out: j.after.timedOut,
    duration_s: Math.round(j.after.durationMs / 100) / 10,
    blocking,
    summary: appendSandboxRefusal(
      flaky.length > 0 ? `${summary} (${flaky.length} flaky)` : summary,
      ok,
      j.after.sandboxRefused,
    ),
    failures: cap(real),
    new_failures: cap(newFailures),
    pre_existing: cap(preExisting),
    ...(ok === false ? { pre_existing_only: preExistingOnly } : {}),
    ...(known.length > 0 ? { known_failures: cap(known) } : {}),
    ...(missing.length > 0 ? { missing_tests: cap(missing) } : {}),
    ...(checkpointFailures !== null && checkpointFailures > 0
      ? { checkpoint_failures: checkpointFailures, fixed: cap(fixed) }
      : {}),
    flaky: cap(flaky),
    output_tail: ok === true && flaky.length === 0 ? '' : j.after.tail.slice(-OUTPUT_TAIL_CHARS),
    ...(details.length > 0 ? { failure_details: details } : {}),
    attempts: 1,
    ...(j.reading.outputMatched !== undefined ? { output_matched: j.reading.outputMatched } : {}),
    ...(j.testsTouched.length > 0 ? { tests_touched: cap(j.testsTouched) } : {}),
    ...(j.testsWeakened.length > 0 ? { tests_weakened: cap(j.testsWeakened) } : {}),
    ...(j.reading.couldNotStart && inconclusive ? { could_not_start: true } : {}),
    ...(j.after.limit !== undefined ? { limit: j.after.limit.kind } : {}),
    ...pickSandboxRefusal(ok, j.after.sandboxRefused),
  };
  return j.original === null ? json : judgeOriginalTests(json, j.original, j.testsMayChange, baseFailed);
}

/**
 * Folds in the checkpoint's tests run against the new code (spec 03 "the checkpoint's tests judge"). For
 * a task not allowed to change tests, any non-flaky failure there blocks — whatever the mode, and also
 * when that test failed at the checkpoint too: the workers changed the tests instead of (or as well as)
 * the code, so the original version failing is the truth about the work.
 */
function judgeOriginalTests(
  json: VerificationJson,
  o: OriginalTestsRun,
  testsMayChange: boolean,
  baseFailed: Set<string>,
): VerificationJson {
  const changed = o.changed.map(describeHarnessChange);
  if (!o.ran) {
    return {
      ...json,
      original_tests: {
        ran: false,
        ok: null,
        changed: cap(changed),
        summary: o.why,
        failures: [],
        blocking: false,
        tests_may_change: testsMayChange,
      },
    };
  }
  const r = o.reading;
  const workersConclusive = json.ran && !json.inconclusive && json.ok !== null;
  // the original tests hang, stop collecting or error where the workers' tests ran: a failure of the work
  const failures =
    r.ok === false
      ? r.failures.length > 0
        ? r.failures
        : [RUNNER_ERROR]
      : r.inconclusive && workersConclusive
        ? [SUITE_DID_NOT_COMPLETE]
        : [];
  const flaky = o.flaky.filter((id) => failures.includes(id));
  const real = failures.filter((id) => !flaky.includes(id));
  const ok = real.length > 0 ? false : r.inconclusive ? null : true;
  const blocking = real.length > 0 && !testsMayChange;
  const list = changed.slice(0, 3).join(', ') + (changed.length > 3 ? ` and ${changed.length - 3} more` : '');
  const still = real.some((id) => baseFailed.has(id)) ? 'still fail' : 'fail';
  const summary =
    real.length > 0
      ? `the workers changed ${list}; with the original tests, ${real.length} ${still}: ${real.slice(0, 3).join('; ')}${real.length > 3 ? '; …' : ''}`
      : ok === null
        ? `the workers changed ${list}; the original tests did not decide (${r.summary})`
        : `the workers changed ${list}; the original tests pass too (${r.summary})`;
  const originalTests = {
    ran: true,
    ok,
    command: o.command,
    changed: cap(changed),
    summary: r.summary,
    failures: cap(real),
    ...(flaky.length > 0 ? { flaky: cap(flaky) } : {}),
    blocking,
    tests_may_change: testsMayChange,
  };
  if (!blocking) return { ...json, original_tests: originalTests };
  const union = (a: string[], b: string[]) => cap([...new Set([...a, ...b])]);
  return {
    ...json,
    ok: false,
    inconclusive: false,
    blocking: true,
    summary: `${summary}; the workers' tests: ${json.summary}`,
    failures: union(json.failures, real),
    new_failures: union(
      json.new_failures,
      real.filter((id) => !baseFailed.has(id)),
    ),
    pre_existing: union(
      json.pre_existing,
      real.filter((id) => baseFailed.has(id)),
    ),
    pre_existing_only: false,
    output_tail: json.output_tail || o.run.tail.slice(-OUTPUT_TAIL_CHARS),
    original_tests: originalTests,
  };
}

function appendSandboxRefusal(summary: string, ok: boolean | null, refused: string[] | undefined): string {
  const paths = pickSandboxRefusal(ok, refused).sandbox_refused;
  return paths === undefined ? summary : `${summary}; the sandbox refused a write to ${paths.join(', ')}`;
}

/** A failed or inconclusive run whose output shows the sandbox refused a write names that as a cause (issue 11). */
function pickSandboxRefusal(
  ok: boolean | null,
  refused: string[] | undefined,
): Pick<VerificationJson, 'sandbox_refused'> {
  return ok === true || refused === undefined || refused.length === 0 ? {} : { sandbox_refused: refused };
}

function cap(ids: string[]): string[] {
  return ids
    .slice(0, FAILURES_SHOWN)
    .map((id) => (id.length > FAILURE_CHARS ? `${id.slice(0, FAILURE_CHARS - 1)}…` : id));
}

function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1)?.slice(0, 200) ?? '';
}
