import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GafferError } from '../../src/domain/errors.js';
import type { RunnerReport } from '../../src/domain/runner-report.js';
import { wireResultSchema } from '../../src/engine/execution/wire.js';
import type { Runner, RunnerInput } from '../../src/runners/contract.js';
import { blankReport } from '../../src/runners/report.js';
import { eventually, processesWith } from '../reliability/helpers.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { liveGroupMembers } from './helpers.js';

/** One runner set up for the contract. */
export interface RunnerFixture {
  /** The runner as an engine would have it, set up to work (an endpoint, enabled). */
  runner: Runner;
  /** Its registry key (runners/index.ts). */
  key: string;
  /** A model-driven agent (builtin, the agent CLIs): it is given gaffer's handoff prompt. */
  agent: boolean;
  /** The same runner set up so it cannot work (no endpoint, disabled), a task it must refuse then, and the refusal's code; absent: it has no `vet` and takes every task. */
  refusing?: { runner: Runner; task: { model: string | null; endpoint?: string }; code: string };
  /** A task the working runner can do, as `vet` sees it. */
  task: { model: string | null; endpoint?: string };
  /** The input fields of an attempt that writes `made.txt` holding `made\n` in `ws` and ends. */
  edit(ws: string): Partial<RunnerInput>;
  /**
   * The input fields of an attempt that runs until it is cancelled; `marker`: a process whose command
   * line holds it runs meanwhile (false: the runner's own process group, told through `onSpawn`, is the one to stop).
   */
  long(ws: string, marker: string): { input: Partial<RunnerInput>; marker: boolean };
}

/** One attempt's input in `ws`, logs in a data dir of its own, output lines collected. */
function inputOf(ws: string, fields: Partial<RunnerInput>): RunnerInput & { lines: string[]; spawned: number[] } {
  const data = tempDir('gaffer-runner-data-');
  const lines: string[] = [];
  const spawned: number[] = [];
  return {
    jobId: 'jobrunner001',
    workerName: 'worker-1',
    attempt: 1,
    role: 'worker',
    instruction: 'Create made.txt containing the word made.',
    workspace: ws,
    command: null,
    model: null,
    timeoutMs: 120_000,
    maxRounds: 10,
    resume: null,
    files: [],
    sandbox: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: data },
    logFile: join(data, 'logs', 'worker-1.log'),
    instructionFile: join(data, 'instructions', 'worker-1.md'),
    signal: new AbortController().signal,
    lines,
    spawned,
    onOutput: (chunk) => lines.push(...chunk),
    onSpawn: (info) => spawned.push(info.pgid),
    ...fields,
  };
}

