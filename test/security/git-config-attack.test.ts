import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { runGit } from '../../src/evidence/git.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// Issue 32 point 1: gaffer's git runs no repository code. A worker plants git config and
// attributes that run a program (filters, diff and merge drivers, textconv, an external diff,
// hooks, fsmonitor, a signature program, an include) and every git call gaffer makes after it —
// the checkpoint, git facts, a worktree's commit and merge, the next job — must not run any of it.

/** The script every planted key runs: it appends its name to `marker` (outside every sandbox) and passes its input on. */
function plantScript(marker: string): string {
  return `#!/bin/sh\necho "ran $0 $*" >> ${marker}\ncat\n`;
}

/** A git config that makes almost any git command run `script`, defined both directly and through an include. */
function plantedConfig(script: string): string {
  return [
    '[filter "evil"]',
    `\tclean = ${script} clean`,
    `\tsmudge = ${script} smudge`,
    '\trequired = true',
    '[diff "evil"]',
    `\ttextconv = ${script} textconv`,
    `\tcommand = ${script} diffcmd`,
    '[merge "evil"]',
    `\tdriver = ${script} merge %O %A %B`,
    '[diff]',
    `\texternal = ${script} external`,
    '[core]',
    `\tfsmonitor = ${script}`,
    `\thooksPath = ${script.replace(/evil\.sh$/, 'hooks')}`,
    `\tpager = ${script} pager`,
    `\teditor = ${script} editor`,
    '[log]',
    '\tshowSignature = true',
    '[gpg]',
    `\tprogram = ${script}`,
    '[include]',
    `\tpath = ${script.replace(/evil\.sh$/, 'evil.inc')}`,
    '',
  ].join('\n');
}

/** The shell a worker runs to plant it all in the repository whose git dir `$GD` names. */
function plantCommand(marker: string): string {
  const cfg = plantedConfig('$GD/evil.sh');
  return [
    'GD=$(git rev-parse --path-format=absolute --git-common-dir)',
    `printf '%s' '${plantScript(marker).replace(/'/g, "'\\''")}' > "$GD/evil.sh"`,
    'chmod +x "$GD/evil.sh"',
    'mkdir -p "$GD/hooks-evil" "$GD/info"',
    `printf '%s\\n' '${cfg.replace(/'/g, "'\\''")}' | sed "s#\\$GD#$GD#g" >> "$GD/config"`,
    `printf '[filter "inc"]\\n\\tclean = %s inc-clean\\n' "$GD/evil.sh" > "$GD/evil.inc"`,
    'printf "* filter=evil diff=evil merge=evil\\n" > "$GD/info/attributes"',
    'printf "*.txt filter=inc diff=evil\\n" > .gitattributes',
    // the sandbox must hold this one: the marker is outside it
    `touch ${marker}.direct 2>/dev/null || true`,
    'echo changed >> notes.txt',
  ].join('\n');
}

let sandboxed = false;
beforeAll(() => {
  sandboxed = probeSandbox().available;
});

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(): Promise<Engine> {
  const sandbox = createSandbox('required');
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox }),
    sandbox,
  });
  engines.push(engine);
  return engine;
}

