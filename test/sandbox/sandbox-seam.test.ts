import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { RunnerInput } from '../../src/runners/contract.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox, type Sandbox, type SandboxResult } from '../../src/platform/sandbox/sandbox.js';
import type { SandboxCommand } from '../../src/platform/sandbox/bwrap.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { runSuite } from '../../src/verification/run-suite.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const engines: Engine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

/** A sandbox that records what it was asked and answers `answer`. */
function recordingSandbox(answer: (cmd: SandboxCommand) => SandboxResult): Sandbox & { asked: SandboxCommand[] } {
  const asked: SandboxCommand[] = [];
  return { policy: 'auto', works: true, asked, wrap: (cmd) => (asked.push(cmd), answer(cmd)) };
}

function shellInput(command: string): RunnerInput {
  const data = tempDir('gaffer-seam-data-');
  return {
    jobId: 'job-1',
    workerName: 'worker-1',
    attempt: 1,
    role: 'worker',
    instruction: command,
    workspace: tempDir('gaffer-seam-ws-'),
    command,
    model: null,
    timeoutMs: 20_000,
    maxRounds: 1,
    resume: null,
    files: [],
    sandbox: true,
    env: { PATH: process.env.PATH },
    logFile: join(data, 'w.log'),
    instructionFile: join(data, 'w.md'),
    signal: new AbortController().signal,
  };
}

describe('Sandbox: one seam, made once and injected (issue 12)', () => {
  it('createRunners hands the one sandbox it is given to the shell runner, with the shell network', async () => {
    const sandbox = recordingSandbox((cmd) => ({
      argv: ['/bin/sh', '-c', `echo seam; ${cmd.shellCommand ?? ''}`],
      sandboxed: true,
      network: 'none',
    }));
    const runners = createRunners({ sandbox });
    const report = await runners.get('shell')?.run(shellInput('echo inner'));
    expect(report).toMatchObject({ status: 'done', sandboxed: true, network: 'none', summary: 'seam\ninner' });
    expect(sandbox.asked).toHaveLength(1);
    expect(sandbox.asked[0]).toMatchObject({ shellCommand: 'echo inner', network: { mode: 'none' } });
    expect(runners.get('shell')?.sandboxed).toBe(true);
  });

  it('a refusal refuses the shell worker with its words, and fails a verification command saying why', async () => {
    const sandbox = recordingSandbox(() => ({
      refused: 'no sandbox for you: install bubblewrap',
      sandboxed: false,
      network: 'host',
    }));
    const report = await createRunners({ sandbox }).get('shell')?.run(shellInput('echo never'));
    expect(report).toMatchObject({
      status: 'refused',
      stopReason: 'sandbox_unavailable',
      error: 'no sandbox for you: install bubblewrap',
    });
    const ws = tempDir('gaffer-seam-ws-');
    const run = await runSuite({
      command: 'echo never',
      cwd: ws,
      kind: null,
      timeoutMs: 20_000,
      signal: new AbortController().signal,
      logFile: join(tempDir(), 'v.log'),
      sandbox,
    });
    expect(run.exitCode).toBe(126);
    expect(run.tail).toContain('refused: no sandbox for you: install bubblewrap');
    expect(run.tail).not.toContain('never');
  });

  it('off never wraps: the command as it is, the host network, works false', () => {
    const off = createSandbox('off');
    expect(off.works).toBe(false);
    expect(off.wrap({ shellCommand: 'true', workspace: tempDir() })).toEqual({
      argv: ['/bin/sh', '-c', 'true'],
      sandboxed: false,
      network: 'host',
    });
    expect(off.wrap({ argv: ['/bin/true'], workspace: tempDir() })).toEqual({
      argv: ['/bin/true'],
      sandboxed: false,
      network: 'host',
    });
  });

  it.skipIf(!probeSandbox().available)(
    'auto and required wrap in bubblewrap where it works, with no network by default',
    () => {
      for (const policy of ['auto', 'required'] as const) {
        const sandbox = createSandbox(policy);
        expect(sandbox.works).toBe(true);
        const wrapped = sandbox.wrap({ shellCommand: 'true', workspace: tempDir() });
        expect(wrapped).toMatchObject({ sandboxed: true, network: 'none' });
        expect('argv' in wrapped ? wrapped.argv.join(' ') : '').toContain('--unshare-net');
      }
    },
  );

  it('the engine runs the verification through the same sandbox its runners were given', async () => {
    const sandbox = recordingSandbox((cmd) => ({
      argv: ['/bin/sh', '-c', cmd.shellCommand ?? 'false'],
      sandboxed: true,
      network: 'none',
    }));
    const engine = await Engine.open({
      dataDir: join(tempDir('gaffer-data-'), 'data'),
      runners: createRunners({ sandbox }),
      sandbox,
    });
    engines.push(engine);
    const { job } = engine.submit({
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'test -f b.txt',
      fix_rounds: 0,
      tasks: [{ instruction: 'edit', command: 'echo b > b.txt' }],
    });
    await engine.settled(job.id);
    const asked = sandbox.asked.map((c) => c.shellCommand);
    expect(asked).toContain('echo b > b.txt');
    expect(asked).toContain('test -f b.txt');
  }, 60_000);
});
