import { lstatSync } from 'node:fs';
import path from 'node:path';
import { GafferError } from '../domain/errors.js';
import { DEFAULT_GIT_TIMEOUT_MS, runGitOk, splitNul } from './git.js';
import { recallTreeDiff } from './known-diffs.js';
import { readManifest, sameFacts, type StatManifest } from './manifest.js';
import { sortPaths } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import type { ChangeSet } from './types.js';
import type { Snapshot } from '../domain/snapshot.js';

/**
 * What changed between two snapshots of one workspace: full sorted lists of relative POSIX
 * paths. A rename is a delete plus an add; a type, exec-bit or content change is `modified`.
 * Two checkpoints compare content (large files by size+mtime+inode); two mtime snapshots compare
 * stat facts. A checkpoint followed by an mtime snapshot (the shadow repo failed in between)
 * counts a file as modified when its mtime is later than the checkpoint.
 */
export async function diffSnapshots(before: Snapshot, after: Snapshot): Promise<ChangeSet> {
  if (before.workspace !== after.workspace) {
    throw new GafferError(
      'internal',
      `cannot diff snapshots of two workspaces: ${before.workspace} and ${after.workspace}`,
    );
  }
  if (before.source === 'checkpoint' && after.source === 'checkpoint') return diffCheckpoints(before, after);
  if (before.source === 'mtime' && after.source === 'mtime')
    return diffMtime(await loadManifest(before), await loadManifest(after), after.workspace);
  if (before.source === 'checkpoint') return diffCheckpointThenMtime(before, after);
  throw new GafferError(
    'internal',
    'cannot diff an mtime snapshot against a later checkpoint: take the after-snapshot with `like: before`',
  );
}

async function loadManifest(snapshot: Snapshot): Promise<StatManifest> {
  if (snapshot.manifestFile === undefined) {
    throw new GafferError('internal', `snapshot ${snapshot.id} has no manifest file`);
  }
  return readManifest(snapshot.manifestFile);
}

async function largeFiles(snapshot: Snapshot): Promise<StatManifest | null> {
  return snapshot.largeFilesByStat && snapshot.manifestFile !== undefined ? readManifest(snapshot.manifestFile) : null;
}

function gitDirOf(snapshot: Snapshot): string {
  if (snapshot.gitDir === undefined) throw new GafferError('internal', `checkpoint ${snapshot.id} has no gitDir`);
  return snapshot.gitDir;
}

async function diffCheckpoints(before: Snapshot, after: Snapshot): Promise<ChangeSet> {
  const gitDir = gitDirOf(before);
  if (gitDirOf(after) !== gitDir)
    throw new GafferError('internal', 'cannot diff checkpoints of two shadow repositories');
  const added = new Set<string>();
  const modified = new Set<string>();
  const deleted = new Set<string>();
  const known = before.id === after.id ? null : recallTreeDiff(gitDir, before.id, after.id);
  if (known !== null) {
    for (const p of known.added) added.add(p);
    for (const p of known.modified ?? []) modified.add(p);
    for (const p of known.deleted) deleted.add(p);
  } else if (before.id !== after.id) {
    const out = await withRepoLock(gitDir, DEFAULT_GIT_TIMEOUT_MS, () =>
      runGitOk(
        [
          `--git-dir=${gitDir}`,
          'diff-tree',
          '-r',
          '-z',
          '--no-renames',
          '--no-ext-diff',
          '--name-status',
          before.id,
          after.id,
        ],
        {
          cwd: before.workspace,
          timeoutMs: DEFAULT_GIT_TIMEOUT_MS,
        },
      ),
    );
    const parts = splitNul(out);
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const status = parts[i] as string;
      const p = parts[i + 1] as string;
      if (status === 'A') added.add(p);
      else if (status === 'D') deleted.add(p);
      else modified.add(p); // M, T (type change)
    }
  }
  const [largeBefore, largeAfter] = await Promise.all([largeFiles(before), largeFiles(after)]);
  const lb = largeBefore?.entries ?? new Map();
  const la = largeAfter?.entries ?? new Map();
  for (const [p, facts] of lb) {
    const now = la.get(p);
    if (now !== undefined) {
      if (!sameFacts(facts, now)) modified.add(p);
    } else if (added.delete(p)) {
      modified.add(p); // large before, stored as content after
    } else {
      deleted.add(p);
    }
  }
  for (const p of la.keys()) {
    if (lb.has(p)) continue;
    if (deleted.delete(p))
      modified.add(p); // content before, large after
    else added.add(p);
  }
  return settleSkipped(before, after, after.workspace, added, modified, deleted);
}

