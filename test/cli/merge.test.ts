import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { gaffer } from './run-bin.js';

describe('gaffer merge', () => {
  it('starts the merge job and follows it to its end: exit 0 when done, listed, the original says merged', () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const first = gaffer(data, [
      '--json',
      'dispatch',
      '--workspace',
      ws,
      '--isolation',
      'worktree',
      '--task',
      'write out.txt',
      '--command',
      'echo one > out.txt',
      '--verify',
      'exit 0',
    ]);
    expect(first.code, first.stderr).toBe(0);
    const job = JSON.parse(first.stdout) as { id: string };

    const merged = gaffer(data, ['merge', job.id]);
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stderr).toMatch(new RegExp(`merge job [0-9a-f]+ accepted for ${job.id}`));
    expect(merged.stderr).toContain('applying the verified merge to the workspace');
    expect(merged.stdout).toContain(`merge of: ${job.id}`);
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('one\n');

    const list = JSON.parse(gaffer(data, ['--json', 'list']).stdout) as {
      jobs: { title: string; status: string; merge_of?: unknown }[];
    };
    expect(list.jobs[0]).toMatchObject({
      title: `merge of ${job.id}`,
      status: 'done',
      merge_of: { job: job.id, task: null },
    });
    const original = JSON.parse(gaffer(data, ['--json', 'status', job.id, '--full']).stdout) as {
      result: { worktrees: { tasks: { merge?: string }[] } };
    };
    expect(original.result.worktrees.tasks.map((t) => t.merge)).toEqual(['merged']);

    // nothing left: refused before anything is stored
    const again = gaffer(data, ['merge', job.id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('no passing branch left to merge');
    expect((JSON.parse(gaffer(data, ['--json', 'list']).stdout) as { jobs: unknown[] }).jobs).toHaveLength(2);
  });
});
