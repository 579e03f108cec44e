import { GafferError } from '../domain/errors.js';
import type { RunnerReport } from '../domain/runner-report.js';
import { describeLimitHit } from '../platform/process/limits.js';
import type { ProcessResult } from '../platform/process/run-process.js';

/**
 * A report with nothing counted yet: no process facts, no tokens, no claims. Runners and the engine
 * build every worker's end from it, overriding what they know.
 */
export function blankReport(
  overrides: Partial<RunnerReport> & Pick<RunnerReport, 'status' | 'outcome' | 'stopReason'>,
): RunnerReport {
  return {
    exitCode: null,
    signal: null,
    timedOut: false,
    isCancelled: false,
    error: null,
    summary: '',
    filesChanged: [],
    makesClaims: false,
    rounds: 0,
    toolCalls: 0,
    failedCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: null,
    durationMs: 0,
    session: null,
    modelServed: null,
    detection: null,
    refusals: [],
    sandboxed: false,
    ...overrides,
  };
}

/** The process facts of a run (exit, signal, timeout, cancel, duration) as report fields. */
export function processFacts(
  result: ProcessResult | null,
): Pick<RunnerReport, 'exitCode' | 'signal' | 'timedOut' | 'isCancelled' | 'durationMs'> {
  return {
    exitCode: result?.exitCode ?? null,
    signal: result?.signal ?? null,
    timedOut: result?.timedOut ?? false,
    isCancelled: result?.isCancelled ?? false,
    durationMs: result?.durationMs ?? 0,
  };
}

/**
 * A run a limit ended (issue 11): `error`, and the stop reason naming which limit, or null when
 * none did. Its state says so in words ("ended by the process-count limit (1024)").
 */
export function limitEnd(
  result: ProcessResult,
): Pick<RunnerReport, 'status' | 'outcome' | 'stopReason' | 'error' | 'limit'> | null {
  if (result.limitHit === null) return null;
  return {
    status: 'error',
    outcome: 'panic',
    stopReason: result.limitHit === 'processes' ? 'process_limit' : 'memory_limit',
    error: describeLimitHit(result.limitHit, result.limits),
    limit: result.limitHit,
  };
}

/** A local runner (shell, builtin) the config turned off (`runners.<key>.enabled: false`): what keeps it off, and how to turn it on. */
export interface LocalSwitch {
  /** Default true. */
  enabled?: boolean;
  /** What keeps it off (the config key and where it was set); default `runners.<key>.enabled`. */
  disabledBy?: string | null;
}

const disabledWords = (key: string, switched: LocalSwitch): string =>
  `${key} is disabled by ${switched.disabledBy ?? `runners.${key}.enabled`} — set runners.${key}.enabled: true in gaffer.config.json to use it`;

/** Refuses a task naming a runner the config turned off, before anything starts (`field` names where the runner came from). */
export function refuseIfDisabled(key: string, switched: LocalSwitch, field: string): void {
  if (switched.enabled === false)
    throw new GafferError('runner_disabled', `${field}: ${disabledWords(key, switched)}`, field);
}

/** The report of a run a runner the config turned off did not start. */
export function disabledReport(key: string, switched: LocalSwitch): RunnerReport {
  return blankReport({
    status: 'refused',
    outcome: 'expected_error',
    stopReason: 'runner_disabled',
    error: disabledWords(key, switched),
  });
}