async function run(engine: Engine, body: Record<string, unknown>) {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

function markerIn(dir: string): string {
  return join(dir, 'marker');
}

function ran(dir: string): string[] {
  return readdirSync(dir);
}

describe('gaffer runs no repository code (issue 32)', () => {
  it('the plant works on a plain git (so the rest can fail), and runGit runs none of it, whatever the command', async () => {
    const outside = tempDir('gaffer-marker-');
    const ws = makeWorkspace({ 'a.txt': 'one\n', 'notes.txt': 'n\n' }, { git: true });
    const gd = join(ws, '.git');
    writeFileSync(join(gd, 'evil.sh'), plantScript(markerIn(outside)), { mode: 0o755 });
    mkdirSync(join(gd, 'hooks'), { recursive: true });
    for (const hook of [
      'pre-commit',
      'post-commit',
      'post-checkout',
      'post-merge',
      'reference-transaction',
      'pre-auto-gc',
    ]) {
      writeFileSync(join(gd, 'hooks', hook), plantScript(markerIn(outside)), { mode: 0o755 });
    }
    writeFileSync(
      join(gd, 'config'),
      `${execFileSync('cat', [join(gd, 'config')], { encoding: 'utf8' })}${plantedConfig(join(gd, 'evil.sh'))}`,
    );
    writeFileSync(join(gd, 'evil.inc'), `[filter "inc"]\n\tclean = ${join(gd, 'evil.sh')} inc-clean\n`);
    writeFileSync(join(gd, 'info', 'attributes'), '* filter=evil diff=evil merge=evil\n');
    writeFileSync(join(ws, '.gitattributes'), '*.txt filter=inc diff=evil\n');
    writeFileSync(join(ws, 'a.txt'), 'two\n');

    // a plain git with the user's config runs it
    execFileSync('git', ['diff', 'HEAD'], {
      cwd: ws,
      stdio: 'ignore',
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
    });
    expect(existsSync(markerIn(outside))).toBe(true);
    execFileSync('rm', ['-f', markerIn(outside)]);

    const calls: string[][] = [
      ['status', '--porcelain'],
      ['diff', '--shortstat', 'HEAD'],
      ['diff', 'HEAD'],
      ['diff', '--binary', 'HEAD'],
      ['log', '-p', '-1'],
      ['show', 'HEAD'],
      ['add', '-A'],
      ['stash', 'create'],
      ['-c', 'user.name=g', '-c', 'user.email=g@g', 'commit', '-q', '-m', 'work'],
      ['checkout', '-q', '-b', 'side', 'HEAD~1'],
      ['-c', 'user.name=g', '-c', 'user.email=g@g', 'merge', '--no-edit', 'main'],
      ['gc', '--auto'],
    ];
    for (const args of calls) await runGit(args, { cwd: ws, timeoutMs: 30_000 });
    expect(existsSync(markerIn(outside)) ? execFileSync('cat', [markerIn(outside)], { encoding: 'utf8' }) : '').toBe(
      '',
    );
  });

  it('a config that is a FIFO is refused at once, naming it, and no git starts', async () => {
    const ws = makeWorkspace({ 'a.txt': 'one\n' }, { git: true });
    execFileSync('rm', [join(ws, '.git', 'config')]);
    execFileSync('mkfifo', [join(ws, '.git', 'config')]);
    const started = Date.now();
    const r = await runGit(['status', '--porcelain'], { cwd: ws, timeoutMs: 30_000 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(r.exitCode).toBeNull();
    expect(r.spawnError).toContain(`git config ${join(ws, '.git', 'config')}: a FIFO, not a regular file`);
  });

  it('a sandboxed worker that plants it in a shared job: nothing runs, the verdict leads with the keys, not proved; the next job runs none of it either', async (ctx) => {
    if (!sandboxed) return ctx.skip();
    const engine = await open();
    const outside = tempDir('gaffer-marker-');
    const ws = makeWorkspace({ 'a.txt': 'one\n', 'notes.txt': 'n\n' }, { git: true });
    const job = await run(engine, {
      workspace: ws,
      verify: 'git status --short >/dev/null; exit 0',
      tasks: [{ name: 'plant', instruction: 'plant', command: plantCommand(markerIn(outside)) }],
    });
    expect(ran(outside)).toEqual([]);
    // the plant is there (the user's own next git command would run it)
    expect(execFileSync('git', ['config', '--get', 'filter.evil.clean'], { cwd: ws, encoding: 'utf8' })).toContain(
      'evil.sh clean',
    );
    expect(job.verdict).toMatch(
      /^planted git code that your next git command here would run \(gaffer's did not\): \.git\/config \(core\.editor, core\.fsmonitor, core\.hookspath, core\.pager \+9\), \.git\/info\/attributes \(diff=evil, filter=evil, merge=evil\), \.gitattributes \(filter=inc, diff=evil\)/,
    );
    expect(job.result?.changes?.outside_evidence?.git_code?.[0]).toContain('filter.evil.clean');
    expect(job.result?.proof?.verdict).not.toBe('proved');
    expect(job.result?.proof?.uncertainty.map((u) => u.code)).toContain('git_code_planted');

    // the next job on the same workspace: its checkpoint, facts and evidence run nothing either
    const next = await run(engine, {
      workspace: ws,
      verify: 'exit 0',
      tasks: [{ name: 'honest', instruction: 'edit', command: 'echo more >> a.txt' }],
    });
    expect(next.status).toBe('done');
    expect(next.result?.files_changed).toEqual(['a.txt']);
    expect(ran(outside)).toEqual([]);

    // a follow-up of the planting task: its instruction carries the task's diff, read without the drivers
    const { job: follow } = await engine.followUp(job.id, 'plant', {
      comments: [{ file: 'notes.txt', line: 1, text: 'again' }],
    });
    await engine.settled(follow.id);
    expect(engine.get(follow.id).status).not.toBe('error');
    expect(ran(outside)).toEqual([]);
  });

  it("once it is in the repository, a worktree job's task commits, merge into the workspace and removals run none of it", async (ctx) => {
    if (!sandboxed) return ctx.skip();
    const engine = await open();
    const outside = tempDir('gaffer-marker-');
    const ws = makeWorkspace({ 'a.txt': 'one\n', 'b.txt': 'one\n', 'notes.txt': 'n\n' }, { git: true });
    await run(engine, {
      workspace: ws,
      verify: 'exit 0',
      tasks: [{ name: 'plant', instruction: 'plant', command: plantCommand(markerIn(outside)) }],
    });
    expect(execFileSync('git', ['config', '--get', 'filter.evil.clean'], { cwd: ws, encoding: 'utf8' })).toContain(
      'evil.sh clean',
    );
    // committed, so the worktrees check out attributes that name the drivers
    execFileSync(
      'git',
      [
        '-c',
        'user.name=t',
        '-c',
        'user.email=t@t',
        '-c',
        'core.hooksPath=/dev/null',
        '-c',
        'core.fsmonitor=false',
        '-c',
        'filter.evil.clean=',
        '-c',
        'filter.inc.clean=',
        '-c',
        'filter.evil.required=false',
        'commit',
        '-qam',
        'planted',
      ],
      { cwd: ws, env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } },
    );
    execFileSync('rm', ['-f', markerIn(outside)]);
    const job = await run(engine, {
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify: 'exit 0',
      tasks: [
        { name: 'one', instruction: 'edit', files: ['a.txt'], command: 'echo two >> a.txt' },
        { name: 'two', instruction: 'edit', files: ['b.txt'], command: 'echo two >> b.txt' },
      ],
    });
    expect(ran(outside)).toEqual([]);
    expect(job.status).toBe('done');
    expect(job.result?.worktrees?.merges.length).toBeGreaterThan(0);
    expect(execFileSync('cat', [join(ws, 'a.txt'), join(ws, 'b.txt')], { encoding: 'utf8' })).toBe(
      'one\ntwo\none\ntwo\n',
    );
  });
});

describe('a work tree a worker points elsewhere (issue 32)', () => {
  it("core.worktree set to another folder: gaffer's git still looks at the folder that holds .git", async () => {
    const ws = makeWorkspace({ 'a.txt': 'one\n' }, { git: true });
    const elsewhere = tempDir('gaffer-elsewhere-');
    writeFileSync(join(elsewhere, 'secret.txt'), 'not yours\n');
    execFileSync('git', ['config', 'core.worktree', elsewhere], { cwd: ws });
    writeFileSync(join(ws, 'a.txt'), 'two\n');
    const status = await runGit(['status', '--porcelain'], { cwd: ws, timeoutMs: 30_000 });
    expect(status.stdout.toString()).toBe(' M a.txt\n');
  });
});
