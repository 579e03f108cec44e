import { mkdirSync, promises as fs, writeFileSync } from 'node:fs';
import { removeFile } from './remove-file.js';
import path from 'node:path';

const queues = new Map<string, Promise<unknown>>();

/** A lock file older than this is taken over even when its pid looks alive (pids get reused). */
const STALE_LOCK_MS = 10 * 60_000;
const RETRY_MS = 50;

/**
 * Runs `fn` with exclusive use of one shadow repository: an in-process promise queue (spec 03:
 * git calls on one repository are serialized) plus a pid lock file for other gaffer processes.
 */
export function withRepoLock<T>(gitDir: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const previous = queues.get(gitDir) ?? Promise.resolve();
  const run = previous.then(
    () => withLockFile(gitDir, waitMs, fn),
    () => withLockFile(gitDir, waitMs, fn),
  );
  const tail = run.catch(() => undefined);
  queues.set(gitDir, tail);
  void tail.then(() => {
    if (queues.get(gitDir) === tail) queues.delete(gitDir);
  });
  return run;
}

async function withLockFile<T>(gitDir: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const lockFile = path.join(gitDir, 'gaffer.lock');
  // prune may have removed a repository that had no refs left: the next user recreates it
  // (small synchronous calls: cheaper for the engine's thread than round trips through libuv's pool)
  mkdirSync(gitDir, { recursive: true });
  await acquire(lockFile, waitMs);
  try {
    // We hold the repository: an index.lock left now can only be from a crashed process.
    removeFile(path.join(gitDir, 'gaffer-index.lock'));
    return await fn();
  } finally {
    removeFile(lockFile);
  }
}

async function acquire(lockFile: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (await isStale(lockFile)) {
      removeFile(lockFile);
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`shadow repository is locked by another gaffer process (${lockFile}); remove it if no gaffer runs`);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

async function isStale(lockFile: string): Promise<boolean> {
  try {
    const [text, stat] = await Promise.all([fs.readFile(lockFile, 'utf8'), fs.stat(lockFile)]);
    if (Date.now() - stat.mtimeMs > STALE_LOCK_MS) return true;
    const pid = Number.parseInt(text.trim(), 10);
    if (!Number.isInteger(pid) || pid <= 0) return Date.now() - stat.mtimeMs > 5_000;
    if (pid === process.pid) return true; // our own leftover: the in-process queue rules out a live holder
    try {
      process.kill(pid, 0);
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  } catch {
    return false; // vanished between our open and read: retry
  }
}
