import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { WorktreeSettings } from '../../src/engine/placement/worktree.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelRequest } from '../support/model-server/index.js';

// spec 06 "Worktree isolation and fan-out", through real jobs: a real repository, real `git
// worktree`, real shell workers in parallel, the real verification per worktree and of the merge.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(worktrees: Partial<WorktreeSettings> = {}, maxParallel = 4): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    maxParallel,
    runners: createRunners({ sandbox: createSandbox('off') }),
    worktrees,
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>) {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/** Lines a, b, c, d, e, each a task's own line to change (far enough apart that git merges them cleanly). */
const LINES = ['one', 'two', 'three', 'four', 'five'];
const padded = (words: string[]) => `${words.map((w) => `${w}\n\n\n\n`).join('')}`;
const CHECK = `sh -c 'grep -q one lines.txt || grep -q ONE lines.txt'`;

describe('worktree fan-out', () => {
  it('four tasks edit one file at once: four branches, the clean ones merged, the conflict named, the merged tree verified and applied', async () => {
    const engine = await open({ parallelSafeGates: [CHECK] });
    const ws = makeWorkspace({ 'lines.txt': padded(LINES) }, { git: true });
    // what the user has not committed is what the workers see
    writeFileSync(join(ws, 'notes.txt'), 'uncommitted\n');
    const upper = (word: string) =>
      `grep -q uncommitted notes.txt && sed -i 's/^${word}$/${word.toUpperCase()}/' lines.txt`;
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify: CHECK,
      tasks: [
        { name: 'one', instruction: 'upper-case one', files: ['lines.txt'], command: upper('one') },
        { name: 'three', instruction: 'upper-case three', files: ['lines.txt'], command: upper('three') },
        { name: 'five', instruction: 'upper-case five', files: ['lines.txt'], command: upper('five') },
        {
          name: 'clash',
          instruction: 'rewrite one',
          files: ['lines.txt'],
          command: "sed -i 's/^one$/one-ish/' lines.txt",
        },
      ],
    });
    const wt = job.result?.worktrees;
    expect(wt?.classes.every((c) => c.class === 'parallel')).toBe(true);
    expect(wt?.tasks.map((t) => [t.task, t.state, t.merge])).toEqual([
      ['one', 'removed', 'merged'],
      ['three', 'removed', 'merged'],
      ['five', 'removed', 'merged'],
      ['clash', 'removed', 'conflict'],
    ]);
    expect(wt?.tasks.find((t) => t.task === 'clash')?.conflict_files).toEqual(['lines.txt']);
    expect(wt?.predicted_conflicts).toContainEqual({ tasks: ['one', 'clash'], files: ['lines.txt'] });
    // four branches, each with its task's commit on the base
    const branches = git(ws, 'for-each-ref', '--format=%(refname:short)', `refs/heads/gaffer/${job.id}/`).split('\n');
    expect(branches.sort()).toEqual(
      [`gaffer/${job.id}/+merged`, ...['clash', 'five', 'one', 'three'].map((t) => `gaffer/${job.id}/${t}`)].sort(),
    );
    expect(git(ws, 'show', `gaffer/${job.id}/clash:lines.txt`)).toContain('one-ish');
    // the merged tree was verified, then applied to the working tree (not committed), the user's file kept
    expect(wt?.merges).toMatchObject([
      { tasks: ['one', 'three', 'five'], applied: true, verification: { ok: true }, path: null },
    ]);
    expect(readFileSync(join(ws, 'lines.txt'), 'utf8')).toBe(padded(['ONE', 'two', 'THREE', 'four', 'FIVE']));
    expect(readFileSync(join(ws, 'notes.txt'), 'utf8')).toBe('uncommitted\n');
    expect(git(ws, 'log', '--format=%s')).toBe('init');
    expect(git(ws, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
    // every task passed; the conflict keeps the job from `done` and is a named doubt
    expect(job.status).toBe('partial');
    expect(job.result?.proof?.uncertainty.map((u) => u.code)).toEqual(['merge_conflict']);
    // the merged tasks are judged by the merged tree (the workspace's final state); the one left out by its own
    expect(job.result?.verification?.summary).toMatch(/^clash: exit 0; merged: exit 0$/);
    expect(wt?.tasks.map((t) => t.verification?.ok)).toEqual([true, true, true, true]);
    // the compact answer keeps of a row what says something: no commit or port; no path, setup or verification when removed, nothing set up, passed
    expect(engine.get(job.id).result?.worktrees?.tasks[0]).toEqual({
      task: 'one',
      branch: `gaffer/${job.id}/one`,
      state: 'removed',
      files: ['lines.txt'],
      merge: 'merged',
    });
  });

  it('two branches that pass alone and fail merged: reported as such, nothing applied, the merge kept for the autopsy', async () => {
    const verify = `sh -c 'test $(cat a.txt b.txt 2>/dev/null | wc -l) -le 1'`;
    const engine = await open({ parallelSafeGates: [verify] });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify,
      tasks: [
        { name: 'add-a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'add-b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
      ],
    });
    const wt = job.result?.worktrees;
    // merged into the merge's tree, but not into the workspace
    expect(wt?.tasks.map((t) => t.merge)).toEqual(['not_merged', 'not_merged']);
    expect(wt?.merges).toMatchObject([{ tasks: ['add-a', 'add-b'], applied: false, verification: { ok: false } }]);
    const kept = wt?.merges[0]?.path ?? '';
    expect(readFileSync(join(kept, 'a.txt'), 'utf8') + readFileSync(join(kept, 'b.txt'), 'utf8')).toBe('a\nb\n');
    expect(existsSync(join(ws, 'a.txt')) || existsSync(join(ws, 'b.txt'))).toBe(false);
    expect(job.status).toBe('partial');
    const doubt = job.result?.proof?.uncertainty.find((u) => u.code === 'merged_tree_fails');
    expect(doubt?.detail).toMatch(/^the merged tree of add-a, add-b fails its verification \(each passed alone\)/);
    expect(job.verdict).toContain('not applied');
  });

  it('merge none: branches left for review, the workspace untouched; a failed task keeps its worktree and says where', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: `sh -c 'test ! -f bad.txt'`,
      fix_rounds: 0,
      tasks: [
        { name: 'good', instruction: 'write good', files: ['good.txt'], command: 'echo ok > good.txt' },
        { name: 'bad', instruction: 'write bad', files: ['bad.txt'], command: 'echo no > bad.txt' },
      ],
    });
    const wt = job.result?.worktrees;
    // not parallel: the request is sequential
    expect(wt?.classes.map((c) => c.class)).toEqual(['sequential', 'sequential']);
    expect(wt?.tasks.map((t) => [t.task, t.state, t.commit !== null])).toEqual([
      ['good', 'removed', true],
      ['bad', 'kept', true],
    ]);
    const kept = wt?.tasks[1]?.path ?? '';
    expect(readFileSync(join(kept, 'bad.txt'), 'utf8')).toBe('no\n');
    expect(existsSync(join(ws, 'good.txt'))).toBe(false);
    expect(git(ws, 'show', `gaffer/${job.id}/good:good.txt`)).toBe('ok');
    expect(wt?.merges).toEqual([]);
    expect(job.result?.files_changed).toEqual(['bad.txt', 'good.txt']);
    expect(job.status).toBe('partial');
  });

  it('a worker that commits content itself and deletes it from disk gets none of it onto its branch or into the workspace', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    // the evidence sees only ok.txt; the planted file lives in the worker's own commit alone
    const cheat =
      'echo evil > planted.sh && git add planted.sh && git -c user.name=w -c user.email=w@w commit -qm sneak && git rm -q planted.sh && echo ok > ok.txt';
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      verify: 'exit 0',
      tasks: [{ name: 'sneaky', instruction: 'write ok', command: cheat }],
    });
    const row = job.result?.worktrees?.tasks[0];
    expect(row?.files).toEqual(['ok.txt']);
    expect(git(ws, 'ls-tree', '-r', '--name-only', row?.branch ?? '')).not.toContain('planted.sh');
    expect(git(ws, 'log', '--format=%s', row?.branch ?? '').split('\n')).not.toContain('sneak');
    expect(existsSync(join(ws, 'ok.txt'))).toBe(true);
    expect(existsSync(join(ws, 'planted.sh'))).toBe(false);
  });

  it('the next worktrees are made while a task runs; cancelled before their turn, they go with their branches, as if never made', async () => {
    // one task at a time: the second task's worktree is made ahead, the third's waits
    const engine = await open({ parallelSafeGates: ['exit 0'] }, 1);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      isolation: 'worktree',
      parallel: true,
      verify: 'exit 0',
      tasks: [
        { name: 'slow', instruction: 'wait', files: ['a.txt'], command: 'echo a > a.txt; sleep 60' },
        { name: 'next', instruction: 'b', files: ['b.txt'], command: 'echo b > b.txt' },
        { name: 'last', instruction: 'c', files: ['c.txt'], command: 'echo c > c.txt' },
      ],
    });
    await engine.waitFor(job.id, 'worker:slow:running', 30);
    const ahead = join(engine.dataDir, 'worktrees', job.id, 'next');
    for (let i = 0; i < 300 && !existsSync(join(ahead, 'README.md')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(join(ahead, 'README.md'))).toBe(true);
    expect(existsSync(join(engine.dataDir, 'worktrees', job.id, 'last'))).toBe(false);
    engine.cancel(job.id);
    await engine.settled(job.id);
    const final = engine.get(job.id, { full: true });
    expect(final.status).toBe('cancelled');
    // the task that ran keeps its worktree and branch; the one made ahead left nothing, the last was never made
    expect(final.result?.worktrees?.tasks.map((t) => [t.task, t.state])).toEqual([['slow', 'kept']]);
    expect(git(ws, 'for-each-ref', '--format=%(refname:short)', `refs/heads/gaffer/${job.id}/`)).toBe(
      `gaffer/${job.id}/slow`,
    );
    expect(existsSync(ahead)).toBe(false);
    expect(git(ws, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(2);
  });

  it('gates not on the allowlist run one at a time, and say why', async () => {
    const engine = await open({ parallelSafeGates: [] });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      parallel: true,
      verify: 'exit 0',
      tasks: [
        { name: 'a', instruction: 'a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'b', instruction: 'b', files: ['b.txt'], command: 'echo b > b.txt' },
      ],
    });
    expect(job.result?.worktrees?.classes).toEqual([
      {
        task: 'a',
        class: 'sequential',
        why: 'gate `exit 0` is not on fanout.parallel_safe_gates (it might touch shared state)',
      },
      {
        task: 'b',
        class: 'sequential',
        why: 'gate `exit 0` is not on fanout.parallel_safe_gates (it might touch shared state)',
      },
    ]);
    // one at a time: b's worker started after a's ended
    const events = engine.events(job.id).events;
    const at = (name: string, event: string) => events.findIndex((e) => e.name === name && e.event === event);
    expect(at('b', 'started')).toBeGreaterThan(at('a', 'done'));
  });
});

