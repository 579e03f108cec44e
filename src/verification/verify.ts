import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { VerifySpec } from '../domain/request.js';
import type { VerificationJson } from '../domain/result.js';
import type { Snapshot } from '../evidence/types.js';
import { baselineKey, exportCheckpoint, whyNoBaseline } from './baseline.js';
import { detectTestCommand } from './detect.js';
import { judgeVerification, readRun, type RunReading } from './judge.js';
import { runSuite, type SuiteRun } from './run-suite.js';
import { selectRelatedTests } from './related.js';
import { buildSelectCommand } from './select.js';
import { findTestsTouched, findWeakenedTests } from './weakening.js';

/** Flaky: up to 3 immediate reruns of just the new failing tests (spec 03). */
export const FLAKY_RERUNS = 3;

/** Baselines already run in this job, by (checkpoint, command, lockfile hashes). */
export type BaselineCache = Map<string, { run: SuiteRun; reading: RunReading } | null>;

/** What one verification needs. */
export interface VerifyInput {
  workspace: string;
  verify: VerifySpec;
  scope: 'related' | 'all';
  timeoutS: number;
  expectedOutput: string | null;
  /** The checkpoint before the workers: the baseline runs on its content. */
  pre: Snapshot | null;
  /** Paths the workers changed so far. */
  changedPaths: string[];
  /** Where this verification's logs and the baseline copy go. */
  workDir: string;
  /** A label for the log names (`0`, `1`, … per round). */
  label: string;
  cache: BaselineCache;
  signal: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Run under the sandbox (true when the workers ran sandboxed). */
  sandbox?: boolean;
}

const NO_RUNNER = 'no test runner detected — give `verify` a command that proves the task';

/**
 * Runs the verification in the workspace, and — when it failed, was inconclusive, or tests were
 * touched — the same command on the checkpoint's content; then flaky reruns; then the judgement.
 */
export async function verifyWork(input: VerifyInput): Promise<VerificationJson> {
  if (input.verify.mode === 'off') return notRun('off', 'verification is off (verify: none)');
  const detected =
    input.verify.mode === 'command'
      ? { command: input.verify.command, kind: 'command', mode: 'command' as const }
      : detectTestCommand(input.workspace);
  if (detected === null) return notRun('auto', NO_RUNNER);
  const kind = detected.mode === 'command' ? null : detected.kind;
  // spec 03: scope applies to auto-detected runners only; an explicit command runs exactly as given
  let command = detected.command;
  let scope: 'related' | 'all' | null = null;
  let relatedFiles: string[] | undefined;
  if (detected.mode !== 'command') {
    scope = 'all';
    if (input.scope === 'related') {
      const related = await selectRelatedTests({ workspace: input.workspace, kind: detected.kind, command, changedPaths: input.changedPaths });
      if (related.scope === 'related') {
        scope = 'related';
        command = related.selection.command;
        relatedFiles = related.selection.relatedFiles;
      }
    }
  }

  const suite = (cwd: string, command: string, log: string) =>
    runSuite({
      command,
      cwd,
      kind,
      timeoutMs: input.timeoutS * 1000,
      signal: input.signal,
      logFile: join(input.workDir, log),
      expectedOutput: input.expectedOutput,
      ...(input.env ? { env: input.env } : {}),
      ...(input.sandbox ? { sandbox: true } : {}),
    });
  const readingOf = (run: SuiteRun) => readRun(run, { kind, timeoutS: input.timeoutS, expectedOutput: input.expectedOutput });

  const after = await suite(input.workspace, command, `verification-${input.label}.log`);
  const reading = readingOf(after);
  const testsTouched = findTestsTouched(input.changedPaths);

  const needsBaseline = !input.signal.aborted && (reading.ok === false || reading.inconclusive || testsTouched.length > 0);
  const baseline = needsBaseline ? await runBaseline(input, command, (cwd) => suite(cwd, command, `baseline-${input.label}.log`), readingOf) : null;

  const flaky = await findFlaky(input, after, reading, baseline, (command, i) => suite(input.workspace, command, `rerun-${input.label}-${i}.log`));
  const testsWeakened = baseline && testsTouched.length > 0 ? findWeakenedTests(baseline.run.parsed, after.parsed) : [];

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
  });
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

/** New failing ids that pass on any of up to 3 targeted reruns. */
async function findFlaky(
  input: VerifyInput,
  after: SuiteRun,
  reading: RunReading,
  baseline: { reading: RunReading } | null,
  rerun: (command: string, i: number) => Promise<SuiteRun>,
): Promise<string[]> {
  if (reading.ok !== false || input.signal.aborted) return [];
  const before = new Set(baseline?.reading.failures ?? []);
  let candidates = reading.failures.filter((id) => !before.has(id) && !id.startsWith('<'));
  const command = buildSelectCommand(after.parsed.framework, after.command, candidates, { workspace: input.workspace });
  if (candidates.length === 0 || command === null) return [];
  const flaky: string[] = [];
  for (let i = 1; i <= FLAKY_RERUNS && candidates.length > 0 && !input.signal.aborted; i++) {
    const again = await rerun(buildSelectCommand(after.parsed.framework, after.command, candidates, { workspace: input.workspace }) ?? command, i);
    if (again.timedOut || again.isCancelled || again.cause !== null) break;
    const passed = new Set(again.parsed.passed);
    const failedAgain = new Set(again.parsed.failed);
    // an id passes when the rerun lists it as passed, or ran cleanly and names no failure at all
    const cleanRun = again.exitCode === 0 && again.parsed.failed.length === 0 && again.parsed.ranSignal;
    const nowPassing = candidates.filter((id) => passed.has(id) || (cleanRun && !failedAgain.has(id)));
    flaky.push(...nowPassing);
    candidates = candidates.filter((id) => !nowPassing.includes(id));
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
