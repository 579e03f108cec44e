import { walkTree } from '../../evidence/walk.js';

/** Rescans for `changed` waits: at most one per 250 ms (spec 02), slower when a scan itself is slow. */
export const CHANGED_MIN_INTERVAL_MS = 250;
const SCAN_CAP = 200_000;

/** A cheap fingerprint of the workspace: every file's size, mtime, inode and mode (excluded folders skipped). */
export async function scanWorkspace(workspace: string): Promise<Map<string, string>> {
  const walk = await walkTree(workspace, '', { skipExcludedNames: true, skipAbs: [], cap: SCAN_CAP });
  return new Map(walk.entries.map(([rel, f]) => [rel, `${f.size}:${f.mtimeMs}:${f.ino}:${f.mode}:${f.target ?? ''}`]));
}

function sameScan(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [path, facts] of a) if (b.get(path) !== facts) return false;
  return true;
}

/**
 * Resolves true when anything in the workspace changed on disk since the call, false when
 * `stopped()` says the wait is over (timeout, or the job ended). Rescans are throttled.
 */
export async function waitForChange(
  workspace: string,
  stopped: () => boolean,
  sleep: (ms: number) => Promise<void>,
): Promise<boolean> {
  let started = performance.now();
  const first = await scanWorkspace(workspace);
  for (;;) {
    await sleep(Math.max(CHANGED_MIN_INTERVAL_MS, (performance.now() - started) * 4));
    if (stopped()) return false;
    started = performance.now();
    if (!sameScan(first, await scanWorkspace(workspace))) return true;
  }
}
