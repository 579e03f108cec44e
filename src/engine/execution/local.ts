import type { RunnerReport } from '../../domain/runner-report.js';
import type { Runner, RunnerInput } from '../../runners/contract.js';
import { blankReport } from '../../runners/report.js';
import { Semaphore } from '../semaphore.js';
import type { Executor } from './executor.js';

/**
 * Runs attempts through this process's runners, at most `cap` at once. The runners start their
 * processes through platform/process (the spawner process when the engine uses one), and their
 * pipes stream back as `onOutput`.
 */
export class LocalExecutor implements Executor {
  readonly cap: number;
  readonly #slots: Semaphore;

  constructor(cap: number) {
    this.cap = cap;
    this.#slots = new Semaphore(cap);
  }

  slot(signal?: AbortSignal): Promise<() => void> {
    return this.#slots.acquire(signal);
  }

  async run(runner: Runner, input: RunnerInput): Promise<RunnerReport> {
    try {
      return await runner.run(input);
    } catch (err) {
      // a runner's own bug: the worker panicked, the job goes on
      return blankReport({
        status: 'error',
        outcome: 'panic',
        stopReason: 'runner_error',
        error: `runner failed: ${err instanceof Error ? err.message : String(err)}`,
        isCancelled: false,
      });
    }
  }
}
