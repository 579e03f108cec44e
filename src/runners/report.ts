import type { RunnerReport } from './contract.js';
import type { ProcessResult } from './process/run-process.js';

/**
 * A report with nothing counted yet: no process facts, no tokens, no claims. Runners and the engine
 * build every worker's end from it, overriding what they know.
 */
export function blankReport(overrides: Partial<RunnerReport> & Pick<RunnerReport, 'status' | 'outcome' | 'stopReason'>): RunnerReport {
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
export function processFacts(result: ProcessResult | null): Pick<RunnerReport, 'exitCode' | 'signal' | 'timedOut' | 'isCancelled' | 'durationMs'> {
  return {
    exitCode: result?.exitCode ?? null,
    signal: result?.signal ?? null,
    timedOut: result?.timedOut ?? false,
    isCancelled: result?.isCancelled ?? false,
    durationMs: result?.durationMs ?? 0,
  };
}
