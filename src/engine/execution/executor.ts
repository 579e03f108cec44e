import type { RunnerReport } from '../../domain/runner-report.js';
import type { Runner, RunnerInput } from '../../runners/contract.js';

/**
 * How an attempt's process runs (issue 12): here, in this process's runners (`LocalExecutor`);
 * on another machine through a queue later (issue 17). The worker cap is the executor's: an
 * attempt holds a slot only while its process runs, never while it waits (a lock, a rate limit).
 */
export interface Executor {
  /** How many attempts' processes may run at once (`workers.max_parallel`). */
  readonly cap: number;
  /** Waits for a slot; resolves to its release (idempotent); rejects when `signal` aborts first. */
  slot(signal?: AbortSignal): Promise<() => void>;
  /**
   * Runs one attempt's process to its end. Cancel is `input.signal`. Never throws for the
   * runner's own failure: a runner that throws is a `panic` report (spec 01).
   */
  run(runner: Runner, input: RunnerInput): Promise<RunnerReport>;
}
