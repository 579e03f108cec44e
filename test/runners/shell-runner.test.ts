import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunnerInput } from '../../src/runners/contract.js';
import type { StateDetection } from '../../src/domain/runner-report.js';
import { getRunner, listRunnerKeys } from '../../src/runners/index.js';
import { ShellRunner } from '../../src/runners/shell/shell-runner.js';
import { fixture, liveGroupMembers, makeTempDir } from './helpers.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';

function makeInput(overrides: Partial<RunnerInput> = {}): RunnerInput {
  const workspace = makeTempDir('gaffer-ws-');
  const dataDir = makeTempDir('gaffer-data-');
  return {
    jobId: 'job-1',
    workerName: 'worker-1',
    attempt: 1,
    role: 'worker',
    instruction: 'echo hi',
    workspace,
    command: null,
    model: null,
    timeoutMs: 10_000,
    maxRounds: 1,
    resume: null,
    files: [],
    sandbox: false,
    env: { PATH },
    logFile: join(dataDir, 'logs', 'job-1', 'worker-1.log'),
    instructionFile: join(dataDir, 'instructions', 'job-1', 'worker-1.md'),
    signal: new AbortController().signal,
    ...overrides,
  };
}

const runner = new ShellRunner({ graceMs: 200, idlePromptMs: 300 });

describe('ShellRunner: report mapping', () => {
  it('exit 0 is done, success, complete, with the output as summary', async () => {
    const input = makeInput({ command: 'echo one; echo two' });
    const report = await runner.run(input);
    expect(report).toMatchObject({
      status: 'done',
      outcome: 'success',
      stopReason: 'complete',
      exitCode: 0,
      signal: null,
      error: null,
      summary: 'one\ntwo',
      filesChanged: [],
      makesClaims: false,
      rounds: 0,
      toolCalls: 0,
      failedCalls: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: null,
      session: null,
      modelServed: null,
      detection: null,
      refusals: [],
      sandboxed: false,
      timedOut: false,
      isCancelled: false,
    });
    expect(report.durationMs).toBeGreaterThan(0);
    expect(readFileSync(input.logFile, 'utf8')).toBe('one\ntwo\n');
  });

  it('a non-zero exit is error, expected_error, exit_nonzero, naming the code and the last line', async () => {
    const report = await runner.run(makeInput({ command: 'echo working; echo "boom: tests failed" >&2; exit 3' }));
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'exit_nonzero',
      exitCode: 3,
    });
    expect(report.error).toBe('exit code 3: boom: tests failed');
  });

  it('death by a signal gaffer did not send is error, panic, signal', async () => {
    const report = await runner.run(makeInput({ command: 'echo going; kill -USR1 $$; sleep 5' }));
    expect(report).toMatchObject({
      status: 'error',
      outcome: 'panic',
      stopReason: 'signal',
      signal: 'SIGUSR1',
      error: 'killed by SIGUSR1',
    });
  });

  it('the timeout is timeout, panic, timeout, and the whole group is gone', async () => {
    let pgid = 0;
    const report = await runner.run(
      makeInput({ command: fixture('ignore-term-and-fork.sh'), timeoutMs: 500, onSpawn: (info) => (pgid = info.pgid) }),
    );
    expect(report).toMatchObject({
      status: 'timeout',
      outcome: 'panic',
      stopReason: 'timeout',
      timedOut: true,
      error: 'timed out after 0.5 s',
    });
    expect(pgid).toBeGreaterThan(1);
    expect(liveGroupMembers(pgid)).toEqual([]);
  });

  it('cancel is cancelled three times over, and the whole group is gone', async () => {
    const controller = new AbortController();
    let pgid = 0;
    const report = await runner.run(
      makeInput({
        command: fixture('ignore-term-and-fork.sh'),
        signal: controller.signal,
        onSpawn: (info) => (pgid = info.pgid),
        onOutput: (lines) => {
          if (lines.some((l) => l.startsWith('ready'))) controller.abort();
        },
      }),
    );
    expect(report).toMatchObject({
      status: 'cancelled',
      outcome: 'cancelled',
      stopReason: 'cancelled',
      isCancelled: true,
      error: null,
    });
    expect(liveGroupMembers(pgid)).toEqual([]);
  });

  it('a missing workspace is error, panic, spawn_failed', async () => {
    const report = await runner.run(makeInput({ workspace: '/nonexistent/gaffer-ws' }));
    expect(report).toMatchObject({ status: 'error', outcome: 'panic', stopReason: 'spawn_failed', exitCode: null });
    expect(report.error).toBe('cwd does not exist: /nonexistent/gaffer-ws');
  });

  it('a missing program is an ordinary non-zero exit of sh (127)', async () => {
    const report = await runner.run(makeInput({ command: 'gaffer-no-such-program-xyz' }));
    expect(report).toMatchObject({ status: 'error', stopReason: 'exit_nonzero', exitCode: 127 });
    expect(report.error).toMatch(/^exit code 127: .*not found/);
  });
});

