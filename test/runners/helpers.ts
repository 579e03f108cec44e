import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Absolute path of a fixture program in test/fixtures/bin. */
export function fixture(name: string): string {
  return resolve(import.meta.dirname, '..', 'fixtures', 'bin', name);
}

/** A fresh temp dir. */
export function makeTempDir(prefix = 'gaffer-runners-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * Live (non-zombie) processes whose process group is `pgid`, read straight from /proc —
 * independent of the code under test. Zombies are dead; this machine's init does not reap
 * orphans, so they linger, and `kill(-pgid, 0)` alone would still count them.
 */
export function liveGroupMembers(pgid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') pids.push(Number(entry));
  }
  return pids;
}

/** True when `kill(-pgid, 0)` reports no such group at all. */
export function isGroupAbsent(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Resolves once `check` holds, or rejects after `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
