import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// a worker that goes on after its first lines: the CLI prints progress and its answer after the reader left
const SLOW_EDIT = 'for i in 1 2 3 4; do echo step $i; sleep 0.25; done; echo b > b.txt';

describe('gaffer dispatch whose reader goes away', () => {
  it('`… 2>&1 | head -2`: the job runs to its end and settles done, the CLI exits by the job', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    // the user's own pipeline: head leaves after two lines; bash reports gaffer's exit status
    const script =
      '"$0" --data-dir "$1" dispatch --workspace "$2" --verify none --task slow --command "$3" 2>&1 | head -2; echo "gaffer exited ${PIPESTATUS[0]}"';
    const r = spawnSync('bash', ['-c', script, BIN, data, ws, SLOW_EDIT], { encoding: 'utf8', timeout: 60_000 });
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    const jobId = /job ([0-9a-f]{12}) accepted/.exec(lines[0] ?? '')?.[1];
    expect(jobId).toBeDefined();
    expect(lines[2]).toBe('gaffer exited 0');

    const job = JSON.parse(gaffer(data, ['--json', 'status', jobId as string]).stdout);
    expect(job.status).toBe('done');
    expect(job.verdict).not.toContain('interrupted');
    expect(job.result.changes.added).toEqual(['b.txt']);
  });

  it('a CLI whose stdout and stderr pipes are closed mid-job still settles the job and exits by its status', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const child = spawn(
      BIN,
      [
        '--data-dir',
        data,
        '--json',
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'none',
        '--task',
        'slow',
        '--command',
        SLOW_EDIT,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const firstLine = await new Promise<string>((resolve) =>
      child.stderr.once('data', (d: Buffer) => resolve(d.toString())),
    );
    const jobId = /job ([0-9a-f]{12}) accepted/.exec(firstLine)?.[1];
    expect(jobId).toBeDefined();
    // close both read ends: every later write of the CLI meets EPIPE
    child.stdout.destroy();
    child.stderr.destroy();
    expect(await exited).toBe(0);

    const job = JSON.parse(gaffer(data, ['--json', 'status', jobId as string]).stdout);
    expect(job).toMatchObject({ status: 'done', result: { changes: { added: ['b.txt'] }, exit_code: 0 } });
  });
});

describe('gaffer dispatch --require', () => {
  it('proved: exit 0 only when the proof is proved; done (the default) when the job ended done', () => {
    const data = join(tempDir(), 'data');
    const calc = makeWorkspace(CALC_FILES);
    const proved = gaffer(data, [
      '--json',
      'dispatch',
      '--require',
      'proved',
      '--workspace',
      calc,
      '--task',
      'fix add',
      '--command',
      FIX_ADD,
    ]);
    expect(JSON.parse(proved.stdout)).toMatchObject({ status: 'done', result: { proof: { verdict: 'proved' } } });
    expect(proved.code).toBe(0);

    // done, but nothing could show it: unproved
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const args = ['--workspace', ws, '--verify', 'none', '--task', 'append', '--command', 'echo b >> a.txt'];
    const unproved = gaffer(data, ['--json', 'dispatch', '--require', 'proved', ...args]);
    expect(JSON.parse(unproved.stdout)).toMatchObject({ status: 'done', result: { proof: { verdict: 'unproved' } } });
    expect(unproved.code).toBe(1);
    expect(unproved.stderr).toContain('--require proved: the proof is unproved');
    expect(gaffer(data, ['dispatch', '--require', 'done', ...args]).code).toBe(0);
    expect(gaffer(data, ['dispatch', ...args]).code).toBe(0);
  });

  it('anything else is refused before anything starts (exit 2)', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const r = gaffer(data, [
      '--json',
      'dispatch',
      '--require',
      'passed',
      '--workspace',
      ws,
      '--verify',
      'none',
      '--task',
      'x',
      '--command',
      'true',
    ]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr)).toEqual({
      error: { code: 'invalid_request', message: '--require must be proved or done, got "passed"', field: 'require' },
    });
    expect(JSON.parse(gaffer(data, ['--json', 'list']).stdout).jobs).toEqual([]);
  });
});
