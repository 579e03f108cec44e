import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { VerifySpec } from '../domain/request.js';
import type { VerificationJson } from '../domain/result.js';
import type { ChangeSet } from '../evidence/types.js';
import type { Snapshot } from '../domain/snapshot.js';
import type { SandboxNetwork } from '../platform/sandbox/network.js';
import type { Sandbox } from '../platform/sandbox/sandbox.js';
import { baselineKey, exportCheckpoint, whyNoBaseline } from './baseline.js';
import type { DetectedCommand } from './detect.js';
import type { TestFramework } from './parsers/types.js';
import { findHarnessChanges, withHiddenByIgnore } from './harness.js';
import { runOriginalTests } from './original-tests.js';
import { judgeVerification, knownFailureMatcher, readRun, type RunReading } from './judge.js';
import { processHooksFor, runSuite, type SuiteProcessHooks, type SuiteRun } from './run-suite.js';
import { selectRelatedTests } from './related/index.js';
import { buildSelectCommand } from './select.js';
import { findWeakenedTests } from './weakening.js';

/** Flaky: up to 3 immediate reruns of the failing tests that would count against the work (spec 03); one for a test that failed at the checkpoint too (issue 33). */
export const FLAKY_RERUNS = 3;

/** Baselines already run in this job, by (checkpoint, command, lockfile hashes). */
export type BaselineCache = Map<string, { run: SuiteRun; reading: RunReading } | null>;

/** Issue 33: each run a verification makes, as its events and the verdict name it. */
export type CheckKind = 'verification' | 'full suite' | 'baseline' | 'rerun' | 'original tests' | 'criterion';

/** One run a verification made, once it ended. */
export interface CheckRun {
  what: CheckKind;
  command: string;
  durationMs: number;
  /** How it read on its own (`1 failed, 4 passed`, `timed out after 300 s`). */
  summary: string;
}

/** Told when each run of a verification starts and ends (issue 33: where the checking time goes is seen). */
export interface CheckRunHooks {
  start(what: CheckKind, command: string): void;
  end(run: CheckRun): void;
}

/** What one verification needs. */
export interface VerifyInput {
  workspace: string;
  verify: VerifySpec;
  /**
   * What `verify: "auto"` runs, decided from the workspace as it was at the checkpoint (before any worker
   * ran), never from the tree the workers left (spec 03 "Hints from before the work"). Unused otherwise.
   */
  detected: DetectedCommand | null;
  /** The runner behind the command that runs (issue 33), read from the checkpoint's manifest; null when unknown. */
  framework?: TestFramework | null;
  scope: 'related' | 'all';
  timeoutS: number;
  expectedOutput: string | null;
  /** The checkpoint before the workers: the baseline runs on its content. */
  pre: Snapshot | null;
  /** The snapshot of the tree the workers left: the checkpoint's tests run against it when tests changed. */
  post: Snapshot | null;
  /** What the workers changed so far (full lists). */
  changes: ChangeSet;
  /** A task of the job may change tests (`tests_may_change`, or type `test`). */
  testsMayChange: boolean;
  /** Issue 33: test ids or globs declared known (the request's `verify.known_failures` and the committed hints'). */
  knownFailures: readonly string[];
  /** Issue 33: a task of the job changes code: a test failing at the checkpoint that still fails is the job's to fix. */
  ownsCheckpointFailures: boolean;
  /** Where this verification's logs and the baseline copy go. */
  workDir: string;
  /** A label for the log names (`0`, `1`, … per round). */
  label: string;
  cache: BaselineCache;
  signal: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Run under the sandbox when the workers ran sandboxed: the engine's, or true for bubblewrap under `auto`. */
  sandbox?: boolean | Sandbox;
  /** The network of every run under the sandbox (config `network.verification`); default `none`. */
  network?: SandboxNetwork;
  /** The full suite runs once after a related run that passes (config `verification.confirm_full_suite`): that run is held to the checkpoint's. */
  fullSuiteFollows?: boolean;
  /** Told when each run starts and ends (the verification, the baseline, the original tests, each rerun). */
  onRun?: CheckRunHooks;
  /** Told of every run's process group (the verification, baseline, original tests, reruns) while it lives. */
  processes?: SuiteProcessHooks;
  /** The job's own workspace when `workspace` is a worktree or a merged tree: only its dependency folders are bound (run-suite.ts). */
  dependencyRoot?: string;
}

const NO_RUNNER = 'no test runner detected at the checkpoint — give `verify` a command that proves the task';

