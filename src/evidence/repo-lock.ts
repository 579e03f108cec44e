import { linkSync, mkdirSync, promises as fs, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { removeFile } from './remove-file.js';

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
  await acquire(gitDir, lockFile, waitMs);
  try {
    // We hold the repository: an index.lock left now can only be from a crashed process.
    removeFile(path.join(gitDir, 'gaffer-index.lock'));
    return await fn();
  } finally {
    removeFile(lockFile);
  }
}

async function acquire(gitDir: string, lockFile: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  let isMade = false;
  for (;;) {
    try {
      takeLockFile(gitDir, lockFile);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !isMade) {
        // prune may have removed a repository that had no refs left: the next user recreates it
        // (small synchronous calls: cheaper for the engine's thread than round trips through libuv's pool)
        mkdirSync(gitDir, { recursive: true });
        isMade = true;
        continue;
      }
      if (code !== 'EEXIST') throw err;
    }
    if (await isStale(lockFile)) {
      removeFile(lockFile);
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `shadow repository is locked by another gaffer process (${lockFile}); remove it if no gaffer runs`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** This process's pid files (`gaffer.lock.<pid>`), removed when it exits. */
const pidFiles = new Set<string>();
let isExitHooked = false;

/**
 * Creates the lock file holding this process's pid, or throws EEXIST. It is a hard link to a pid
 * file of this process in the repository, made once: a new file per lock costs ext4 an inode
 * allocation, which scans past every recently deleted inode (0.15 ms of CPU per file under a
 * busy server's churn, twice per job); a link costs a directory entry. Its mtime is renewed first,
 * so the lock's age reads as before. Where links do not work, it is a file of its own.
 */
function takeLockFile(gitDir: string, lockFile: string): void {
  const pidFile = path.join(gitDir, `gaffer.lock.${process.pid}`);
  try {
    const now = new Date();
    if (pidFiles.has(pidFile)) utimesSync(pidFile, now, now);
    else makePidFile(pidFile);
    linkSync(pidFile, lockFile);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw err;
    if (code === 'ENOENT' && pidFiles.delete(pidFile)) return takeLockFile(gitDir, lockFile); // the repository was pruned and made again
    writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx' });
  }
}

function makePidFile(pidFile: string): void {
  writeFileSync(pidFile, `${process.pid}\n`);
  pidFiles.add(pidFile);
  if (isExitHooked) return;
  isExitHooked = true;
  process.once('exit', () => {
    for (const file of pidFiles) {
      try {
        removeFile(file);
      } catch {
        // the repository went away first
      }
    }
  });
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
