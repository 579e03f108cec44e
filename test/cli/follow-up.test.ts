import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { gaffer, WRITE_ONE_OR_TWO as WRITE } from './run-bin.js';

describe('gaffer follow-up (issue 16)', () => {
  it('runs the follow-up in process with the comment, links the original, and refuses a malformed --comment', () => {
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

    const bad = gaffer(data, ['follow-up', job.id, task, '--comment', 'out.txt-1-make it two']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--comment');

    const followed = gaffer(data, [
      'follow-up',
      job.id,
      task,
      '--comment',
      'out.txt:1:make it two',
      '--note',
      'nothing else',
    ]);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stderr).toContain(`accepted for ${job.id} ${task} (in a new session, told the diff)`);
    expect(followed.stdout).toContain(`follow-up of: ${job.id} ${task} (new session, told the diff)`);
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('two\n');

    const list = JSON.parse(gaffer(data, ['--json', 'list']).stdout) as {
      jobs: { id: string; status: string; follow_up?: unknown }[];
    };
    expect(list.jobs[0]).toMatchObject({ status: 'done', follow_up: { job: job.id, task, resumed: false } });
  });
});
