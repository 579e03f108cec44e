import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Executor } from '../../../src/engine/execution/executor.js';
import type { RunnerInput } from '../../../src/runners/contract.js';
import { ShellRunner } from '../../../src/runners/shell/shell-runner.js';
import { eventually, processesWith } from '../../reliability/helpers.js';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';

/** The cap every implementation is made with. */
export const CAP = 2;

/** The shell runner the attempts run on (a remote executor hands its key to a node, which runs its own). */
const SHELL = new ShellRunner({});

/** Resolves with the promise's value, or with `late` when it has not settled within `ms`. */
function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  return Promise.race([promise, new Promise<L>((r) => setTimeout(() => r(late), ms))]);
}

/** One attempt's input in a git workspace (a cluster hands the workspace to its node through git), its output lines collected. */
function attempt(
  workspace: string,
  command: string,
  signal: AbortSignal = new AbortController().signal,
): RunnerInput & { lines: string[] } {
  const data = tempDir('gaffer-exec-data-');
  const lines: string[] = [];
  return {
    jobId: 'jobexec00001',
    workerName: 'worker-1',
    attempt: 1,
    role: 'worker',
    instruction: command,
    workspace,
    command,
    model: null,
    timeoutMs: 60_000,
    maxRounds: 1,
    resume: null,
    files: [],
    sandbox: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    logFile: join(data, 'worker-1.log'),
    instructionFile: join(data, 'worker-1.md'),
    signal,
    lines,
    onOutput: (chunk) => lines.push(...chunk),
  };
}

/**
 * What any Executor must do (issue 12, issue 17), through `Executor` only: executor-contract.test.ts
 * runs it on the local executor and on the BullMQ one (a redis-server and a `gaffer node` of its
 * own). `make` gives an opened executor of cap `CAP`; its closing is the fixture's.
 */
export function executorContract(name: string, make: () => Promise<Executor>): void {
  describe(`${name} keeps the Executor contract`, () => {
    it('slot: at most `cap` held at once; a released slot (released twice, once) lets exactly one waiter in', async () => {
      const executor = await make();
      expect(executor.cap).toBe(CAP);
      const held = await Promise.all(Array.from({ length: CAP }, () => executor.slot()));
      const third = executor.slot();
      expect(await within(third, 200, 'waited')).toBe('waited');
      held[0]?.();
      held[0]?.();
      const got = await within(third, 1000, 'waited');
      expect(got).toBeTypeOf('function');
      expect(await within(executor.slot(), 200, 'waited')).toBe('waited');
    });

    it('slot: a waiter whose signal aborts is refused, and takes no slot with it', async () => {
      const executor = await make();
      const held = await Promise.all(Array.from({ length: CAP }, () => executor.slot()));
      const cancel = new AbortController();
      const waiting = executor.slot(cancel.signal);
      expect(
        await within(
          waiting.catch(() => 'refused'),
          200,
          'waited',
        ),
      ).toBe('waited');
      cancel.abort(new Error('job cancelled'));
      expect(
        await within(
          waiting.then(
            () => 'granted',
            (err: Error) => err.message,
          ),
          1000,
          'still waiting',
        ),
      ).toBe('job cancelled');
      held[0]?.();
      expect(await within(executor.slot(), 1000, 'waited')).toBeTypeOf('function');
    });

    it("run: a trivial shell attempt ends done with the runner's report, its output streamed and its change in the workspace", async () => {
      const executor = await make();
      const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
      const input = attempt(ws, 'echo made > made.txt; echo ran-here');
      const report = await executor.run(SHELL, input);
      expect(report, JSON.stringify(report)).toMatchObject({
        status: 'done',
        outcome: 'success',
        stopReason: 'complete',
        exitCode: 0,
        error: null,
        isCancelled: false,
      });
      expect(report.summary).toContain('ran-here');
      expect(input.lines).toContain('ran-here');
      expect(readFileSync(join(ws, 'made.txt'), 'utf8')).toBe('made\n');
    });

    it("run: the runner's failure is its report (exit code and reason), never a throw", async () => {
      const executor = await make();
      const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
      const report = await executor.run(SHELL, attempt(ws, 'echo "boom: it broke" >&2; exit 3'));
      expect(report, JSON.stringify(report)).toMatchObject({
        status: 'error',
        outcome: 'expected_error',
        stopReason: 'exit_nonzero',
        exitCode: 3,
      });
      expect(report.error).toContain('boom: it broke');
    });

    it("run: a cancel through the input's signal stops the process and ends the attempt cancelled", async () => {
      const executor = await make();
      const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
      const marker = `47.${process.pid}${Date.now() % 100_000}`;
      const cancel = new AbortController();
      const input = attempt(ws, `echo started; sleep ${marker}; echo never > late.txt`, cancel.signal);
      const running = executor.run(SHELL, input);
      await eventually(
        () => input.lines.includes('started') && processesWith(`sleep ${marker}`).length > 0,
        20_000,
        'the attempt to start',
      );
      const asked = Date.now();
      cancel.abort();
      const report = await within(running, 15_000, 'still running after 15 s');
      expect(report, JSON.stringify(report)).toMatchObject({
        status: 'cancelled',
        outcome: 'cancelled',
        isCancelled: true,
      });
      expect(Date.now() - asked).toBeLessThan(10_000);
      await eventually(() => processesWith(`sleep ${marker}`).length === 0, 5_000, 'the process to be gone');
    });
  });
}
