import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addWorktreeFiles } from '../../src/evidence/worktree-add.js';
import { checkOutWorktree, readRepo, removeTaskWorktreeGit, removeWorktree } from '../../src/evidence/worktree-git.js';
import { cleanEnv, git, tempDir, write } from './helpers.js';

const WHO = { name: 'gaffer', email: 'gaffer@localhost' };
const AT = new Date(1_700_000_000_000);
const ENV = {
  ...cleanEnv(),
  GIT_COMMITTER_NAME: 'gaffer',
  GIT_COMMITTER_EMAIL: 'gaffer@localhost',
  GIT_AUTHOR_NAME: 'gaffer',
  GIT_AUTHOR_EMAIL: 'gaffer@localhost',
  GIT_COMMITTER_DATE: '@1700000000 +0000',
};

async function repository(): Promise<{ root: string; repo: string; common: string; head: string }> {
  const root = await tempDir();
  const repo = path.join(root, 'repo');
  await write(repo, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'init');
  return { root, repo, common: path.join(repo, '.git'), head: git(repo, 'rev-parse', 'HEAD').trim() };
}

/** Every file under a folder with its content, the reflogs' times and zones put aside. */
function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const entry of readdirSync(path.join(dir, at), { withFileTypes: true })) {
      const rel = path.join(at, entry.name);
      if (entry.isDirectory()) walk(rel);
      else out[rel] = readFileSync(path.join(dir, rel), 'utf8').replace(/ \d+ [+-]\d{4}(\t|\n)/g, ' T$1');
    }
  };
  walk('');
  return out;
}

const gitIn = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, env: ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