/** Paths after the truncation point of a capped walk were not seen, so they are not compared. */
function diffMtime(before: StatManifest, after: StatManifest, workspace: string): ChangeSet {
  const bound = earliestBound(before, after);
  const inRange = (p: string): boolean => bound === null || comparePathOrder(p, bound) <= 0;
  const added = new Set<string>();
  const modified = new Set<string>();
  const deleted = new Set<string>();
  for (const [p, facts] of before.entries) {
    if (!inRange(p)) continue;
    const now = after.entries.get(p);
    if (now === undefined) deleted.add(p);
    else if (!sameFacts(facts, now)) modified.add(p);
  }
  for (const p of after.entries.keys()) if (inRange(p) && !before.entries.has(p)) added.add(p);
  return settleSkipped(before, after, workspace, added, modified, deleted);
}

async function diffCheckpointThenMtime(before: Snapshot, after: Snapshot): Promise<ChangeSet> {
  const gitDir = gitDirOf(before);
  const out = await withRepoLock(gitDir, DEFAULT_GIT_TIMEOUT_MS, () =>
    runGitOk([`--git-dir=${gitDir}`, 'ls-tree', '-r', '-z', '--name-only', before.id], {
      cwd: before.workspace,
      timeoutMs: DEFAULT_GIT_TIMEOUT_MS,
    }),
  );
  const [largeBefore, now] = await Promise.all([largeFiles(before), loadManifest(after)]);
  const since = before.takenAtMs ?? 0;
  const present = new Set(splitNul(out));
  const added = new Set<string>();
  const modified = new Set<string>();
  const deleted = new Set<string>();
  for (const p of present) {
    const facts = now.entries.get(p);
    if (facts === undefined) deleted.add(p);
    else if (facts.mtimeMs > since) modified.add(p);
  }
  for (const [p, facts] of largeBefore?.entries ?? new Map()) {
    present.add(p);
    const current = now.entries.get(p);
    if (current === undefined) deleted.add(p);
    else if (!sameFacts(facts, current)) modified.add(p);
  }
  for (const p of now.entries.keys()) if (!present.has(p)) added.add(p);
  return settleSkipped(before, after, after.workspace, added, modified, deleted);
}

/**
 * A file that became (or stopped being) special or unreadable still exists: that is a modification.
 * One skipped on one side only and absent from the other is added or deleted like any file (a FIFO,
 * a name that is not UTF-8, a folder too deep to open: issue 32) — unless a link lies on its way in
 * the workspace: then it is not a file of the workspace, and the link itself is the change.
 */
function settleSkipped(
  before: { skipped: string[]; skippedStats?: Record<string, string> },
  after: { skipped: string[]; skippedStats?: Record<string, string> },
  workspace: string,
  added: Set<string>,
  modified: Set<string>,
  deleted: Set<string>,
): ChangeSet {
  const wasSkipped = new Set(before.skipped);
  const isSkipped = new Set(after.skipped);
  for (const p of after.skipped) {
    if (deleted.delete(p)) modified.add(p);
    // a name that is not UTF-8, kept by its stat: an edit of its content is a modification
    else if (wasSkipped.has(p) && before.skippedStats?.[p] !== after.skippedStats?.[p]) modified.add(p);
    else if (!wasSkipped.has(p) && !behindLink(workspace, p)) added.add(p);
  }
  for (const p of before.skipped) {
    if (added.delete(p)) modified.add(p);
    else if (!isSkipped.has(p) && !behindLink(workspace, p)) deleted.add(p);
  }
  return { added: sortPaths(added), modified: sortPaths(modified), deleted: sortPaths(deleted) };
}

/** Whether a folder on the way to `rel` (not `rel` itself) is a symbolic link in the workspace now. */
function behindLink(workspace: string, rel: string): boolean {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) {
    const st = lstatSync(path.join(workspace, ...parts.slice(0, i)), { throwIfNoEntry: false });
    if (st === undefined) return false;
    if (st.isSymbolicLink()) return true;
  }
  return false;
}

function earliestBound(a: StatManifest, b: StatManifest): string | null {
  const bounds = [a, b].filter((m) => m.truncated && m.lastPath !== undefined).map((m) => m.lastPath as string);
  if (bounds.length === 0) return null;
  return bounds.reduce((x, y) => (comparePathOrder(x, y) <= 0 ? x : y));
}

/** The order of a sorted depth-first walk: segment by segment. */
export function comparePathOrder(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const x = sa[i] as string;
    const y = sb[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return sa.length - sb.length;
}