describe('worktrees later', () => {
  it('gaffer merge takes the branches a merge-none job left, verified; ls shows each with its state; prune deletes what is merged', async () => {
    const engine = await open({ keepDays: 30 });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: `sh -c 'test ! -f bad.txt'`,
      fix_rounds: 0,
      tasks: [
        { name: 'add-a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'add-b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
        { name: 'bad', instruction: 'write bad', files: ['bad.txt'], command: 'echo no > bad.txt' },
      ],
    });
    expect((await engine.worktrees()).map((e) => [e.task, e.state])).toEqual([
      ['add-a', 'unmerged'],
      ['add-b', 'unmerged'],
      ['bad', 'kept'],
    ]);
    const { job: merge } = await engine.merge(job.id, null);
    await engine.settled(merge.id);
    expect(engine.get(merge.id).status).toBe('done');
    expect(engine.get(job.id, { full: true }).result?.worktrees?.merges).toMatchObject([
      { tasks: ['add-a', 'add-b'], applied: true, verification: { ok: true } },
    ]);
    expect(engine.events(merge.id).events.map((e) => e.message)).toContain(
      'applying the verified merge to the workspace',
    );
    expect(readFileSync(join(ws, 'a.txt'), 'utf8') + readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('a\nb\n');
    expect(existsSync(join(ws, 'bad.txt'))).toBe(false);
    // the job says so, as ls does
    expect(engine.get(job.id, { full: true }).result?.worktrees?.tasks.map((t) => t.merge ?? null)).toEqual([
      'merged',
      'merged',
      null,
    ]);
    expect((await engine.worktrees()).map((e) => [e.task, e.state])).toEqual([
      ['add-a', 'merged'],
      ['add-b', 'merged'],
      ['bad', 'kept'],
      ['+merged', 'merged'],
    ]);
    // nothing left to merge but the failed task, which must be named
    await expect(engine.merge(job.id, null)).rejects.toThrow(/no passing branch left to merge/);
    // prune: merged branches go; the failed task's worktree is young (keep_days 30) and stays
    const pruned = await engine.pruneWorktrees();
    expect(pruned.deleted_branches.sort()).toEqual([
      `gaffer/${job.id}/+merged`,
      `gaffer/${job.id}/add-a`,
      `gaffer/${job.id}/add-b`,
    ]);
    expect(pruned.removed_worktrees).toEqual([]);
    expect((await engine.worktrees()).map((e) => [e.task, e.state])).toEqual([['bad', 'kept']]);
  });

  it('prune under worktrees.max_gb removes the oldest kept worktrees first, and keeps their branches', async () => {
    const engine = await open({ maxGb: 0.000001, keepDays: 30 });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const failing = (name: string) => ({
      workspace: ws,
      isolation: 'worktree',
      verify: `sh -c 'test ! -f ${name}.txt'`,
      fix_rounds: 0,
      tasks: [{ name, instruction: `write ${name}`, files: [`${name}.txt`], command: `echo x > ${name}.txt` }],
    });
    const older = await run(engine, failing('older'));
    await new Promise((r) => setTimeout(r, 1100)); // a later end, to the second
    const newer = await run(engine, failing('newer'));
    const paths = [older, newer].map((j) => j.result?.worktrees?.tasks[0]?.path ?? '');
    expect(paths.every((p) => existsSync(p))).toBe(true);
    const pruned = await engine.pruneWorktrees();
    // young (keep_days 30) but over the disk cap (~1 KB): the oldest goes first, then the next
    expect(pruned.removed_worktrees).toEqual(paths);
    expect(pruned.deleted_branches).toEqual([]);
    expect(
      git(ws, 'branch', '--list', 'gaffer/*')
        .split('\n')
        .map((b) => b.trim())
        .sort(),
    ).toEqual([`gaffer/${newer.id}/newer`, `gaffer/${older.id}/older`].sort());
  });

  it.skipIf(!probeSandbox().available)(
    'sandboxed, a worker in its worktree cannot write the workspace itself',
    async () => {
      const engine = await Engine.open({
        dataDir: join(tempDir('gaffer-data-'), 'data'),
        runners: createRunners({ sandbox: createSandbox('auto') }),
        sandbox: createSandbox('auto'),
      });
      engines.push(engine);
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const job = await run(engine, {
        workspace: ws,
        isolation: 'worktree',
        verify: 'none',
        tasks: [
          {
            name: 'escape',
            instruction: 'try',
            files: ['out.txt'],
            command: `(echo x > ${ws}/escaped.txt) 2>/dev/null; echo ok > out.txt`,
          },
        ],
      });
      expect(job.result?.workers[0]).toMatchObject({ status: 'done' });
      expect(existsSync(join(ws, 'escaped.txt'))).toBe(false);
      expect(git(ws, 'show', `gaffer/${job.id}/escape:out.txt`)).toBe('ok');
    },
  );
});

