import { dirname } from 'node:path';
import type { Runner, RunnerInput } from '../contract.js';
import type { RunnerReport, StateDetection } from '../../domain/runner-report.js';
import { buildWorkerEnv } from '../../platform/process/env.js';
import { makeFolder, writeNewFile } from '../../platform/files/spare-entries.js';
import { runProcess, type ProcessResult } from '../../platform/process/run-process.js';
import { classifyOutput, detectIdlePrompt, formatSeconds, isSameDetection } from '../states.js';
import { blankReport, disabledReport, limitEnd, processFacts, refuseIfDisabled, type LocalSwitch } from '../report.js';
import { NO_NETWORK, type SandboxNetwork } from '../../platform/sandbox/network.js';
import { isRefused, type Sandbox } from '../../platform/sandbox/sandbox.js';

/** Options of the shell runner. */
export interface ShellRunnerOptions extends LocalSwitch {
  /** Output ending mid-line with nothing after it for this long reads as a prompt, ms (default 10000). */
  idlePromptMs?: number;
  /** Between SIGTERM and SIGKILL on timeout/cancel, ms (default 3000). */
  graceMs?: number;
  /** Log caps, bytes (defaults 64 KiB head, 10 MiB tail). */
  logHeadBytes?: number;
  logTailBytes?: number;
  /** The engine's sandbox, used when `input.sandbox` is true (platform/sandbox/sandbox.ts); none: every run as it is. */
  sandbox?: Sandbox;
  /** Each run's network in the sandbox; default `none`. */
  network?: SandboxNetwork;
}

const SUMMARY_CHARS = 600;
const ERROR_LINE_CHARS = 300;

/** The `shell` runner (spec 04): the task's command, or the instruction itself, through `sh -c`. */
export class ShellRunner implements Runner {
  readonly key = 'shell';
  readonly canResume = false;
  readonly #opts: ShellRunnerOptions;

  constructor(opts: ShellRunnerOptions = {}) {
    this.#opts = opts;
  }

  /** True when a run would be wrapped in the sandbox: one is installed and bubblewrap works here. */
  get sandboxed(): boolean {
    return this.#opts.sandbox?.works ?? false;
  }

  /** Config `runners.shell.enabled` (default true). */
  get enabled(): boolean {
    return this.#opts.enabled !== false;
  }

