import { createHash } from 'node:crypto';
import path from 'node:path';
import { GafferError } from '../domain/errors.js';

/** Folders never snapshotted, at any depth (spec 03), besides `.git`. */
export const EXCLUDED_DIR_NAMES: readonly string[] = [
  'node_modules',
  '.venv',
  'venv',
  '__pycache__',
  'dist',
  'build',
  'target',
  '.next',
  '.cache',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
  '.tox',
  '.idea',
  '.vscode',
  '.gaffer',
];

const EXCLUDED = new Set(EXCLUDED_DIR_NAMES);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Matches a relative path that lies inside an excluded folder or a `.git` directory. */
const EXCLUDED_RE = new RegExp(`(^|/)(${[...EXCLUDED_DIR_NAMES, '.git'].map(escapeRe).join('|')})/`);

/** Whether a directory with this name is skipped by every walk. */
export function isExcludedDirName(name: string): boolean {
  return name === '.git' || EXCLUDED.has(name);
}

/** Whether a relative POSIX path is inside an excluded folder. */
export function isInExcludedDir(rel: string): boolean {
  return EXCLUDED_RE.test(rel);
}

/** The short workspace hash used for the shadow repo name and its refs. */
export function workspaceHash(workspace: string): string {
  return createHash('sha1').update(path.resolve(workspace)).digest('hex').slice(0, 16);
}

/** `<dataDir>/shadow/<hash>.git` for a workspace. */
export function shadowGitDir(dataDir: string, workspace: string): string {
  return path.join(path.resolve(dataDir), 'shadow', `${workspaceHash(workspace)}.git`);
}

const SAFE_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * Checks that a job id or label can be a ref component and a file name. These come from the
 * engine, so a bad one is our own fault (`internal`), never the caller's.
 */
export function assertSafeSegment(value: string, field: 'jobId' | 'label'): void {
  if (!SAFE_SEGMENT.test(value) || value.includes('..') || value.endsWith('.lock')) {
    throw new GafferError(
      'internal',
      `snapshot ${field} must be 1-128 characters of [A-Za-z0-9_.-], not starting with '.' or containing '..', got ${JSON.stringify(value)}`,
    );
  }
}

/**
 * Normalizes a workspace-relative path: backslashes to slashes, no leading `./` or `/`, no empty
 * or `.` segments. Returns null for a path that leaves the workspace.
 */
export function normalizeRelPath(raw: string): string | null {
  const segments: string[] = [];
  for (const seg of raw.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (segments.length === 0) return null;
      segments.pop();
      continue;
    }
    segments.push(seg);
  }
  return segments.length === 0 ? null : segments.join('/');
}

/** Relative POSIX path of `target` inside `root`, or null when it is not inside. */
export function relativeInside(root: string, target: string): string | null {
  const rel = path.relative(root, target);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return null;
  return rel.split(path.sep).join('/');
}

/** Plain code-unit order, so every list gaffer reports sorts the same way. */
export function sortPaths(paths: Iterable<string>): string[] {
  return [...paths].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