/**
 * Runs the verification in the workspace, and — when it failed, was inconclusive, or tests were
 * touched — the same command on the checkpoint's content; then flaky reruns; when the workers changed
 * tests or the harness, the checkpoint's tests against the new code; then the judgement.
 */
export async function verifyWork(input: VerifyInput): Promise<VerificationJson> {
  if (input.verify.mode === 'off') return notRun('off', 'verification is off (verify: none)');
  const detected =
    input.verify.mode === 'command'
      ? { command: input.verify.command, kind: 'command', mode: 'command' as const }
      : input.detected;
  if (detected === null) return notRun('auto', NO_RUNNER);
  const kind = detected.mode === 'command' ? null : detected.kind;
  const changedPaths = [...input.changes.added, ...input.changes.modified, ...input.changes.deleted].sort();
  // spec 03: scope applies to auto-detected runners only; an explicit command runs exactly as given
  const scoped = async (workspace: string, paths: string[]) => {
    if (detected.mode === 'command') return { command: detected.command, scope: null, relatedFiles: undefined };
    if (input.scope !== 'related') return { command: detected.command, scope: 'all' as const, relatedFiles: undefined };
    const related = await selectRelatedTests({
      workspace,
      kind: detected.kind,
      command: detected.command,
      changedPaths: paths,
    });
    return related.scope === 'related'
      ? { command: related.selection.command, scope: 'related' as const, relatedFiles: related.selection.relatedFiles }
      : { command: detected.command, scope: 'all' as const, relatedFiles: undefined };
  };
  const { command, scope, relatedFiles } = await scoped(input.workspace, changedPaths);

  const suite = async (cwd: string, command: string, log: string, what: CheckKind): Promise<SuiteRun> => {
    // the confirming run of the full suite after related tests passed is named as such
    const named = what === 'verification' && input.label.endsWith('full') ? 'full suite' : what;
    input.onRun?.start(named, command);
    const run = await runSuiteAs(cwd, command, log);
    input.onRun?.end({ what: named, command, durationMs: run.durationMs, summary: readingOf(run).summary });
    return run;
  };
  const runSuiteAs = (cwd: string, command: string, log: string) =>
    runSuite({
      command,
      cwd,
      kind,
      framework: input.framework ?? null,
      timeoutMs: input.timeoutS * 1000,
      signal: input.signal,
      logFile: join(input.workDir, log),
      expectedOutput: input.expectedOutput,
      ...(input.env ? { env: input.env } : {}),
      ...(input.sandbox ? { sandbox: input.sandbox } : {}),
      ...(input.network ? { network: input.network } : {}),
      dependencyRoot: input.dependencyRoot ?? input.workspace,
      ...processHooksFor(input.processes, log.replace(/\.log$/, '')),
    });
  const readingOf = (run: SuiteRun) =>
    readRun(run, { kind, timeoutS: input.timeoutS, expectedOutput: input.expectedOutput });

  const after = await suite(input.workspace, command, `verification-${input.label}.log`, 'verification');
  const reading = readingOf(after);
  const harness = withHiddenByIgnore(
    await findHarnessChanges(input.changes, input.pre, input.workspace),
    input.changes,
    input.post,
  );
  const testsTouched = harness.map((h) => h.path);

  // issue 33: a passing run is held against the checkpoint's too: a test that ran there and not here is a
  // failure (a related run that passes is held by the full suite's run that follows it)
  const heldLater = scope === 'related' && input.fullSuiteFollows === true;
  const needsBaseline =
    !input.signal.aborted &&
    (reading.ok === false || reading.inconclusive || harness.length > 0 || (listsTests(after) && !heldLater));
  const baseline = needsBaseline
    ? await runBaseline(
        input,
        command,
        (cwd) => suite(cwd, command, `baseline-${input.label}.log`, 'baseline'),
        readingOf,
      )
    : null;

  // every failure that would count against the work is rerun by its id: one that passes is flaky, not the job's
  const before = new Set(baseline?.reading.failures ?? []);
  const isKnown = knownFailureMatcher(input.knownFailures);
  const answersFor = (id: string) => !before.has(id) || input.ownsCheckpointFailures || input.verify.mode === 'command';
  const candidates =
    reading.ok === false ? reading.failures.filter((id) => !id.startsWith('<') && !isKnown(id) && answersFor(id)) : [];
  // one that failed at the checkpoint too has failed twice already: one rerun tells a flaky test from it
  const flaky = await findFlaky(
    input,
    after,
    candidates,
    (command, i) => suite(input.workspace, command, `rerun-${input.label}-${i}.log`, 'rerun'),
    before,
  );
  const testsWeakened = baseline && harness.length > 0 ? findWeakenedTests(baseline.run.parsed, after.parsed) : [];

  const sourceChanged = changedPaths.filter((p) => !testsTouched.includes(p));
  const original =
    harness.length > 0 && input.post !== null && !input.signal.aborted
      ? await runOriginalTests({
          pre: input.pre,
          post: input.post,
          changed: harness,
          dir: join(input.workDir, `original-tests-${input.label}`),
          signal: input.signal,
          commandIn: async (cwd) => (await scoped(cwd, sourceChanged)).command,
          run: (cwd, command) => suite(cwd, command, `original-tests-${input.label}.log`, 'original tests'),
          readingOf,
          flakyIn: (cwd, run, candidates) =>
            findFlaky({ ...input, workspace: cwd }, run, candidates, (command, i) =>
              suite(cwd, command, `original-rerun-${input.label}-${i}.log`, 'rerun'),
            ),
        })
      : null;

  return judgeVerification({
    mode: detected.mode,
    kind: detected.mode === 'command' ? 'command' : detected.kind,
    command,
    scope,
    ...(relatedFiles ? { relatedFiles } : {}),
    after,
    reading,
    baseline,
    flaky,
    testsTouched,
    testsWeakened,
    original,
    testsMayChange: input.testsMayChange,
    knownFailures: input.knownFailures,
    ownsCheckpointFailures: input.ownsCheckpointFailures,
  });
}