  get disabledBy(): string | null {
    return this.enabled ? null : (this.#opts.disabledBy ?? 'runners.shell.enabled');
  }

  /** Refuses every task while the config turns it off. */
  vet(_task: { model: string | null; endpoint?: string }, field: string): void {
    refuseIfDisabled(this.key, this.#opts, field);
  }

  /** Runs one shell worker to its end; never throws. */
  async run(input: RunnerInput): Promise<RunnerReport> {
    if (!this.enabled) return disabledReport(this.key, this.#opts);
    const shellCommand = input.command ?? input.instruction;
    const env: NodeJS.ProcessEnv = { ...buildWorkerEnv(input.env), GAFFER_INSTRUCTION_FILE: input.instructionFile };
    try {
      makeFolder(dirname(input.instructionFile));
      writeNewFile(input.instructionFile, input.instruction);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return spawnFailedReport(`cannot write the instruction file ${input.instructionFile}: ${why}`);
    }

    const wrapped =
      input.sandbox && this.#opts.sandbox !== undefined
        ? this.#opts.sandbox.wrap({
            shellCommand,
            workspace: input.workspace,
            readable: [input.instructionFile],
            network: this.#opts.network ?? NO_NETWORK,
          })
        : null;
    if (wrapped !== null && isRefused(wrapped))
      return {
        ...baseReport(null),
        status: 'refused',
        outcome: 'expected_error',
        stopReason: 'sandbox_unavailable',
        error: wrapped.refused,
      };

    let detection: StateDetection | null = null;
    const report = (next: StateDetection | null): void => {
      if (next === null || isSameDetection(next, detection)) return;
      detection = next;
      input.onState?.(next);
    };
    const idleMs = this.#opts.idlePromptMs ?? 10_000;
    let idleTimer: NodeJS.Timeout | null = null;
    const onTail = (tail: string): void => {
      if (idleTimer !== null) clearTimeout(idleTimer);
      idleTimer = null;
      report(classifyOutput(tail));
      if (tail !== '' && !tail.endsWith('\n')) {
        // stdin is /dev/null, so most prompts end at once; this catches one that waits anyway
        idleTimer = setTimeout(() => report(detectIdlePrompt(tail, idleMs)), idleMs);
        idleTimer.unref();
      }
    };

    const result = await runProcess({
      ...(wrapped === null ? { shellCommand } : { argv: wrapped.argv }),
      cwd: input.workspace,
      env,
      timeoutMs: input.timeoutMs,
      signal: input.signal,
      graceMs: this.#opts.graceMs,
      logFile: input.logFile,
      logHeadBytes: this.#opts.logHeadBytes,
      logTailBytes: this.#opts.logTailBytes,
      onOutput: input.onOutput,
      onTail,
      onSpawn: input.onSpawn,
    });
    if (idleTimer !== null) clearTimeout(idleTimer);
    report(classifyOutput(result.tail, { exitCode: result.exitCode }));
    return {
      ...toReport(result, input.timeoutMs, detection, wrapped?.sandboxed ?? false),
      network: wrapped?.network ?? 'host',
    };
  }
}

function lastLine(text: string): string {
  const lines = text.trimEnd().split('\n');
  const line = (lines[lines.length - 1] ?? '').trim();
  return line.length > ERROR_LINE_CHARS ? `${line.slice(0, ERROR_LINE_CHARS)}…` : line;
}

function baseReport(result: ProcessResult | null): RunnerReport {
  const summary = (result?.tail ?? '').trim();
  return blankReport({
    status: 'error',
    outcome: 'panic',
    stopReason: 'spawn_failed',
    ...processFacts(result),
    summary: summary.slice(-SUMMARY_CHARS).trimStart(),
  });
}

function spawnFailedReport(error: string): RunnerReport {
  return { ...baseReport(null), error };
}

/** Maps how the process ended to the runner report (spec 04 `shell`: exit 0 = done). */
function toReport(
  result: ProcessResult,
  timeoutMs: number,
  detection: StateDetection | null,
  sandboxed: boolean,
): RunnerReport {
  const base = { ...baseReport(result), detection, sandboxed };
  const survivors = result.isGroupGone ? '' : ' (some of its processes survived SIGKILL)';
  if (result.cause !== null && !result.isCancelled) {
    return { ...base, status: 'error', outcome: 'panic', stopReason: 'spawn_failed', error: result.cause };
  }
  if (result.isCancelled) {
    return {
      ...base,
      status: 'cancelled',
      outcome: 'cancelled',
      stopReason: 'cancelled',
      error: survivors === '' ? null : `cancelled${survivors}`,
    };
  }
  const limited = limitEnd(result);
  if (limited !== null) return { ...base, ...limited, error: `${limited.error ?? ''}${survivors}` };
  if (result.timedOut) {
    return {
      ...base,
      status: 'timeout',
      outcome: 'panic',
      stopReason: 'timeout',
      error: `timed out after ${formatSeconds(timeoutMs)}${survivors}`,
    };
  }
  if (result.signal !== null) {
    return {
      ...base,
      status: 'error',
      outcome: 'panic',
      stopReason: 'signal',
      error: `killed by ${result.signal}${survivors}`,
    };
  }
  if (result.exitCode === 0) {
    return { ...base, status: 'done', outcome: 'success', stopReason: 'complete', error: null };
  }
  const line = lastLine(result.tail);
  return {
    ...base,
    status: 'error',
    outcome: 'expected_error',
    stopReason: 'exit_nonzero',
    error: `exit code ${result.exitCode ?? 'unknown'}${line === '' ? '' : `: ${line}`}`,
  };
}
