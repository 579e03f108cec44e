import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, sep } from 'node:path';
import type { PrivateHome } from './home.js';
import { realPath } from './visible.js';

/**
 * Where credentials live below a HOME the sandbox leaves as it is (an agent CLI keeps the user's
 * HOME, `home: null`; an overlay HOME shows all of it). Only these, not all of `~/.config`: gemini,
 * qwen and opencode keep their own state there and must still see it. An agent CLI's own login
 * (`~/.claude`, `~/.codex`, `~/.gemini`) is not here: it needs it.
 */
export const HOME_SECRET_PATHS: readonly string[] = [
  '.ssh',
  '.aws',
  '.azure',
  '.config/gcloud',
  '.config/gh',
  '.kube',
  '.docker',
  '.gnupg',
  '.password-store',
  '.netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.cargo/credentials',
  '.cargo/credentials.toml',
];

/** gaffer's default data and config places below a HOME (env-paths on Linux): masked like the registered ones, an older data dir's tokens included. */
const HOME_GAFFER_PATHS: readonly string[] = ['.local/share/gaffer', '.config/gaffer'];

/** Files only root may read that a root-run sandbox would otherwise show: password hashes, sshd's host keys. */
const ROOT_SECRET_FILES: readonly string[] = [
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/security/opasswd',
];

/** gaffer's own places: the data dir (db, config with tokens, job logs) and a config file outside it. */
const GAFFER_PLACES = new Set<string>();

/** Registers gaffer's data dir and config file: every sandbox hides them (the CLI does it at start). */
export function registerMaskedPaths(paths: Iterable<string | null | undefined>): void {
  for (const path of paths) if (path) GAFFER_PLACES.add(path);
}

/** What a sandboxed command keeps visible although it may lie below a masked place. */
export interface KeptPaths {
  workspace: string;
  tmpDir?: string;
  writable?: string[];
  readable?: string[];
}

/**
 * The bwrap arguments that hide the known secret locations (issue 11): an empty tmpfs over each
 * directory, an empty file over each file, only those that exist — gaffer's data dir and config,
 * the credential stores below HOME and below the account's home directory, `/etc/shadow`-style
 * root-only files and sshd's host keys. They go after every other mount, so a workspace or data dir
 * bound earlier is hidden where it lies below a masked place; then what the run needs from below
 * one (the workspace, its TMPDIR and instruction file in the data dir, a CLI home configured there)
 * is bound again on top.
 *
 * The credential stores are masked whatever the private HOME is, an empty tmpfs included (issue 32):
 * a bind that lands on or above one (a PATH entry, a program's folder, a kept toolchain) must not
 * bring it back. Masking costs an empty `~/.ssh` (or `~/.npmrc`) in a tmpfs HOME where the host has one.
 */
export function buildSecretMaskArgs(
  home: PrivateHome,
  kept: KeptPaths,
  userHome: string | undefined = process.env.HOME,
): string[] {
  const homes = new Set(
    [userHome, home?.home, accountHome()].filter(
      (h): h is string => h !== undefined && h.startsWith('/') && realPath(h) !== '/',
    ),
  );
  const homeSecrets = [...homes].flatMap((h) => HOME_SECRET_PATHS.map((rel) => join(h, rel)));
  const gafferPlaces = [...GAFFER_PLACES, ...[...homes].flatMap((h) => HOME_GAFFER_PATHS.map((rel) => join(h, rel)))];
  const targets = [...gafferPlaces, ...homeSecrets, ...ROOT_SECRET_FILES, ...listSshHostKeys()];
  const workspace = realPath(kept.workspace);
  const masked = new Map<string, 'dir' | 'file'>();
  for (const path of targets) {
    const real = realPath(path);
    const kind = kindOf(real);
    // the workspace itself is never hidden (a job for a masked place is refused before it runs)
    if (kind !== null && real !== workspace) masked.set(real, kind);
  }
  const args: string[] = [];
  for (const [path, kind] of masked)
    args.push(...(kind === 'dir' ? ['--tmpfs', path] : ['--ro-bind', emptyFile(), path]));
  // only gaffer's own places give back what lies below them (the instruction file, a TMPDIR in the data dir): a credential store gives back nothing
  const places = gafferPlaces.map(realPath).filter((p) => masked.has(p));
  const below = (path: string) => places.some((m) => path !== m && isSameOrBelow(path, m));
  for (const path of [kept.workspace, kept.tmpDir, ...(kept.writable ?? [])]) {
    if (path !== undefined && below(realPath(path))) args.push('--bind-try', realPath(path), realPath(path));
  }
  for (const path of kept.readable ?? [])
    if (below(realPath(path))) args.push('--ro-bind-try', realPath(path), realPath(path));
  return args;
}

let empty: string | null = null;

/**
 * An empty read-only file to bind over a secret file. Not `/dev/null`: bwrap binds with `nodev`, so
 * opening it fails with EACCES, and npm, pip or git stop on an unreadable `~/.npmrc`, `~/.netrc`
 * where an empty one is simply no settings.
 */
function emptyFile(): string {
  if (empty !== null) return empty;
  const dir = mkdtempSync(join(tmpdir(), 'gaffer-empty-'));
  const file = join(dir, 'empty');
  writeFileSync(file, '', { mode: 0o444 });
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  empty = file;
  return file;
}

/** The account's home directory from the password database (HOME may have been set elsewhere); null when there is none. */
function accountHome(): string | undefined {
  try {
    return userInfo().homedir || undefined;
  } catch {
    return undefined;
  }
}

/** sshd's private host keys (`/etc/ssh/ssh_host_*_key`; the `.pub` halves stay). */
function listSshHostKeys(): string[] {
  try {
    return readdirSync('/etc/ssh')
      .filter((name) => /^ssh_host_.*_key$/.test(name))
      .map((name) => join('/etc/ssh', name));
  } catch {
    return [];
  }
}

function kindOf(path: string): 'dir' | 'file' | null {
  try {
    const st = statSync(path);
    return st.isDirectory() ? 'dir' : 'file';
  } catch {
    return null;
  }
}

function isSameOrBelow(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}
