import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withRepoLock } from '../../src/evidence/repo-lock.js';
import { tempDir } from './helpers.js';

describe('the shadow repository lock', () => {
  it('holds a lock file naming this process while it runs, a link to its pid file, and removes it after', async () => {
    const gitDir = path.join(await tempDir(), 'repo.git');
    const lockFile = path.join(gitDir, 'gaffer.lock');
    const seen = await withRepoLock(gitDir, 1000, () =>
      Promise.resolve({
        text: readFileSync(lockFile, 'utf8'),
        links: statSync(lockFile).nlink,
        ageMs: Date.now() - statSync(lockFile).mtimeMs,
      }),
    );
    expect(seen.text).toBe(`${process.pid}\n`);
    expect(seen.links).toBe(2); // no file of its own: no inode allocated per lock
    expect(seen.ageMs).toBeLessThan(5000);
    expect(existsSync(lockFile)).toBe(false);
    expect(existsSync(path.join(gitDir, `gaffer.lock.${process.pid}`))).toBe(true);
  });

  it('is taken again after the repository was removed (prune), and waits for a live holder of another process', async () => {
    const gitDir = path.join(await tempDir(), 'repo.git');
    await withRepoLock(gitDir, 1000, () => Promise.resolve());
    rmSync(gitDir, { recursive: true });
    expect(await withRepoLock(gitDir, 1000, () => Promise.resolve('again'))).toBe('again');
    // a holder that is alive (this test's parent process) keeps it: the wait ends in an error naming the file
    writeFileSync(path.join(gitDir, 'gaffer.lock'), `${process.ppid}\n`);
    await expect(withRepoLock(gitDir, 200, () => Promise.resolve())).rejects.toThrow(
      /locked by another gaffer process/,
    );
  });
});
