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
