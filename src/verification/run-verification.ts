import { runProcess } from '../runners/process/run-process.js';
import { buildWorkerEnv } from '../runners/process/env.js';
import type { VerifySpec } from '../domain/request.js';
import type { VerificationJson } from '../domain/result.js';
import { detectTestCommand } from './detect.js';

export const OUTPUT_TAIL_CHARS = 1_500;

/** What one verification run needs. */
export interface VerificationInput {
  workspace: string;
  verify: VerifySpec;
  scope: 'related' | 'all';
  timeoutS: number;
  expectedOutput: string | null;
  logFile: string;
  signal: AbortSignal;
  onSpawn?: (info: { pgid: number; startedAt: number }) => void;
}

const NO_RUNNER = 'no test runner detected — give `verify` a command that proves the task';

/** Runs the job's verification in the workspace and judges it (spec 03 "Verification"). */
export async function runVerification(input: VerificationInput): Promise<VerificationJson> {
  if (input.verify.mode === 'off') return notRun('off', 'verification is off (verify: none)');
  const detected =
    input.verify.mode === 'command'
      ? { command: input.verify.command, kind: 'command', mode: 'command' as const }
      : detectTestCommand(input.workspace);
  if (detected === null) return notRun('auto', NO_RUNNER);

  // the landmark may scroll out of the bounded tail: look for it in every line as it streams
  let landmarkSeen = false;
  const landmark = input.expectedOutput;
  const result = await runProcess({
    shellCommand: detected.command,
    cwd: input.workspace,
    // spec 03: comparable runs
    env: { ...buildWorkerEnv(process.env), CI: 'true', TZ: 'UTC', PYTHONHASHSEED: '0' },
    timeoutMs: input.timeoutS * 1000,
    signal: input.signal,
    logFile: input.logFile,
    ...(input.onSpawn ? { onSpawn: input.onSpawn } : {}),
    ...(landmark !== null ? { onOutput: (lines: string[]) => (landmarkSeen ||= lines.some((l) => l.includes(landmark))) } : {}),
  });

  const tail = result.tail.slice(-OUTPUT_TAIL_CHARS);
  const base: VerificationJson = {
    mode: detected.mode,
    ran: true,
    ok: null,
    inconclusive: false,
    kind: detected.kind,
    command: detected.command,
    // related scope comes with the test-id parsers; until then everything runs
    scope: input.verify.mode === 'command' ? null : 'all',
    exit_code: result.exitCode,
    timed_out: result.timedOut,
    duration_s: round1(result.durationMs / 1000),
    blocking: false,
    summary: '',
    failures: [],
    new_failures: [],
    pre_existing: [],
    flaky: [],
    output_tail: tail,
    attempts: 1,
  };

  if (result.isCancelled) return { ...base, inconclusive: true, summary: 'cancelled before it finished' };
  if (result.timedOut) return { ...base, inconclusive: true, summary: `timed out after ${input.timeoutS} s` };
  if (result.cause !== null) return { ...base, inconclusive: true, summary: `could not start: ${result.cause}` };
  // sh says 127 when the command is not found, 126 when it cannot be executed
  if (result.exitCode === 127 || result.exitCode === 126) {
    return { ...base, inconclusive: true, summary: `the command could not run (exit ${result.exitCode}): ${lastLine(tail)}` };
  }
  if (result.exitCode === null) {
    return { ...base, inconclusive: true, summary: `killed by ${result.signal ?? 'a signal'}` };
  }

  const matched = landmark === null ? undefined : landmarkSeen || result.tail.includes(landmark);
  if (result.exitCode === 0 && matched !== false) {
    // a pass needs no output to read: the compact answer stays small (spec 03: ~400 tokens clean)
    return { ...base, ok: true, summary: 'exit 0', output_tail: '', ...(matched !== undefined ? { output_matched: matched } : {}) };
  }
  const summary =
    result.exitCode === 0 ? `exit 0 but the output lacks "${input.expectedOutput ?? ''}"` : `exit ${result.exitCode}`;
  return { ...base, ok: false, summary, ...(matched !== undefined ? { output_matched: matched } : {}) };
}

/** A conclusive failure blocks `done`; until the baseline exists every conclusive failure does. */
export function judgeBlocking(v: VerificationJson): VerificationJson {
  const blocking = v.ran && !v.inconclusive && v.ok === false;
  return { ...v, blocking, new_failures: blocking ? v.failures : v.new_failures };
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

function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1)?.slice(0, 200) ?? '';
}

const round1 = (n: number) => Math.round(n * 10) / 10;
