import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inProcess, jobRows, openEngine } from '../http/helpers.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const SECRET = 'OUTSIDE-CONTENT-7f3a9c';

/** A folder outside every workspace, holding content no checkpoint may read. */
function outsideTree(): string {
  const dir = tempDir('gaffer-outside-');
  mkdirSync(join(dir, 'dir', 'sub'), { recursive: true });
  writeFileSync(join(dir, 'dir', 'secret.txt'), `${SECRET}\n`);
  writeFileSync(join(dir, 'dir', 'sub', 'deep.txt'), `${SECRET}-deep\n`);
  writeFileSync(join(dir, 'top.txt'), `${SECRET}-top\n`);
  return dir;
}

/** A workspace with links out (a folder, a file, a dangling name) and one that stays inside. */
function workspaceWithLinks(outside: string): string {
  const ws = makeWorkspace({ 'a.txt': 'a\n', 'src/inside.txt': 'i\n' }, { git: true });
  symlinkSync(join(outside, 'dir'), join(ws, 'link'));
  symlinkSync(join(outside, 'top.txt'), join(ws, 'toplink'));
  symlinkSync(join(outside, 'planted.txt'), join(ws, 'dangling'));
  symlinkSync('../../', join(ws, 'src', 'up'));
  symlinkSync('src', join(ws, 'inner'));
  return ws;
}

const request = (ws: string, key: 'files' | 'outputs', paths: string[], taskIndex = 0) => ({
  workspace: ws,
  verify: 'none',
  tasks: [
    ...(taskIndex > 0 ? [{ name: 'first', instruction: 'first task', command: 'true' }] : []),
    { name: 'named', instruction: 'edit the named paths', command: 'echo b >> a.txt', [key]: paths },
  ],
});

describe('files and outputs cannot leave the workspace', () => {
  it('.., absolute and home paths are refused with 400 and the field named; no job is created', async () => {
    const engine = await openEngine();
    const { call } = inProcess(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const bad = [
      '../x',
      'a/../../x',
      'src/..',
      '..',
      '..\\x',
      'a\\..\\..\\x',
      '/etc/passwd',
      `${ws}/a.txt`,
      '\\\\server\\share',
      'C:\\x',
      'c:/x',
      '~/x',
      '~root/x',
      'a\0b',
    ];
    for (const key of ['files', 'outputs'] as const) {
      for (const [i, path] of bad.entries()) {
        const r = await call('POST', '/api/jobs', request(ws, key, ['ok.txt', path], i % 2));
        const field = `tasks[${i % 2}].${key}[1]`;
        expect(r.status, `${key} ${JSON.stringify(path)}`).toBe(400);
        expect(r.json.error).toMatchObject({ code: 'invalid_request', field });
        expect(r.json.error.message).toContain(field);
      }
    }
    expect(jobRows(engine)).toBe(0);
  });

  it('a symlink that leaves the workspace (to a folder, to a file, dangling, or up through ..) is refused at submission, named; links that stay inside are fine', async () => {
    const engine = await openEngine();
    const { call } = inProcess(engine);
    const outside = outsideTree();
    const ws = workspaceWithLinks(outside);
    const escapes = [
      'link',
      'link/secret.txt',
      'link/new.txt',
      'link/sub',
      'link/sub/deep.txt',
      'toplink',
      'dangling',
      'src/up/x.txt',
      'src/up',
      'inner/up/x',
      'link/',
    ];
    for (const key of ['files', 'outputs'] as const) {
      for (const [i, path] of escapes.entries()) {
        const r = await call('POST', '/api/jobs', request(ws, key, ['a.txt', path], i % 2));
        const field = `tasks[${i % 2}].${key}[1]`;
        expect(r.status, `${key} ${path}`).toBe(400);
        expect(r.json.error).toMatchObject({ code: 'invalid_request', field });
        expect(r.json.error.message).toMatch(/outside the workspace/);
      }
    }
    expect(jobRows(engine)).toBe(0);
    // the CLI path of the same check: a dispatch is refused before anything starts
    expect(() => engine.submit(request(ws, 'outputs', ['toplink']))).toThrow(
      /tasks\[0\]\.outputs\[0\]: toplink is outside the workspace through a symbolic link/,
    );

    // inside links and not-yet-existing paths are accepted, and the job runs
    const ok = await call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          instruction: 'edit inside',
          command: 'echo more >> src/inside.txt; echo n > src/new.txt; echo m > src/made.txt',
          files: ['inner/inside.txt', 'src/new.txt', 'not/yet/there.txt'],
          outputs: ['inner/made.txt'],
        },
      ],
    });
    expect(ok.status).toBe(202);
    await engine.settled(ok.json.id);
    expect(engine.get(ok.json.id)).toMatchObject({
      status: 'done',
      result: { changes: { modified: ['src/inside.txt'], added: ['src/made.txt', 'src/new.txt'] } },
    });
    expect(readFileSync(join(outside, 'dir', 'secret.txt'), 'utf8')).toBe(`${SECRET}\n`);
  });

  it('a link a worker plants after submission is not followed: the checkpoint never reads the content outside', async () => {
    const engine = await openEngine();
    const outside = outsideTree();
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    // accepted: `planted` does not exist yet; the worker makes it a link out
    const { job } = engine.submit({
      workspace: ws,
      verify: 'none',
      tasks: [
        {
          instruction: 'plant a link',
          command: `ln -s ${join(outside, 'dir')} planted; echo b >> a.txt`,
          files: ['a.txt', 'planted/secret.txt', 'planted/sub'],
          outputs: ['planted/sub/deep.txt'],
        },
      ],
    });
    await engine.settled(job.id);
    const done = engine.get(job.id, { full: true });
    // spec 06: the link itself was never the worker's to write (its named paths lie below it), and is charged
    expect(done.status).toBe('partial');
    expect(done.result?.workers[0]).toMatchObject({
      write_audit: 'violation',
      error: expect.stringMatching(/: planted$/),
    });
    expect(done.result?.changes).toMatchObject({ added: ['planted'], modified: ['a.txt'] });
    // what is behind the link is not in the changes, only named as skipped
    const changes = done.result?.changes as { added: string[]; skipped: string[] };
    expect(changes.added).not.toContain('planted/secret.txt');
    expect(changes.skipped).toEqual(expect.arrayContaining(['planted/secret.txt']));

    // no object of the shadow repositories, no file of the data dir holds the outside content
    const shadow = join(engine.dataDir, 'shadow');
    for (const repo of readdirSync(shadow).filter((d) => d.endsWith('.git'))) {
      const objects = execFileSync(
        'git',
        [`--git-dir=${join(shadow, repo)}`, 'cat-file', '--batch-all-objects', '--batch'],
        { maxBuffer: 64 << 20 },
      ).toString('latin1');
      expect(objects).not.toContain(SECRET);
    }
    const grep = spawnSync('grep', ['-rla', SECRET, engine.dataDir], { encoding: 'utf8' });
    expect(grep.stdout).toBe('');
    expect(grep.status).toBe(1);
  });
});
