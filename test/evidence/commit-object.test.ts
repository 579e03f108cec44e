import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCommitObject } from '../../src/evidence/commit-object.js';
import { cleanEnv, git, tempDir, write } from './helpers.js';

describe('a checkpoint commit written without a git process', () => {
  it('is the object git commit-tree writes (same id), and git reads and checks it', async () => {
    const dir = await tempDir();
    const gitDir = path.join(dir, 'shadow.git');
    git(dir, 'init', '-q', '--bare', gitDir);
    await write(dir, { 'ws/a.txt': 'a\n', 'ws/sub/b.txt': 'b\n' });
    const env = { ...cleanEnv(), GIT_INDEX_FILE: path.join(dir, 'index') };
    const run = (...args: string[]) =>
      execFileSync('git', [`--git-dir=${gitDir}`, `--work-tree=${path.join(dir, 'ws')}`, ...args], {
        env,
        encoding: 'utf8',
      }).trim();
    run('add', '-A');
    const tree = run('write-tree');
    const atMs = 1_700_000_123_456;
    const date = '1700000123 +0000';
    const byGit = execFileSync('git', [`--git-dir=${gitDir}`, 'commit-tree', tree, '-m', 'gaffer job1 post'], {
      env: {
        ...env,
        GIT_AUTHOR_NAME: 'gaffer',
        GIT_AUTHOR_EMAIL: 'gaffer@localhost',
        GIT_AUTHOR_DATE: date,
        GIT_COMMITTER_NAME: 'gaffer',
        GIT_COMMITTER_EMAIL: 'gaffer@localhost',
        GIT_COMMITTER_DATE: date,
      },
      encoding: 'utf8',
    }).trim();
    // a repository of its own, so the object is this function's, not git's
    const other = path.join(dir, 'other.git');
    git(dir, 'init', '-q', '--bare', other);
    execFileSync('git', [`--git-dir=${other}`, '--work-tree', path.join(dir, 'ws'), 'add', '-A'], {
      env: { ...cleanEnv(), GIT_INDEX_FILE: path.join(dir, 'index2') },
    });
    execFileSync('git', [`--git-dir=${other}`, 'write-tree'], {
      env: { ...cleanEnv(), GIT_INDEX_FILE: path.join(dir, 'index2') },
    });
    const ours = writeCommitObject(other, tree, 'gaffer job1 post', atMs);
    expect(ours).toBe(byGit);
    const read = (...args: string[]) =>
      execFileSync('git', [`--git-dir=${other}`, ...args], {
        env: cleanEnv(),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim();
    expect(read('cat-file', '-t', ours as string)).toBe('commit');
    expect(read('rev-parse', `${ours}^{tree}`)).toBe(tree);
    read('update-ref', 'refs/gaffer/x', ours as string);
    read('fsck', '--strict', '--no-dangling');
    // written again: the object is there already, the same id
    expect(writeCommitObject(other, tree, 'gaffer job1 post', atMs)).toBe(ours);
  });

  it('leaves to git what it cannot write (a tree id that is not sha1)', () => {
    expect(writeCommitObject('/nonexistent', 'a'.repeat(64), 'm', 0)).toBeNull();
  });
});
