import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { isExcludedDirName } from './paths.js';

/** lstat facts of one path, enough to tell a change without its content. */
export interface StatFacts {
  /** A regular file or a symlink (nothing else is recorded). */
  kind: 'file' | 'symlink';
  /** Bytes (for a symlink: the target's length). */
  size: number;
  /** Modification time, ms since the epoch (sub-ms precision where the filesystem has it). */
  mtimeMs: number;
  /** Inode: an editor's write-and-rename shows as a change even with size and mtime kept. */
  ino: number;
  /** Type and permission bits (the exec bit is a change). */
  mode: number;
  /** Symlink target (kind `symlink`). */
  target?: string;
}

/** What one workspace path turned out to be on disk. */
export type PathKind =
  | { kind: 'content'; facts: StatFacts }
  | { kind: 'large'; facts: StatFacts }
  | { kind: 'skipped' }
  | { kind: 'directory' }
  | { kind: 'missing' };

/** Sync fs calls are batched and the event loop gets a turn between batches. */
const BATCH = 2000;

/** Facts of an lstat result; null for anything that is not a regular file or symlink. */
export function factsOf(st: Stats, abs: string): StatFacts | null {
  if (st.isFile()) return { kind: 'file', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, mode: st.mode };
  if (st.isSymbolicLink()) {
    let target = '';
    try {
      target = readlinkSync(abs);
    } catch {
      // unreadable link target: the stat facts still tell a change
    }
    return { kind: 'symlink', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, mode: st.mode, target };
  }
  return null;
}

/**
 * Classifies a path with lstat (never following links): content git can store, a file over the
 * size cap, something to skip (FIFO, socket, device), a directory, or gone.
 */
export function classifyPath(root: string, rel: string, sizeCapBytes: number): PathKind {
  return classifyOne(path.join(root, rel), sizeCapBytes);
}

function classifyOne(abs: string, sizeCapBytes: number): PathKind {
  let st: Stats | undefined;
  try {
    st = lstatSync(abs, { throwIfNoEntry: false });
  } catch {
    return { kind: 'skipped' };
  }
  if (st === undefined) return { kind: 'missing' };
  if (st.isDirectory()) return { kind: 'directory' };
  const facts = factsOf(st, abs);
  if (facts === null) return { kind: 'skipped' };
  // an unreadable file is found by update-index itself (see addToIndex): no access() per file here
  if (facts.kind === 'file' && st.size > sizeCapBytes) return { kind: 'large', facts };
  return { kind: 'content', facts };
}

export interface WalkOptions {
  /** Skip folders named in spec 03's exclusion list (`.git` is always skipped). */
  skipExcludedNames: boolean;
  /** Absolute paths never entered (gaffer's own data dir). */
  skipAbs: string[];
  /** Stop after this many entries and report `truncated`. */
  cap: number;
}

export interface WalkResult {
  /** Regular files and symlinks, in walk order (sorted segment by segment). */
  entries: Array<[string, StatFacts]>;
  /** Special or unreadable paths. */
  skipped: string[];
  /** The cap was hit: paths after the last entry were not visited. */
  truncated: boolean;
}

/**
 * Walks a tree with lstat only (symlinks are entries, never followed, so no loops), names sorted
 * so two walks of the same tree visit paths in the same order, which makes a capped walk
 * comparable.
 */
export async function walkTree(root: string, relBase: string, opts: WalkOptions): Promise<WalkResult> {
  const result: WalkResult = { entries: [], skipped: [], truncated: false };
  let sinceYield = 0;
  const visit = async (absDir: string, relDir: string): Promise<void> => {
    let names: string[];
    try {
      names = readdirSync(absDir).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    } catch {
      if (relDir !== '') result.skipped.push(relDir);
      return;
    }
    for (const name of names) {
      if (result.truncated) return;
      if (++sinceYield >= BATCH) {
        sinceYield = 0;
        await yieldToLoop();
      }
      const abs = path.join(absDir, name);
      const rel = relDir === '' ? name : `${relDir}/${name}`;
      let st: Stats | undefined;
      try {
        st = lstatSync(abs, { throwIfNoEntry: false });
      } catch {
        result.skipped.push(rel);
        continue;
      }
      if (st === undefined) continue;
      // `.git` is never content: a repository folder, or the file of a worktree or submodule
      if (name === '.git') continue;
      if (st.isDirectory()) {
        if (opts.skipExcludedNames && isExcludedDirName(name)) continue;
        if (opts.skipAbs.includes(abs)) continue;
        await visit(abs, rel);
        continue;
      }
      const facts = factsOf(st, abs);
      if (facts === null) {
        result.skipped.push(rel);
        continue;
      }
      if (result.entries.length >= opts.cap) {
        result.truncated = true;
        return;
      }
      result.entries.push([rel, facts]);
    }
  };
  await visit(relBase === '' ? root : path.join(root, relBase), relBase);
  return result;
}