describe('worktree setup', () => {
  it('each worktree gets the .env the .worktreeinclude names, linked node_modules, and a port of its own: two servers at once; the merged tree gets them too', async () => {
    // the verification needs the dependency: so does the merged tree's
    const verify = `node -e "process.exit(require('dep') === 42 ? 0 : 1)"`;
    const engine = await open({ parallelSafeGates: [verify] });
    const ws = makeWorkspace(
      {
        '.gitignore': '.env\nnode_modules/\n',
        '.worktreeinclude': '.env\n',
        'package-lock.json': '{"lockfileVersion":3}\n',
        'README.md': 'x\n',
      },
      { git: true },
    );
    writeFileSync(join(ws, '.env'), 'SECRET_URL=postgres://local\n');
    execFileSync('mkdir', ['-p', join(ws, 'node_modules', 'dep')]);
    writeFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'module.exports = 42;\n');
    // a dev server on $PORT held while the sibling starts its own, then the port written down
    const serve = (name: string) =>
      `grep -q SECRET_URL .env && node -e "const s=require('http').createServer();s.listen(Number(process.env.PORT),'127.0.0.1',()=>{require('fs').writeFileSync('${name}.txt', process.env.GAFFER_PORT + ' ' + require('dep'));setTimeout(()=>s.close(),1500)})"`;
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify,
      tasks: [
        { name: 'web-a', instruction: 'serve a', files: ['web-a.txt'], command: serve('web-a') },
        { name: 'web-b', instruction: 'serve b', files: ['web-b.txt'], command: serve('web-b') },
      ],
    });
    expect(job.status).toBe('done');
    expect(job.result?.worktrees?.classes.map((c) => c.class)).toEqual(['parallel', 'parallel']);
    // both servers were up at once: each started before the other ended
    const events = engine.events(job.id).events;
    const at = (name: string, event: string) => events.findIndex((e) => e.name === name && e.event === event);
    expect(Math.max(at('web-a', 'started'), at('web-b', 'started'))).toBeLessThan(
      Math.min(at('web-a', 'done'), at('web-b', 'done')),
    );
    const rows = job.result?.worktrees?.tasks ?? [];
    const written = rows.map((t) => git(ws, 'show', `${t.branch}:${t.task}.txt`));
    expect(written.map((w) => w.split(' ')[1])).toEqual(['42', '42']);
    const ports = written.map((w) => Number(w.split(' ')[0]));
    expect(ports).toEqual(rows.map((t) => t.port));
    expect(new Set(ports).size).toBe(2);
    for (const t of rows) {
      expect(t.setup).toEqual({ deps: ['node_modules linked from the workspace'], included: 1, command: null });
      // what gaffer placed is never the work: not on the branch, not in the changes
      expect(t.files).toEqual([`${t.task}.txt`]);
    }
    expect(git(ws, 'ls-tree', '-r', '--name-only', rows[0]?.branch ?? '')).not.toMatch(/\.env$|node_modules/m);
    expect(job.result?.worktrees?.merges).toMatchObject([
      { tasks: ['web-a', 'web-b'], applied: true, verification: { ok: true } },
    ]);
    expect(existsSync(join(ws, 'web-a.txt')) && existsSync(join(ws, 'web-b.txt'))).toBe(true);
    // the workspace's own node_modules is untouched by the links
    expect(readFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe('module.exports = 42;\n');
  });

  it('dependencies whose lockfile the worktree lacks are installed by the configured command, not linked, and the row says so', async () => {
    // an ignored lockfile is not in the base commit: the worktree's differs from the workspace's
    const install = 'mkdir -p node_modules/dep && echo "module.exports = 7;" > node_modules/dep/index.js';
    const engine = await open({ install: { '*': install } });
    const ws = makeWorkspace({ '.gitignore': 'node_modules/\npackage-lock.json\n', 'README.md': 'x\n' }, { git: true });
    writeFileSync(join(ws, 'package-lock.json'), '{"lockfileVersion":3}\n');
    execFileSync('mkdir', ['-p', join(ws, 'node_modules', 'dep')]);
    writeFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'module.exports = 42;\n');
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: 'exit 0',
      tasks: [
        {
          name: 'use',
          instruction: 'use the dependency',
          files: ['out.txt'],
          command: `node -e "require('fs').writeFileSync('out.txt', String(require('dep')))"`,
        },
      ],
    });
    expect(job.status).toBe('done');
    const row = job.result?.worktrees?.tasks[0];
    expect(row?.setup?.deps).toEqual([`node_modules installed (${install}): package-lock.json differs`]);
    expect(git(ws, 'show', `${row?.branch ?? ''}:out.txt`)).toBe('7');
  });

  it('a failing setup command is the attempt’s failure, in its row and the events; nothing runs', async () => {
    const engine = await open({ setup: { '*': 'echo preparing; echo "no database" >&2; exit 3' } });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: 'exit 0',
      tasks: [{ name: 'task', instruction: 'anything', command: 'echo ran > ran.txt' }],
    });
    const row = job.result?.workers.find((w) => w.name === 'task');
    expect(row).toMatchObject({ status: 'error', stop_reason: 'setup_failed' });
    expect(row?.error).toMatch(/^setup command failed: exit 3: preparing\s+no database$/);
    const messages = engine.events(job.id).events.map((e) => e.message);
    expect(messages).toContain('task: setup: echo preparing; echo "no database" >&2; exit 3');
    expect(messages.some((m) => m.startsWith('task: setup failed: exit 3'))).toBe(true);
    expect(job.result?.worktrees?.tasks[0]).toMatchObject({
      state: 'kept',
      setup: { command: expect.stringMatching(/^failed: exit 3/) },
    });
    expect(job.status).toBe('error');
  });
});

