import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { gaffer, WRITE_ONE_OR_TWO as WRITE } from './run-bin.js';

describe('gaffer steer (issue 16)', () => {
  it('a steer to an ended job runs its follow-up in process and waits for it; an unknown task is refused with exit 2', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const first = gaffer(data, [
      '--json',
      'dispatch',
      '--workspace',
      ws,
      '--task',
      'write out.txt',
      '--command',
      WRITE,
      '--verify',
      'test -f out.txt',
    ]);
    expect(first.code, first.stderr).toBe(0);
    const job = JSON.parse(first.stdout) as { id: string; tasks: { name: string }[] };
    const task = job.tasks[0]?.name ?? '';
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\n');

    const bad = gaffer(data, ['steer', job.id, 'nope', 'make it two']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('[not_found, field task]');
    const empty = gaffer(data, ['steer', job.id, task, '']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('[invalid_request, field message]');

    const steered = gaffer(data, ['--json', 'steer', job.id, task, 'make it two']);
    expect(steered.code, steered.stderr).toBe(0);
    expect(steered.stderr).toMatch(/steer st-[0-9a-f]{8} \(queued_as_follow_up\): job [0-9a-f]{12} had ended \(done\)/);
    const answer = JSON.parse(steered.stdout) as {
      delivery: string;
      follow_up_job: string;
      follow_up_state: { id: string; status: string; follow_up: unknown };
    };
    expect(answer).toMatchObject({
      delivery: 'queued_as_follow_up',
      job_id: job.id,
      task,
      follow_up_state: { id: answer.follow_up_job, status: 'done', follow_up: { job: job.id, task, resumed: false } },
    });
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('two\n');
  });
});
