import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitFactsLimits, readGitFacts } from '../../src/evidence/git-facts.js';
import { cleanEnv, git, tempDir, write } from './helpers.js';

/** What the spec names: the lines of `git status --porcelain` and `git diff --shortstat HEAD`, scoped to the workspace (read-only). */
function plainFacts(workspace: string): { repo: true; dirty_count: number; shortstat: string } {
  const env = { ...cleanEnv(), GIT_OPTIONAL_LOCKS: '0' };
  const run = (...args: string[]): string => execFileSync('git', args, { cwd: workspace, env, encoding: 'utf8' });
  const lines = run('status', '--porcelain', '--', '.')
    .split('\n')
    .filter((l) => l !== '');
  return { repo: true, dirty_count: lines.length, shortstat: run('diff', '--shortstat', 'HEAD', '--', '.').trim() };
}

type Step = [what: string, change: (repo: string) => Promise<void> | void];

const steps: Step[] = [
  ['clean', () => undefined],
  ['untracked only', (r) => write(r, { 'new.txt': 'n\n', 'pkg/new.js': 'n\n' })],
  ['a file modified', (r) => write(r, { 'pkg/a.js': 'a\na2\n' })],
  [
    'staged and then changed again, one reverted in the worktree',
    async (r) => {
      await write(r, { 'pkg/b.js': 'b2\n', 'top.txt': 'top2\n' });
      git(r, 'add', 'pkg/b.js', 'top.txt');
      await write(r, { 'pkg/b.js': 'b3\n', 'top.txt': 'top\n' });
    },
  ],
  [
    'a staged rename and a deletion',
    (r) => {
      git(r, 'mv', 'pkg/c.js', 'pkg/c-renamed.js');
      git(r, 'rm', '-q', 'other/d.txt');
    },
  ],
  [
    'odd names: a space, a quote, a newline, a leading dash, a glob',
    (r) =>
      write(r, {
        'pkg/a b.js': 'changed\n',
        'pkg/"q".js': 'changed\n',
        'pkg/line\nbreak.js': 'changed\n',
        'pkg/-dash.js': 'changed\n',
        'pkg/*.js': 'changed\n',
      }),
  ],
  ['a file deleted from the worktree only', (r) => fs.rm(path.join(r, 'pkg/e.js'))],
  [
    'a tracked file whose name is not UTF-8, changed',
    async (r) => {
      const name = Buffer.concat([Buffer.from(`${r}/pkg/caf`), Buffer.from([0xe9])]);
      await fs.writeFile(name, 'latin1\n');
      git(r, 'add', '-A');
      git(r, 'commit', '-qm', 'latin1');
      await fs.writeFile(name, 'latin1\nmore\nlines\n');
    },
  ],
];

async function oddRepo(): Promise<string> {
  const repo = await tempDir();
  git(repo, 'init', '-q');
  await write(repo, {
    'top.txt': 'top\n',
    'pkg/a.js': 'a\n',
    'pkg/b.js': 'b\n',
    'pkg/c.js': 'c\nc\nc\n',
    'pkg/e.js': 'e\n',
    'pkg/a b.js': 's\n',
    'pkg/"q".js': 'q\n',
    'pkg/line\nbreak.js': 'l\n',
    'pkg/-dash.js': 'd\n',
    'pkg/*.js': 'g\n',
    'pkg/x.js': 'untouched\n',
    'other/d.txt': 'd\n',
  });
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'init');
  return repo;
}

describe('git facts of the user repository', () => {
  it('are what git status --porcelain and diff --shortstat HEAD say, at the top and in a folder, asking about few paths or the whole tree', async () => {
    for (const pathspecMax of [gitFactsLimits.pathspecMax, 1]) {
      const saved = { ...gitFactsLimits };
      gitFactsLimits.pathspecMax = pathspecMax;
      try {
        const repo = await oddRepo();
        for (const [what, change] of steps) {
          await change(repo);
          for (const ws of [repo, path.join(repo, 'pkg')]) {
            expect(await readGitFacts(ws), `${what} (${ws === repo ? 'top' : 'pkg'}, at most ${pathspecMax})`).toEqual(
              plainFacts(ws),
            );
          }
        }
      } finally {
        Object.assign(gitFactsLimits, saved);
      }
    }
  });
});