/** The report's fields, types and words as spec 04 has them: every field `blankReport` gives, each of its kind, and agreeing with each other. */
function expectWellFormed(report: RunnerReport): void {
  const context = JSON.stringify(report);
  expect(Object.keys(report), context).toEqual(
    expect.arrayContaining(Object.keys(blankReport({ status: 'done', outcome: 'success', stopReason: 'complete' }))),
  );
  // the wire's schema of a report (what a node may send): the runner's fields only, each of its type
  const parsed = wireResultSchema.shape.report.strict().safeParse(report);
  expect(
    parsed.success,
    `${context}: ${parsed.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
  ).toBe(true);
  expect(report.stopReason, context).toMatch(/^[a-z_]+$/);
  expect(report.durationMs, context).toBeGreaterThan(0);
  expect(report.status === 'done', context).toBe(report.outcome === 'success');
  expect(report.isCancelled, context).toBe(report.status === 'cancelled');
  if (report.status === 'done') expect(report.error, context).toBeNull();
  else expect(report.error ?? report.stopReason, context).not.toBe('');
  if (!report.makesClaims) expect(report.filesChanged, context).toEqual([]);
  for (const f of report.filesChanged)
    expect(f.startsWith('/') || f.split('/').includes('..'), `${f} is not relative to the workspace`).toBe(false);
}

/**
 * What every runner must do (spec 04 "The runner contract"), through `Runner` only:
 * runner-contract.test.ts runs it on shell, builtin (against the scripted model server) and each
 * agent CLI that is installed. `make` gives a fixture; whatever it started is the test file's to stop.
 */
export function runnerContract(
  name: string,
  make: () => Promise<RunnerFixture>,
  opts: { timeoutMs?: number } = {},
): void {
  const timeout = opts.timeoutMs ?? 30_000;
  describe(`${name} keeps the runner contract`, () => {
    it('says what it is: its registry key, and whether it takes the handoff prompt', async () => {
      const fixture = await make();
      expect(fixture.runner.key).toBe(fixture.key);
      expect(typeof fixture.runner.canResume).toBe('boolean');
      expect(fixture.runner.takesPrompt === true).toBe(fixture.agent);
      for (const flag of [
        fixture.runner.sharesWorkspace,
        fixture.runner.external,
        fixture.runner.takesInput,
        fixture.runner.sandboxed,
      ])
        expect(['boolean', 'undefined']).toContain(typeof flag);
      // a third-party agent is never the shell or the builtin agent (spec 04: its unsandboxed run costs the proof)
      if (fixture.runner.external === true) expect(fixture.agent).toBe(true);
    });

    it('vet: takes a task it can do; set up so it cannot work, refuses before anything starts with a GafferError naming the field', async () => {
      const fixture = await make();
      expect(() => fixture.runner.vet?.(fixture.task, 'tasks[0]')).not.toThrow();
      if (fixture.refusing === undefined) {
        expect(fixture.runner.vet, `${name} has no vet: it takes every task`).toBeUndefined();
        return;
      }
      const { runner, task, code } = fixture.refusing;
      let refusal: unknown = null;
      try {
        runner.vet?.(task, 'tasks[3]');
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toBeInstanceOf(GafferError);
      expect(refusal).toMatchObject({ code, field: 'tasks[3]' });
      expect((refusal as GafferError).message).toMatch(/^tasks\[3\]: \S/);
    });

    it(
      'run: an attempt in a temp workspace does its work and ends with a well-formed report (done, its output streamed and logged)',
      async () => {
        const fixture = await make();
        const ws = makeWorkspace({ 'README.md': 'hi\n' });
        const input = inputOf(ws, fixture.edit(ws));
        const report = await fixture.runner.run(input);
        expectWellFormed(report);
        expect(report, JSON.stringify(report)).toMatchObject({
          status: 'done',
          outcome: 'success',
          stopReason: 'complete',
          isCancelled: false,
          timedOut: false,
        });
        expect(readFileSync(join(ws, 'made.txt'), 'utf8')).toBe('made\n');
        expect(input.lines.length).toBeGreaterThan(0);
        expect(readFileSync(input.logFile, 'utf8')).not.toBe('');
      },
      timeout,
    );

    it(
      "run: a cancel through the input's signal stops what it runs and ends the attempt cancelled, with a well-formed report",
      async () => {
        const fixture = await make();
        const ws = makeWorkspace({ 'README.md': 'hi\n' });
        const marker = `53.${process.pid}${Date.now() % 100_000}`;
        const cancel = new AbortController();
        const long = fixture.long(ws, marker);
        const input = inputOf(ws, { ...long.input, signal: cancel.signal });
        const running = fixture.runner.run(input);
        const started = () => (long.marker ? processesWith(marker).length > 0 : input.spawned.length > 0);
        await eventually(started, timeout / 2, 'the attempt to start');
        cancel.abort();
        const report = await Promise.race([
          running,
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error('the attempt had not ended 15 s after its cancel')), 15_000),
          ),
        ]);
        expectWellFormed(report);
        expect(report, JSON.stringify(report)).toMatchObject({
          status: 'cancelled',
          outcome: 'cancelled',
          stopReason: 'cancelled',
          isCancelled: true,
        });
        if (long.marker) await eventually(() => processesWith(marker).length === 0, 5_000, 'its process to be gone');
        for (const pgid of input.spawned)
          await eventually(() => liveGroupMembers(pgid).length === 0, 5_000, `process group ${pgid} to be gone`);
      },
      timeout,
    );
  });
}
