import { statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { realPath } from './visible.js';

/**
 * What of the user's HOME stays visible (read-only) in a private HOME: git's identity, and the
 * toolchains people install there (rustup, nvm, pyenv, uv's Pythons, mise, asdf, volta, bun, deno,
 * go's module cache, pip `--user`; a virtualenv's interpreter from one of them keeps working:
 * visible.ts). Never the secrets beside them (`~/.ssh`, `~/.aws`, `~/.npmrc`, `~/.netrc`,
 * `~/.cargo/credentials.toml`, …): what is not listed is not there.
 */
export const HOME_KEPT: readonly string[] = [
  '.gitconfig',
  '.config/git',
  '.cargo/bin',
  '.cargo/registry',
  '.cargo/git',
  '.cargo/config.toml',
  '.rustup',
  '.nvm',
  '.pyenv',
  '.volta',
  '.bun',
  '.deno',
  '.local/bin',
  '.local/lib',
  '.local/share/uv/python',
  '.local/share/mise',
  '.asdf',
  'go/bin',
  'go/pkg/mod',
];

/** How a run's HOME is made writable with its writes discarded (spec 04). */
export type PrivateHome = { how: 'overlay' | 'tmpfs'; home: string } | null;

/**
 * Decides the private HOME for a sandboxed run: an overlay over the user's HOME where this bwrap
 * has `--tmp-overlay` (0.10+), else an empty tmpfs at HOME's path with `HOME_KEPT` bound back
 * read-only. Either way the run can write anywhere below HOME (nyc's `~/.node-spawn-wrap-*`,
 * npm's and pip's caches) and every write is gone when the sandbox ends. Null when there is no
 * HOME to replace: none, `/`, not a directory, or the workspace itself or inside it.
 */
export function choosePrivateHome(home: string | undefined, workspace: string, tmpOverlay: boolean): PrivateHome {
  if (home === undefined || home === '' || !home.startsWith('/')) return null;
  const real = realPath(home);
  if (real === '/' || real === workspace || real.startsWith(workspace + sep)) return null;
  try {
    if (!statSync(real).isDirectory()) return null;
  } catch {
    return null;
  }
  return { how: tmpOverlay ? 'overlay' : 'tmpfs', home: real };
}

/** The bwrap arguments that mount the private HOME; they go before any bind that lands below it. */
export function buildPrivateHomeArgs(home: PrivateHome): string[] {
  if (home === null) return [];
  if (home.how === 'overlay') return ['--overlay-src', home.home, '--tmp-overlay', home.home];
  return ['--tmpfs', home.home];
}

/** What a tmpfs HOME binds back read-only (absolute paths; missing ones are skipped by `--ro-bind-try`). */
export function listKeptHomePaths(home: PrivateHome): string[] {
  return home === null || home.how === 'overlay' ? [] : HOME_KEPT.map((rel) => join(home.home, rel));
}
