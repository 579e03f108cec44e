import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { createRunners } from '../../src/runners/index.js';
import { CALC_FILES, makeWorkspace, tempDir } from '../helpers/temp.js';

// issue 32 point 6, in a worktree job: a worktree's HEAD is gaffer's base commit of the user's
// working tree, so a hints file an earlier worker left is "committed" there; the job goes by the
// user's HEAD instead.
const probe = probeSandbox();
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function run(engine: Engine, body: Record<string, unknown>): Promise<any> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

describe.skipIf(!probe.available)('hints an earlier worker left steer no worktree job (issue 32)', () => {
  it('job 1 (sandboxed) writes verify.command "echo all tests passed"; job 2 in a worktree runs npm test, fails, and names the hints file', async () => {
    const engine = await Engine.open({
      dataDir: join(tempDir('gaffer-data-'), 'data'),
      runners: createRunners({ sandbox: 'auto' }),
    });
    engines.push(engine);
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const first = await run(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          instruction: 'leave a hint',
          command: `mkdir -p .gaffer && echo '{"verify":{"command":"echo all tests passed"}}' > .gaffer/workspace.json`,
        },
      ],
    });
    expect(first.result.workers[0].sandboxed).toBe(true);
    const next = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'none',
      verify: 'auto',
      verify_timeout_s: 30,
      tasks: [{ name: 'noop', instruction: 'touch a file', command: 'echo x > x.txt' }],
    });
    const text = JSON.stringify(next.result);
    expect(text).not.toContain('"command":"echo all tests passed"');
    expect(text).toContain('"command":"npm test"');
    expect(next.verdict).toContain('not gone by: .gaffer/workspace.json not committed');
    expect(next.result.proof?.verdict).not.toBe('proved');
  }, 120_000);
});
