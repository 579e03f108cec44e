import { performance } from 'node:perf_hooks';
import type { Refusal, RunnerReport, StateDetection } from '../../domain/runner-report.js';
import { formatSeconds } from '../states.js';
import { substitutionError } from './attestation.js';
import type { ProviderHttpError } from './rate-limit.js';

/** Why gaffer stopped the loop itself. */
export type StopCause =
  | { kind: 'cancelled' }
  | { kind: 'timeout' }
  | { kind: 'stalled'; why: string }
  | { kind: 'stuck'; why: string }
  | { kind: 'substituted'; served: string };

/** How the run ended: before the loop (setup) or in it. */
export type RunEnd =
  | { kind: 'setup'; error: string }
  | { kind: 'loop'; cause: StopCause | null; providerError: ProviderHttpError | null; loopError: string | null };

/** What the loop counted (spec 04: from the loop itself). */
export interface LoopFacts {
  /** `performance.now()` at the start. */
  began: number;
  rounds: number;
  toolCalls: number;
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Paths written through the tools, in order (the claim). */
  filesChanged: Set<string>;
  /** `tool\0why` → refusal. */
  refusals: Map<string, Refusal>;
  modelServed: string | null;
  /** The model's last words. */
  finalText: string;
  /** The last finished round asked for tools (so the rounds ran out mid-work). */
  lastStepHadToolCalls: boolean;
  /** The session file, once saved. */
  session: string | null;
  sessionError: string | null;
  timeoutMs: number;
  maxRounds: number;
  /** Every command ran under the sandbox (false when there is none). */
  sandboxed: boolean;
}

const SUMMARY_CHARS = 1200;

function summaryOf(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > SUMMARY_CHARS ? `…${trimmed.slice(-(SUMMARY_CHARS - 1))}` : trimmed;
}

/** The runner report for a builtin worker's end (a record, never a throw). */
export function buildReport(facts: LoopFacts, end: RunEnd, detection: StateDetection | null): RunnerReport {
  const base: RunnerReport = {
    status: 'error',
    outcome: 'panic',
    exitCode: null,
    signal: null,
    timedOut: false,
    isCancelled: false,
    stopReason: 'complete',
    error: null,
    summary: summaryOf(facts.finalText),
    filesChanged: [...facts.filesChanged],
    makesClaims: true,
    rounds: facts.rounds,
    toolCalls: facts.toolCalls,
    failedCalls: facts.failedCalls,
    inputTokens: facts.inputTokens,
    outputTokens: facts.outputTokens,
    costUsd: null,
    durationMs: performance.now() - facts.began,
    session: facts.session,
    modelServed: facts.modelServed,
    detection,
    refusals: [...facts.refusals.values()],
    sandboxed: facts.sandboxed,
    // its commands run in a namespace of their own, without a network (gaffer itself calls the model)
    network: facts.sandboxed ? 'none' : 'host',
  };
  if (end.kind === 'setup') return { ...base, outcome: 'expected_error', stopReason: 'not_started', error: end.error };
  const { cause, providerError, loopError } = end;
  if (cause?.kind === 'cancelled')
    return { ...base, status: 'cancelled', outcome: 'cancelled', isCancelled: true, stopReason: 'cancelled' };
  if (cause?.kind === 'timeout')
    return {
      ...base,
      status: 'timeout',
      outcome: 'panic',
      timedOut: true,
      stopReason: 'timeout',
      error: `timed out after ${formatSeconds(facts.timeoutMs)}`,
    };
  if (cause?.kind === 'stalled')
    return { ...base, status: 'stalled', outcome: 'panic', stopReason: 'stalled', error: `stalled: ${cause.why}` };
  if (cause?.kind === 'stuck')
    return { ...base, status: 'stuck', outcome: 'panic', stopReason: 'stuck', error: `stuck: ${cause.why}` };
  if (cause?.kind === 'substituted')
    return {
      ...base,
      status: 'error',
      outcome: 'panic',
      stopReason: 'model_substituted',
      error: substitutionError(cause.served),
    };
  if (providerError?.isRateLimited === true) {
    return {
      ...base,
      status: 'rate_limited',
      outcome: 'expected_error',
      stopReason: 'rate_limited',
      error: `rate limited: the model API answered HTTP ${providerError.statusCode}${providerError.retryAfterS === null ? '' : ` (retry in ${providerError.retryAfterS} s)`}`,
      retryAfterS: providerError.retryAfterS,
    };
  }
  if (providerError !== null) {
    return {
      ...base,
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'api_error',
      error: `the model API answered HTTP ${providerError.statusCode}: ${providerError.message}`,
    };
  }
  if (loopError !== null)
    return {
      ...base,
      status: 'error',
      outcome: 'panic',
      stopReason: 'model_error',
      error: `the model call failed: ${loopError}`,
    };
  if (facts.lastStepHadToolCalls && facts.rounds >= facts.maxRounds) {
    return {
      ...base,
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'max_rounds',
      error: `stopped after ${facts.rounds} rounds (max_rounds) before a final answer`,
    };
  }
  return { ...base, status: 'done', outcome: 'success', stopReason: 'complete' };
}