describe('ShellRunner: instruction and environment', () => {
  it('writes the instruction to GAFFER_INSTRUCTION_FILE, creating its directory', async () => {
    const instruction = 'Fix the failing test.\n\n## Failure\nexpected 2, got 3 — é ✓\n';
    const input = makeInput({
      instruction,
      command: 'cat "$GAFFER_INSTRUCTION_FILE"; echo "path=$GAFFER_INSTRUCTION_FILE"',
    });
    const report = await runner.run(input);
    expect(readFileSync(input.instructionFile, 'utf8')).toBe(instruction);
    expect(report.summary).toBe(`${instruction}path=${input.instructionFile}`);
  });

  it('runs the instruction itself when there is no command', async () => {
    const report = await runner.run(makeInput({ instruction: 'echo "from the instruction in $(pwd)"' }));
    expect(report.status).toBe('done');
    expect(report.summary).toMatch(/^from the instruction in \/.*gaffer-ws-/);
  });

  it("runs in the workspace with gaffer's secrets, GIT_DIR and what is not on the allowlist scrubbed, PATH and LANG kept", async () => {
    const input = makeInput({
      env: {
        PATH,
        GAFFER_TOKEN: 'secret',
        GAFFER_MODEL_KEY: 'k',
        GIT_DIR: '/elsewhere/.git',
        GIT_WORK_TREE: '/elsewhere',
        LANG: 'C.UTF-8',
        NOT_LISTED: '1',
      },
      command:
        'echo "token=${GAFFER_TOKEN-unset} key=${GAFFER_MODEL_KEY-unset} gitdir=${GIT_DIR-unset} tree=${GIT_WORK_TREE-unset} lang=$LANG other=${NOT_LISTED-unset} path=$PATH cwd=$(pwd)"',
    });
    const report = await runner.run(input);
    expect(report.summary).toBe(
      `token=unset key=unset gitdir=unset tree=unset lang=C.UTF-8 other=unset path=${PATH} cwd=${input.workspace}`,
    );
  });

  it('gives the worker /dev/null as stdin: a prompt ends at once and is still reported', async () => {
    const report = await runner.run(makeInput({ command: fixture('prompt.sh') }));
    expect(report.status).toBe('done');
    expect(report.summary).toBe('Do you want to continue? (y/n) got:');
    expect(report.detection).toMatchObject({ state: 'waiting_for_input', matched: '(y/n)' });
  });
});

describe('ShellRunner: detected states', () => {
  it('reports a state and never kills for it: "429 Too Many Requests" then exit 0 is done', async () => {
    const states: StateDetection[] = [];
    const report = await runner.run(
      makeInput({
        command: 'echo "429 Too Many Requests"; sleep 0.3; echo "carried on"',
        onState: (d) => states.push(d),
      }),
    );
    expect(report).toMatchObject({ status: 'done', outcome: 'success', exitCode: 0 });
    expect(report.summary).toBe('429 Too Many Requests\ncarried on');
    expect(report.detection).toMatchObject({ state: 'rate_limited' });
    expect(states).toHaveLength(1);
    expect(states[0]).toMatchObject({ state: 'rate_limited' });
  });

  it('reports a prompt that waits without a newline after the idle time', async () => {
    const states: StateDetection[] = [];
    const report = await runner.run(
      makeInput({ command: `${fixture('idle-prompt.sh')} 1`, onState: (d) => states.push(d) }),
    );
    expect(report.status).toBe('done');
    expect(states.map((s) => s.state)).toEqual(['waiting_for_input']);
    expect(report.detection).toMatchObject({ state: 'waiting_for_input', matched: 'Enter the passphrase:' });
  });

  it('does not call a prompt idle when output keeps ending lines', async () => {
    const report = await runner.run(makeInput({ command: 'echo a; sleep 0.6; echo b' }));
    expect(report.detection).toBeNull();
  });

  it('classifies with the exit code at the end: Killed + 137 is oom', async () => {
    const report = await runner.run(makeInput({ command: 'echo Killed; exit 137' }));
    expect(report).toMatchObject({ status: 'error', stopReason: 'exit_nonzero', exitCode: 137 });
    expect(report.detection).toMatchObject({ state: 'oom', matched: 'Killed' });
  });

  it('forwards output lines and the spawn record', async () => {
    const lines: string[] = [];
    let spawned: { pgid: number; startedAt: number } | null = null;
    await runner.run(
      makeInput({ command: 'echo a; echo b', onOutput: (l) => lines.push(...l), onSpawn: (s) => (spawned = s) }),
    );
    expect(lines).toEqual(['a', 'b']);
    expect(spawned).toMatchObject({ pgid: expect.any(Number), startedAt: expect.any(Number) });
  });
});

describe('ShellRunner: sandbox seam and registry', () => {
  const wrapping = new ShellRunner({
    sandbox: {
      policy: 'auto',
      works: true,
      wrap: ({ shellCommand }) => ({
        argv: ['/bin/sh', '-c', `echo wrapped; ${shellCommand ?? ''}`],
        sandboxed: true,
        network: 'none',
      }),
    },
  });

  it('runs through the sandbox when the input asks for the sandbox', async () => {
    const report = await wrapping.run(makeInput({ command: 'echo inner', sandbox: true }));
    expect(report).toMatchObject({ status: 'done', sandboxed: true, summary: 'wrapped\ninner' });
  });

  it('runs unwrapped and says sandboxed: false otherwise', async () => {
    expect(await wrapping.run(makeInput({ command: 'echo inner', sandbox: false }))).toMatchObject({
      sandboxed: false,
      summary: 'inner',
    });
    expect(await runner.run(makeInput({ command: 'echo inner', sandbox: true }))).toMatchObject({
      sandboxed: false,
      summary: 'inner',
    });
  });

  it('getRunner returns the shell runner, and undefined for an unknown key', () => {
    const shell = getRunner('shell');
    expect(shell).toBeInstanceOf(ShellRunner);
    expect(shell).toMatchObject({ key: 'shell', canResume: false });
    expect(getRunner('no-such-runner')).toBeUndefined();
    expect(listRunnerKeys()).toEqual(expect.arrayContaining(['shell', 'builtin']));
  });

  it('leaves no instruction-less run: the instruction file exists even for a failing command', async () => {
    const input = makeInput({ command: 'exit 1' });
    await runner.run(input);
    expect(existsSync(input.instructionFile)).toBe(true);
  });
});
