import { isSameStartTime, readOwnStartTime, readProcessStartTime } from './process-start-time.js';

/** True when `pid` is alive and is the same process that started at `startedAt` (not a reused pid). */
export function isSameProcessAlive(pid: number, startedAt: number | null): boolean {
  // this very process: no read of /proc (a server looks at every live job's holder each second)
  const actual = pid === process.pid ? ownProcessIdentity().start : readProcessStartTime(pid);
  if (actual === null) return false;
  return startedAt === null || isSameStartTime(actual, startedAt, 2);
}

/** True while a process with this pid exists (ours to signal or not); the pid may have been reused: see isSameProcessAlive. */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

let ownStart: number | null = null;

/** This process's own identity, as recorded on the jobs it runs and the locks it holds (its start time read once: it never changes). */
export function ownProcessIdentity(): { pid: number; start: number } {
  ownStart ??= readOwnStartTime();
  return { pid: process.pid, start: ownStart };
}
