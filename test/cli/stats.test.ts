import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// `gaffer stats` (spec 02, spec 05 "Acceptance rate") through the built CLI: two gaffer processes
// run their jobs on one data dir at once, both appending to its outcome log; stats reads the store.

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');
const env = { ...process.env, GAFFER_URL: '' };

function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], { encoding: 'utf8', timeout: 60_000, env });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `gaffer dispatch -` with the request on stdin, in a process of its own; resolves with its exit code. */
function dispatch(dataDir: string, request: Record<string, unknown>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['--data-dir', dataDir, '--json', 'dispatch', '-'], {
      env,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
    child.stdin.end(JSON.stringify(request));
  });
}

const tasks = (type: string, commands: string[]) =>
  commands.map((command, i) => ({
    name: `${type}-${i + 1}`,
    type,
    instruction: `run ${command}`,
    files: [`${type}-${i + 1}.txt`],
    command,
  }));

describe('gaffer stats', () => {
  it('an empty data dir: no outcome counted, exit 0', () => {
    const r = gaffer(join(tempDir(), 'data'), ['stats']);
    expect(r).toEqual({
      code: 0,
      stdout: 'acceptance: no outcome counted yet\n  0 outcome(s) logged\nrecent jobs: 0 (none ran: no signal)\n',
      stderr: '',
    });
  });

  it("two processes log their jobs' outcomes at once; stats shows accepted/total and the rate per type and model", async () => {
    const data = join(tempDir(), 'data');
    const codes = await Promise.all([
      dispatch(data, {
        workspace: makeWorkspace({ 'README.md': 'x\n' }),
        verify: 'none',
        parallel: true,
        tasks: tasks('implement', [
          'echo 1 > implement-1.txt',
          'echo 2 > implement-2.txt',
          'echo 3 > implement-3.txt',
          'echo 4 > implement-4.txt; exit 1',
        ]),
      }),
      dispatch(data, {
        workspace: makeWorkspace({ 'README.md': 'x\n' }),
        verify: 'none',
        parallel: true,
        tasks: tasks('fix', ['echo 1 > fix-1.txt', 'echo 2 > fix-2.txt', 'echo 3 > fix-3.txt', 'echo 4 > fix-4.txt']),
      }),
    ]);
    expect(codes.sort()).toEqual([0, 1]);
    const lines = readFileSync(join(data, 'outcomes.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { task: string; status: string });
    expect(lines.map((l) => `${l.task} ${l.status}`).sort()).toEqual([
      'fix-1 passed',
      'fix-2 passed',
      'fix-3 passed',
      'fix-4 passed',
      'implement-1 passed',
      'implement-2 passed',
      'implement-3 passed',
      'implement-4 failed',
    ]);

    const table = gaffer(data, ['stats']);
    expect(table.code).toBe(0);
    expect(table.stdout).toBe(
      [
        'acceptance (gates passed / outcomes, per task type and model):',
        '  type       model  runner  provider  accepted  rate',
        '  fix        -      shell   -         4/4       100%',
        '  implement  -      shell   -         3/4       75%',
        '  8 outcome(s) logged',
        'recent jobs: 2 (done 1, partial 1, failed 0, cancelled 0, live 0)',
        '',
      ].join('\n'),
    );
    const json = JSON.parse(gaffer(data, ['--json', 'stats']).stdout);
    expect(json).toMatchObject({
      acceptance: {
        'fix/(shell default)': {
          type: 'fix',
          model: null,
          runners: ['shell'],
          providers: [],
          accepted: 4,
          total: 4,
          rate: 1,
        },
        'implement/(shell default)': {
          type: 'implement',
          model: null,
          runners: ['shell'],
          providers: [],
          accepted: 3,
          total: 4,
          rate: 0.75,
        },
      },
      outcomes_total: 8,
      excluded: { not_dispatched: 0, abstained: 0 },
    });
  });
});
