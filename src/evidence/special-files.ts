import { accessSync, constants, readdirSync, readFileSync, statSync, writeFileSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { isExcludedDirName } from './paths.js';

/**
 * Per folder: its stamp when read — inode and ctime, which adding, removing or renaming an entry
 * moves and no one can set back (an mtime can be: `touch -d`); '' to read it again next time —
 * special entries, subfolders.
 */
type DirRecord = [stamp: string, specials: string[], subdirs: string[]];

interface DirCache {
  version: 2;
  dirs: Record<string, DirRecord>;
}

/** The last scan per cache file, so a re-checkpoint in this process does not read it back. */
const remembered = new Map<string, DirCache>();
const REMEMBERED_MAX = 128;

/** A folder changed this recently may change again within its ctime's resolution: not cached. */
const RACY_MS = 1000;
const ENTRIES_PER_TURN = 10_000;

/** The folders holding the given paths, the root ('') included. */
export function foldersOf(paths: Iterable<string>): Set<string> {
  const dirs = new Set<string>(['']);
  for (const p of paths) {
    for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) {
      const dir = p.slice(0, i);
      if (dirs.has(dir)) break;
      dirs.add(dir);
    }
  }
  return dirs;
}

/**
 * Finds FIFOs, sockets, device files and unreadable folders in the folders that hold listed
 * paths (git's own walk silently drops them; spec 03 wants them listed). A folder whose inode and
 * ctime are unchanged since the last scan is not read again (adding or removing an entry changes
 * its ctime, and a worker cannot put a ctime back as it can an mtime), so a re-checkpoint costs one
 * stat per folder.
 */
export async function scanSpecialFiles(
  root: string,
  dirs: Set<string>,
  skipAbs: string[],
  cacheFile: string,
): Promise<string[]> {
  const previous = remembered.get(cacheFile) ?? readCache(cacheFile);
  const next: DirCache = { version: 2, dirs: {} };
  const startedAt = Date.now();
  const found: string[] = [];
  let changed = false;
  let sinceYield = 0;
  // the folders are relative paths git named: joined by hand, `path.join`'s normalizing costs a quarter of the stat
  const under = root.endsWith('/') ? root : `${root}/`;
  for (const dir of dirs) {
    const abs = dir === '' ? root : under + dir;
    const st = folderStat(abs);
    if (st === undefined) continue;
    const stamp = `${st.ino}:${st.ctimeMs}`;
    let record = previous.dirs[dir];
    if (record === undefined || record[0] === '' || record[0] !== stamp) {
      changed = true;
      const entries = readEntries(abs);
      if (entries === null) continue;
      sinceYield += entries.length;
      record = [st.ctimeMs > startedAt - RACY_MS ? '' : stamp, [], []];
      for (const entry of entries) {
        if (entry.isFIFO() || entry.isSocket() || entry.isCharacterDevice() || entry.isBlockDevice())
          record[1].push(entry.name);
        else if (entry.isDirectory() && !isExcludedDirName(entry.name)) record[2].push(entry.name);
      }
    }
    next.dirs[dir] = record;
    for (const name of record[1]) found.push(dir === '' ? name : `${dir}/${name}`);
    for (const name of record[2]) {
      const rel = dir === '' ? name : `${dir}/${name}`;
      // a folder with nothing listed is ignored, empty, or one we cannot read
      if (dirs.has(rel) || skipAbs.includes(path.join(root, rel))) continue;
      try {
        accessSync(path.join(root, rel), constants.R_OK | constants.X_OK);
      } catch {
        found.push(rel);
      }
    }
    if (sinceYield >= ENTRIES_PER_TURN) {
      sinceYield = 0;
      await yieldToLoop();
    }
  }
  remembered.delete(cacheFile);
  remembered.set(cacheFile, next);
  if (remembered.size > REMEMBERED_MAX) remembered.delete(remembered.keys().next().value as string);
  if (changed || Object.keys(previous.dirs).length !== dirs.size) {
    try {
      // a few KB: one synchronous write costs the engine's thread less than a pool round trip per step
      writeFileSync(cacheFile, JSON.stringify(next));
    } catch {
      // no cache next time: every folder is read again
    }
  }
  return found;
}

/** A folder's stat; undefined when it is gone, or a file now holds its place or its parent's (ENOTDIR). */
function folderStat(abs: string): { ino: number; ctimeMs: number } | undefined {
  try {
    return statSync(abs, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

function readEntries(abs: string): Dirent[] | null {
  try {
    return readdirSync(abs, { withFileTypes: true });
  } catch {
    return null;
  }
}

function readCache(file: string): DirCache {
  try {
    const cache = JSON.parse(readFileSync(file, 'utf8')) as DirCache;
    if (cache.version === 2 && typeof cache.dirs === 'object') return cache;
  } catch {
    // missing or unreadable: every folder is read
  }
  return { version: 2, dirs: {} };
}