describe('a worktree added without a git process', () => {
  it('is what `git worktree add --no-checkout -b` makes, and git works with it: checkout, status, list, prune, remove', async () => {
    const ours = await repository();
    const theirs = await repository();
    // the same commit in both (same content, same time): the files can be compared byte for byte
    expect(theirs.head).not.toBe('');
    const written = addWorktreeFiles(ours.common, path.join(ours.root, 'j1', 't0'), 'gaffer/j1/t0', ours.head, WHO, AT);
    expect(written).toEqual({ gitDir: path.join(ours.common, 'worktrees', 't0') });
    gitIn(
      theirs.repo,
      '-c',
      'core.hooksPath=/dev/null',
      'worktree',
      'add',
      '--quiet',
      '--no-checkout',
      '-b',
      'gaffer/j1/t0',
      path.join(theirs.root, 'j1', 't0'),
      theirs.head,
    );
    const normal = (files: Record<string, string>, s: { root: string; head: string }) =>
      JSON.parse(JSON.stringify(files).replaceAll(s.root, 'ROOT').replaceAll(s.head, 'HEAD'));
    expect(normal(filesOf(path.join(ours.common, 'worktrees')), ours)).toEqual(
      normal(filesOf(path.join(theirs.common, 'worktrees')), theirs),
    );
    expect(normal(filesOf(path.join(ours.common, 'refs', 'heads', 'gaffer')), ours)).toEqual(
      normal(filesOf(path.join(theirs.common, 'refs', 'heads', 'gaffer')), theirs),
    );
    expect(normal(filesOf(path.join(ours.common, 'logs', 'refs', 'heads', 'gaffer')), ours)).toEqual(
      normal(filesOf(path.join(theirs.common, 'logs', 'refs', 'heads', 'gaffer')), theirs),
    );
    expect(readFileSync(path.join(ours.root, 'j1', 't0', '.git'), 'utf8')).toBe(
      `gitdir: ${path.join(ours.common, 'worktrees', 't0')}\n`,
    );
    for (const p of ['worktrees/t0', 'worktrees/t0/HEAD', 'refs/heads/gaffer/j1/t0'])
      expect(statSync(path.join(ours.common, p)).mode & 0o777, p).toBe(
        statSync(path.join(theirs.common, p)).mode & 0o777,
      );

    const dir = path.join(ours.root, 'j1', 't0');
    await checkOutWorktree(
      { dir, gitDir: path.join(ours.common, 'worktrees', 't0'), commonDir: ours.common },
      path.join(ours.root, 'index-copy'),
    );
    expect(readFileSync(path.join(dir, 'sub', 'b.txt'), 'utf8')).toBe('b\n');
    expect(gitIn(dir, 'status', '--porcelain')).toBe('');
    expect(gitIn(dir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('gaffer/j1/t0');
    expect(gitIn(ours.repo, 'worktree', 'list', '--porcelain')).toContain(
      `worktree ${dir}\nHEAD ${ours.head}\nbranch refs/heads/gaffer/j1/t0`,
    );
    gitIn(ours.repo, 'worktree', 'prune');
    expect(existsSync(path.join(ours.common, 'worktrees', 't0'))).toBe(true);
    gitIn(ours.repo, 'fsck', '--strict', '--no-dangling');
    const facts = await readRepo(ours.repo);
    if ('refused' in facts) throw new Error(facts.refused);
    expect(await removeWorktree(facts, dir)).toBeNull();
    expect(existsSync(dir)).toBe(false);
    expect(gitIn(ours.repo, 'rev-parse', 'gaffer/j1/t0')).toBe(ours.head);
  });

  it('takes a counter after a name another worktree holds, as git does', async () => {
    const s = await repository();
    gitIn(s.repo, 'worktree', 'add', '--quiet', '-b', 'kept', path.join(s.root, 'elsewhere', 't0'), s.head);
    expect(addWorktreeFiles(s.common, path.join(s.root, 'j2', 't0'), 'gaffer/j2/t0', s.head, WHO, AT)).toEqual({
      gitDir: path.join(s.common, 'worktrees', 't01'),
    });
    expect(gitIn(path.join(s.root, 'j2', 't0'), 'rev-parse', '--git-dir')).toBe(
      path.join(s.common, 'worktrees', 't01'),
    );
  });

  it('leaves to git, with nothing written, what it cannot be sure to make as git does', async () => {
    const cases: [string, string, (s: Awaited<ReturnType<typeof repository>>) => Promise<unknown> | unknown][] = [
      ['the branch exists', 'gaffer/j/t', (s) => git(s.repo, 'branch', 'gaffer/j/t')],
      [
        'the branch exists, packed',
        'gaffer/j/t',
        (s) => {
          git(s.repo, 'branch', 'gaffer/j/t');
          git(s.repo, 'pack-refs', '--all');
        },
      ],
      [
        'a packed branch it would have to be a folder of',
        'gaffer/j/t',
        (s) => {
          git(s.repo, 'branch', 'gaffer/j');
          git(s.repo, 'pack-refs', '--all');
        },
      ],
      ['a loose branch it would have to be a folder of', 'gaffer/j/t', (s) => git(s.repo, 'branch', 'gaffer/j')],
      ['a name git would rewrite', 'gaffer/j/t..x', () => undefined],
      ['the folder is there', 'gaffer/j/t', (s) => fs.mkdir(path.join(s.root, 'wt'), { recursive: true })],
      [
        'a worktree registered at that folder, its folder gone',
        'gaffer/j/t',
        async (s) => {
          gitIn(s.repo, 'worktree', 'add', '--quiet', '-b', 'old', path.join(s.root, 'wt'), s.head);
          await fs.rm(path.join(s.root, 'wt'), { recursive: true });
        },
      ],
      ['reflogs set by config', 'gaffer/j/t', (s) => git(s.repo, 'config', 'core.logAllRefUpdates', 'false')],
      ['a repository extension', 'gaffer/j/t', (s) => git(s.repo, 'config', 'extensions.worktreeConfig', 'true')],
    ];
    for (const [what, branch, setup] of cases) {
      const s = await repository();
      await setup(s);
      const before = JSON.stringify([
        filesOf(s.common),
        existsSync(path.join(s.root, 'wt')) && readdirSync(path.join(s.root, 'wt')),
      ]);
      expect(addWorktreeFiles(s.common, path.join(s.root, 'wt'), branch, s.head, WHO, AT), what).toBeNull();
      expect(
        JSON.stringify([
          filesOf(s.common),
          existsSync(path.join(s.root, 'wt')) && readdirSync(path.join(s.root, 'wt')),
        ]),
        what,
      ).toBe(before);
    }
  });
});

describe('a task worktree removed without --force, git asked only for its status', () => {
  /** A repository with a worktree made and checked out by gaffer's calls; the turn is counted. */
  async function made() {
    const s = await repository();
    await write(s.repo, { '.gitignore': '*.log\n' });
    git(s.repo, 'add', '.gitignore');
    git(s.repo, 'commit', '-qm', 'ignore');
    const head = git(s.repo, 'rev-parse', 'HEAD').trim();
    const dir = path.join(s.root, 'wt');
    const written = addWorktreeFiles(s.common, dir, 'gaffer/j/t', head, WHO, AT);
    if (written === null) throw new Error('not made');
    const wt = { dir, gitDir: written.gitDir, commonDir: s.common };
    await checkOutWorktree(wt, path.join(s.root, 'index-copy'));
    const facts = await readRepo(s.repo);
    if ('refused' in facts) throw new Error(facts.refused);
    let turns = 0;
    const turn = <T>(fn: () => Promise<T>): Promise<T> => {
      turns++;
      return fn();
    };
    return { ...s, head, dir, wt, facts, turn, turns: () => turns };
  }

  it('removes a clean worktree (ignored files too, as git does), then its administrative folder in one turn; the branch stays', async () => {
    const m = await made();
    await write(m.dir, { 'debug.log': 'ignored\n' });
    expect(await removeTaskWorktreeGit(m.facts, m.wt, m.turn)).toBeNull();
    expect(m.turns()).toBe(1);
    expect(existsSync(m.dir)).toBe(false);
    expect(existsSync(path.join(m.common, 'worktrees'))).toBe(false);
    expect(gitIn(m.repo, 'worktree', 'list', '--porcelain')).not.toContain(m.dir);
    expect(gitIn(m.repo, 'rev-parse', 'gaffer/j/t')).toBe(m.head);
  });

  it("refuses, in git's words, a worktree with an untracked or a modified file, and removes nothing", async () => {
    for (const change of [
      (dir: string) => write(dir, { 'new.txt': 'n\n' }),
      (dir: string) => write(dir, { 'a.txt': 'A\n' }),
    ]) {
      const m = await made();
      await change(m.dir);
      expect(await removeTaskWorktreeGit(m.facts, m.wt, m.turn)).toBe(
        `fatal: '${m.dir}' contains modified or untracked files, use --force to delete it`,
      );
      expect(m.turns()).toBe(0);
      expect(existsSync(path.join(m.dir, 'a.txt'))).toBe(true);
      expect(existsSync(m.wt.gitDir)).toBe(true);
    }
  });

  it('is not misled by a `.git` file a worker rewrote to name another worktree: the worktree it made is the one removed', async () => {
    const m = await made();
    const other = path.join(m.root, 'other');
    gitIn(m.repo, 'worktree', 'add', '--quiet', '-b', 'other', other, m.head);
    await fs.writeFile(path.join(m.dir, '.git'), `gitdir: ${path.join(m.common, 'worktrees', 'other')}\n`);
    expect(await removeTaskWorktreeGit(m.facts, m.wt, m.turn)).toBeNull();
    expect(existsSync(m.wt.gitDir)).toBe(false);
    expect(existsSync(path.join(m.common, 'worktrees', 'other'))).toBe(true);
    expect(gitIn(other, 'status', '--porcelain')).toBe('');
  });

  it('leaves a locked worktree to git, which refuses it', async () => {
    const m = await made();
    gitIn(m.repo, 'worktree', 'lock', m.dir);
    expect(await removeTaskWorktreeGit(m.facts, m.wt, m.turn)).toMatch(/locked/);
    expect(m.turns()).toBe(1);
    expect(existsSync(m.dir)).toBe(true);
  });
});