/** The run names the tests it ran, or counts them: what the checkpoint's run can be held against. */
function listsTests(run: SuiteRun): boolean {
  const p = run.parsed;
  return p.passed.length + p.failed.length > 0 || (p.counts !== null && p.counts.passed + p.counts.failed > 0);
}

async function runBaseline(
  input: VerifyInput,
  command: string,
  run: (cwd: string) => Promise<SuiteRun>,
  readingOf: (run: SuiteRun) => RunReading,
): Promise<{ run: SuiteRun; reading: RunReading } | null> {
  if (whyNoBaseline(input.pre) !== null || input.pre === null) return null;
  const key = baselineKey(input.pre, command, input.workspace);
  if (input.cache.has(key)) return input.cache.get(key) ?? null;
  const dir = join(input.workDir, `baseline-${key}`);
  let result: { run: SuiteRun; reading: RunReading } | null = null;
  try {
    await exportCheckpoint(input.pre, join(dir, 'ws'));
    const baselineRun = await run(join(dir, 'ws'));
    result = { run: baselineRun, reading: readingOf(baselineRun) };
  } catch {
    result = null; // a baseline that cannot be made leaves every failure new (the conservative side)
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // a cancelled baseline says nothing: do not keep it
  if (!input.signal.aborted) input.cache.set(key, result);
  return result;
}

/**
 * Failing ids that pass on any of up to 3 targeted reruns (spec 03 "Flaky"): an id is flaky only when
 * a rerun lists that very id as passed — never because the rerun exited 0.
 */
export async function findFlaky(
  input: Pick<VerifyInput, 'signal' | 'workspace'>,
  run: SuiteRun,
  failing: string[],
  rerun: (command: string, i: number) => Promise<SuiteRun>,
  /** Ids rerun once only (they failed at the checkpoint too). */
  rerunOnce: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  let candidates = failing;
  if (candidates.length === 0 || input.signal.aborted) return [];
  const flaky: string[] = [];
  for (let i = 1; i <= FLAKY_RERUNS && candidates.length > 0 && !input.signal.aborted; i++) {
    const command = buildSelectCommand(run.parsed.framework, run.command, candidates, { workspace: input.workspace });
    if (command === null) break;
    const again = await rerun(command, i);
    if (again.timedOut || again.isCancelled || again.cause !== null) break;
    const passed = new Set(again.parsed.passed);
    const failedAgain = new Set(again.parsed.failed);
    const nowPassing = candidates.filter((id) => passed.has(id) && !failedAgain.has(id));
    flaky.push(...nowPassing);
    candidates = candidates.filter((id) => !nowPassing.includes(id) && !rerunOnce.has(id));
  }
  return flaky;
}

function notRun(mode: VerificationJson['mode'], summary: string): VerificationJson {
  return {
    mode,
    ran: false,
    ok: null,
    inconclusive: false,
    kind: null,
    command: null,
    scope: null,
    exit_code: null,
    timed_out: false,
    duration_s: 0,
    blocking: false,
    summary,
    failures: [],
    new_failures: [],
    pre_existing: [],
    flaky: [],
    output_tail: '',
    attempts: 0,
  };
}
