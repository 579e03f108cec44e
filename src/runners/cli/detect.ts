import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { CliProfile } from './profiles.js';

/** Whether an agent CLI is installed, where, and which version. */
export interface CliDetection {
  installed: boolean;
  /** Absolute path of the binary found. */
  path: string | null;
  version: string | null;
  /** Why it counts as not installed (not found, or `--version` failed). */
  reason: string | null;
}

const cache = new Map<string, CliDetection>();

/** The first executable `name` in `dirs` then PATH (`which`), or null. */
export function findBinary(name: string, dirs: readonly string[], pathEnv: string | undefined): string | null {
  for (const dir of [...dirs, ...(pathEnv ?? '').split(delimiter)]) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Finds a profile's binary and runs its version command; cached per binary path (a `--version`
 * of a Node CLI costs a second). `refresh` drops the cache entry.
 */
export function detectCli(
  profile: CliProfile,
  opts: { binDirs?: readonly string[]; pathEnv?: string; refresh?: boolean } = {},
): CliDetection {
  const path = findBinary(profile.binary, opts.binDirs ?? [], opts.pathEnv ?? process.env.PATH);
  if (path === null) return { installed: false, path: null, version: null, reason: `${profile.binary} is not on PATH` };
  const cached = opts.refresh === true ? undefined : cache.get(path);
  if (cached !== undefined) return cached;
  const run = spawnSync(path, profile.versionArgs, {
    encoding: 'utf8',
    timeout: 30_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const version = profile.versionPattern.exec(`${run.stdout ?? ''}\n${run.stderr ?? ''}`)?.[1] ?? null;
  const detection: CliDetection =
    run.status === 0 && version !== null
      ? { installed: true, path, version, reason: null }
      : {
          installed: false,
          path,
          version,
          reason: `${path} ${profile.versionArgs.join(' ')} failed: ${(run.error?.message ?? run.stderr ?? '').trim().slice(0, 200) || `exit ${run.status}`}`,
        };
  cache.set(path, detection);
  return detection;
}