describe('worktree fan-out of agents', () => {
  it('two builtin agents (against the scripted model server) work at once, each in its worktree, and their merge is verified', async () => {
    const server = await startModelServer();
    try {
      const engine = await Engine.open({
        dataDir: join(tempDir('gaffer-data-'), 'data'),
        maxParallel: 2,
        runners: createRunners({
          sandbox: 'off',
          builtin: {
            endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' },
          },
        }),
        worktrees: { parallelSafeGates: ['exit 0'] },
      });
      engines.push(engine);
      const forTask = (name: string) => [
        // each holds its first turn's command for a while, so the two are seen working at once
        {
          when: (r: ModelRequest) => !r.isToolResult && r.lastText.includes(`${name}.txt`),
          toolCalls: [
            { name: 'write_file', args: { path: `${name}.txt`, content: `${name}\n` } },
            { name: 'run_command', args: { command: 'sleep 1.5' } },
          ],
        },
        {
          when: (r: ModelRequest) => r.isToolResult && r.toolResults.some((t) => t.output.includes(`${name}.txt`)),
          text: `Wrote it.\nFiles changed:\n${name}.txt`,
        },
      ];
      server.script([...forTask('alpha'), ...forTask('beta')]);
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const job = await run(engine, {
        workspace: ws,
        isolation: 'worktree',
        merge: 'auto',
        parallel: true,
        verify: 'exit 0',
        tasks: [
          { name: 'alpha', runner: 'builtin', instruction: 'write alpha.txt saying alpha', files: ['alpha.txt'] },
          { name: 'beta', runner: 'builtin', instruction: 'write beta.txt saying beta', files: ['beta.txt'] },
        ],
      });
      expect(job.status).toBe('done');
      const events = engine.events(job.id).events;
      const at = (name: string, event: string) => events.findIndex((e) => e.name === name && e.event === event);
      expect(Math.max(at('alpha', 'started'), at('beta', 'started'))).toBeLessThan(
        Math.min(at('alpha', 'done'), at('beta', 'done')),
      );
      expect(job.result?.worktrees?.tasks.map((t) => [t.task, t.files, t.merge])).toEqual([
        ['alpha', ['alpha.txt'], 'merged'],
        ['beta', ['beta.txt'], 'merged'],
      ]);
      expect(readFileSync(join(ws, 'alpha.txt'), 'utf8') + readFileSync(join(ws, 'beta.txt'), 'utf8')).toBe(
        'alpha\nbeta\n',
      );
      expect(job.result?.claimed_only).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('phase order in worktrees', () => {
  it('a review task runs after the implementers, in the merged tree of their work; its output goes on the merged branch and into the workspace', async () => {
    const engine = await open({ parallelSafeGates: ['exit 0'] });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify: 'exit 0',
      tasks: [
        { name: 'add-a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        // in the request before the other implementer, and asked in parallel: it still runs after both
        {
          name: 'check',
          type: 'review',
          instruction: 'review both',
          outputs: ['review.md'],
          command: 'cat a.txt b.txt > review.md',
        },
        { name: 'add-b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
      ],
    });
    expect(job.status).toBe('done');
    expect(job.task_order).toMatchObject({ by: 'phase', phases: [['add-a', 'add-b'], ['check']] });
    const wt = job.result?.worktrees;
    expect(wt?.classes.find((c) => c.task === 'check')).toMatchObject({
      class: 'sequential',
      why: expect.stringContaining('after the implementers'),
    });
    // the reviewer saw both implementers' work, merged
    expect(readFileSync(join(ws, 'review.md'), 'utf8')).toBe('a\nb\n');
    expect(wt?.merges).toMatchObject([{ tasks: ['add-a', 'add-b'], applied: true, verification: { ok: true } }]);
    expect(git(ws, 'show', `gaffer/${job.id}/+merged:review.md`)).toBe('a\nb');
    const rows = job.result?.workers ?? [];
    expect(rows.map((w) => [w.name, w.role, w.status])).toEqual([
      ['add-a', 'worker', 'done'],
      ['check', 'reviewer', 'done'],
      ['add-b', 'worker', 'done'],
    ]);
    expect(job.result?.files_changed).toEqual(['a.txt', 'b.txt', 'review.md']);
  });

  it('a reviewer that writes a project file in the merged tree: a violation, not retried, nothing applied', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      verify: 'exit 0',
      tasks: [
        { name: 'add-a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
        { name: 'check', type: 'review', instruction: 'review it', command: 'echo fixed > a.txt' },
      ],
    });
    const check = job.result?.workers.filter((w) => w.name.startsWith('check')) ?? [];
    expect(check).toHaveLength(1);
    expect(check[0]).toMatchObject({ role: 'reviewer', status: 'error', stop_reason: 'write_policy_violation' });
    expect(job.result?.proof?.uncertainty.map((u) => u.code)).toContain('write_policy_violation');
    expect(job.status).not.toBe('done');
    expect(job.result?.worktrees?.merges[0]).toMatchObject({
      applied: false,
      why: expect.stringContaining('wrote outside its write policy'),
    });
    expect(existsSync(join(ws, 'a.txt'))).toBe(false);
  });
});

describe("a worker that rewrites its worktree's .git file", () => {
  it("cannot point gaffer's commit and reset at the user's own checkout: the link is put back and charged to it", async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const head = git(ws, 'symbolic-ref', 'HEAD');
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: 'exit 0',
      tasks: [
        {
          name: 'evil',
          instruction: 'write a',
          files: ['a.txt'],
          command: `echo a > a.txt && echo "gitdir: ${join(ws, '.git')}" > .git`,
        },
      ],
    });
    // the user's branch, index and working tree are as they were
    expect(git(ws, 'symbolic-ref', 'HEAD')).toBe(head);
    expect(git(ws, 'status', '--porcelain')).toBe('');
    expect(git(ws, 'log', '--format=%s')).toBe('init');
    // the task's work is on its own branch all the same; the rewrite is the worker's violation
    expect(git(ws, 'show', `gaffer/${job.id}/evil:a.txt`)).toBe('a');
    expect(job.result?.workers[0]).toMatchObject({
      status: 'error',
      stop_reason: 'write_policy_violation',
      error: expect.stringMatching(/: \.git$/),
    });
    expect(job.status).not.toBe('done');
  });

  it('cannot hide a new file from the evidence behind a repository of its own that ignores everything', async () => {
    const engine = await open();
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    // a repository that ignores every file, the worktree's .git pointed at it, then the file to hide
    const blind = join(tempDir('gaffer-blind-'), 'repo.git');
    const hide = `git init -q --bare ${blind} && echo "*" > ${blind}/info/exclude && echo "gitdir: ${blind}" > .git && echo s > secret.txt`;
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: 'exit 0',
      tasks: [{ name: 'sly', instruction: 'write a', files: ['a.txt'], command: `echo a > a.txt && ${hide}` }],
    });
    expect(job.result?.files_changed).toEqual(['a.txt', 'secret.txt']);
    expect(job.result?.workers[0]).toMatchObject({ status: 'error', stop_reason: 'write_policy_violation' });
    expect(job.result?.workers[0]?.error).toContain('.git');
  });
});

describe('worktree requests', () => {
  it('a workspace that is not a repository, or has no commit, is refused before anything starts', async () => {
    const engine = await open();
    const plain = makeWorkspace({ 'a.txt': 'a\n' });
    expect(() =>
      engine.submit({ workspace: plain, isolation: 'worktree', tasks: [{ instruction: 'x', command: 'true' }] }),
    ).toThrow(/not inside a git repository/);
    const empty = makeWorkspace({ 'a.txt': 'a\n' });
    git(empty, 'init', '-q');
    expect(() =>
      engine.submit({ workspace: empty, isolation: 'worktree', tasks: [{ instruction: 'x', command: 'true' }] }),
    ).toThrow(/HEAD has no commit yet/);
  });
});
