import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addNodeWorktree, openCache, removeNodeWorktree } from '../../src/evidence/cluster-git.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

describe("a node's worktrees (spec 09)", () => {
  it("a worktree whose folder went with a killed node does not block the next attempt's worktree on the same branch", async () => {
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const cache = join(tempDir('gaffer-node-cache-'), 'cache.git');
    await openCache(cache);
    git(ws, 'push', '-q', cache, 'HEAD:refs/heads/seed');
    const base = git(ws, 'rev-parse', 'HEAD');
    const dir = tempDir('gaffer-node-wt-');
    const first = join(dir, 'first');
    await addNodeWorktree(cache, first, 'gaffer/j1/w', base);
    // the node was killed: its worktree's folder is gone, and git still has it on the branch
    rmSync(first, { recursive: true, force: true });
    const second = join(dir, 'second');
    await addNodeWorktree(cache, second, 'gaffer/j1/w', base);
    expect(readFileSync(join(second, 'a.txt'), 'utf8')).toBe('a\n');
    expect(git(second, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('gaffer/j1/w');
    expect(git(cache, 'worktree', 'list', '--porcelain')).not.toContain(first);
    await removeNodeWorktree(cache, second, 'gaffer/j1/w');
    expect(existsSync(second)).toBe(false);
  });
});
