import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRunners } from '../../src/runners/index.js';
import { CALC_FILES, FIX_ADD, makeWorkspace, tempDir } from '../helpers/temp.js';
import { inProcess, openEngine } from './helpers.js';

const errorShape = (code: string, field: string) => ({
  error: expect.objectContaining({ code, field, message: expect.any(String) }),
});
const diffOf = (id: string, path: string, task?: string) =>
  `/api/jobs/${id}/diff?path=${encodeURIComponent(path)}${task === undefined ? '' : `&task=${encodeURIComponent(task)}`}`;

/** A worker's plant in the repository it shares with the user: a diff driver, a textconv and an external diff that write `marker` when git runs them. */
function plantDiffPrograms(marker: string): string {
  return [
    'GD=$(git rev-parse --path-format=absolute --git-common-dir)',
    `printf '#!/bin/sh\\necho "ran $0 $*" >> ${marker}\\ncat\\n' > "$GD/evil.sh"`,
    'chmod +x "$GD/evil.sh"',
    `printf '[diff "evil"]\\n\\ttextconv = %s textconv\\n\\tcommand = %s diffcmd\\n[diff]\\n\\texternal = %s external\\n' "$GD/evil.sh" "$GD/evil.sh" "$GD/evil.sh" >> "$GD/config"`,
    'mkdir -p "$GD/info"',
    `printf '* diff=evil\\n' > "$GD/info/attributes"`,
    `printf '* diff=evil\\n' > .gitattributes`,
    FIX_ADD,
  ].join(' && ');
}

describe('GET /api/jobs/:id/diff of a worktree job: per task branch', () => {
  it("a task's file between the base and its branch; no task is a 400 naming the field and the tasks; a shared job refuses a task", async () => {
    const engine = await openEngine({ runners: createRunners({ sandbox: 'off' }) });
    const { call } = inProcess(engine);
    const ws = makeWorkspace({ ...CALC_FILES, 'README.md': 'x\n' }, { git: true });
    const tasks = [
      {
        name: 'fix-add',
        runner: 'shell',
        instruction: 'fix add in src/math.js',
        files: ['src/math.js'],
        command: FIX_ADD,
      },
      {
        name: 'docs',
        runner: 'shell',
        instruction: 'add a line to README.md',
        files: ['README.md'],
        command: 'echo more >> README.md',
      },
    ];
    const post = await call('POST', '/api/jobs', { workspace: ws, isolation: 'worktree', verify: 'exit 0', tasks });
    expect(post.status).toBe(202);
    const id: string = post.json.id;
    await engine.settled(id);
    const job = (await call('GET', `/api/jobs/${id}?full=1`)).json;
    expect(job.result.worktrees.tasks.map((t: { task: string; files: string[] }) => [t.task, t.files])).toEqual([
      ['fix-add', ['src/math.js']],
      ['docs', ['README.md']],
    ]);

    const fix = await call('GET', diffOf(id, 'src/math.js', 'fix-add'));
    expect(fix.status, fix.text).toBe(200);
    expect(fix.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(fix.text).toContain('diff --git a/src/math.js b/src/math.js');
    expect(fix.text).toContain('-  return a - b;');
    expect(fix.text).toContain('+  return a + b;');
    // the branch's work, not the workspace's (merge "none" left it as it was)
    expect(readFileSync(join(ws, 'src/math.js'), 'utf8')).toContain('return a - b;');
    expect((await call('GET', diffOf(id, 'README.md', 'docs'))).text).toMatch(
      /^diff --git a\/README.md b\/README.md\n[^]*\n x\n\+more\n$/,
    );
    // a file the task's branch did not change, and one no side has
    expect((await call('GET', diffOf(id, 'README.md', 'fix-add'))).text).toBe('');
    expect((await call('GET', diffOf(id, 'nope.txt', 'docs'))).text).toBe('');

    const noTask = await call('GET', diffOf(id, 'src/math.js'));
    expect(noTask.status).toBe(400);
    expect(noTask.json).toEqual(errorShape('invalid_request', 'task'));
    expect(noTask.json.error.message).toContain('one of fix-add, docs');
    const unknown = await call('GET', diffOf(id, 'src/math.js', 'nope'));
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual(errorShape('not_found', 'task'));
    expect(unknown.json.error.message).toContain('one of fix-add, docs');
    expect((await call('GET', diffOf(id, 'src/math.js', ''))).json).toEqual(errorShape('invalid_request', 'task'));
    expect((await call('GET', diffOf(id, '../x', 'docs'))).json).toEqual(errorShape('invalid_request', 'path'));

    // a shared job has one diff: a task named is refused, not ignored
    const shared = await call('POST', '/api/jobs', {
      workspace: makeWorkspace(CALC_FILES, { git: true }),
      verify: 'none',
      tasks: [tasks[0]],
    });
    await engine.settled(shared.json.id);
    const named = await call('GET', diffOf(shared.json.id, 'src/math.js', 'fix-add'));
    expect(named.status).toBe(400);
    expect(named.json).toEqual(errorShape('invalid_request', 'task'));
    expect(named.json.error.message).toContain('leave task out');
    expect((await call('GET', diffOf(shared.json.id, 'src/math.js'))).text).toContain('+  return a + b;');

    // a merge later has no diff of its own: it says where the merged branches' diffs are
    const merge = await call('POST', `/api/jobs/${id}/merge`, { task: 'fix-add' });
    await engine.settled(merge.json.id);
    const merged = await call('GET', diffOf(merge.json.id, 'src/math.js'));
    expect(merged.status).toBe(409);
    expect(merged.json).toEqual(errorShape('conflict', 'job_id'));
    expect(merged.json.error.message).toContain(`GET /api/jobs/${id}/diff?path=…&task=…`);
  });

  it('runs no diff driver, textconv or external diff a worker planted in the repository’s config and attributes', async () => {
    const engine = await openEngine({ runners: createRunners({ sandbox: 'off' }) });
    const { call } = inProcess(engine);
    const ws = makeWorkspace(CALC_FILES, { git: true });
    const marker = join(tempDir(), 'ran');
    const post = await call('POST', '/api/jobs', {
      workspace: ws,
      isolation: 'worktree',
      verify: 'none',
      tasks: [
        {
          name: 'plant',
          runner: 'shell',
          instruction: 'fix add in src/math.js',
          files: ['src/math.js', '.gitattributes'],
          command: plantDiffPrograms(marker),
        },
      ],
    });
    const id: string = post.json.id;
    await engine.settled(id);
    const row = (await call('GET', `/api/jobs/${id}?full=1`)).json.result.worktrees;
    expect(row.tasks[0].files).toEqual(['.gitattributes', 'src/math.js']);
    expect(readFileSync(join(ws, '.git/config'), 'utf8')).toContain('external = ');

    const math = await call('GET', diffOf(id, 'src/math.js', 'plant'));
    expect(math.status, math.text).toBe(200);
    expect(math.text).toContain('+  return a + b;');
    expect(math.text).not.toContain('ran ');
    expect((await call('GET', diffOf(id, '.gitattributes', 'plant'))).text).toContain('+* diff=evil');
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');

    // the plant is live: the user's own `git diff` of the same commits runs it
    execFileSync('git', ['diff', row.base, row.tasks[0].commit, '--', 'src/math.js'], {
      cwd: ws,
      stdio: 'ignore',
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_PAGER: 'cat' },
    });
    expect(readFileSync(marker, 'utf8')).toMatch(/ran .*evil\.sh/);
  });
});
