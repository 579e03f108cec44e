import { closeSync, constants, fstatSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { writeLooseObject } from './commit-object.js';
import type { TreeDelta } from './known-diffs.js';
import { hasLayout, writeTrees, type TreeEntry } from './tree-object.js';
import type { StatFacts } from './walk.js';

/** An index entry's content: its mode and object id (hex). */
export interface IndexEntry {
  mode: number;
  id: string;
}

/** What a checkpoint changed of an index's content, by path: the entry now, or null when it went. */
export type IndexChanges = ReadonlyMap<string, IndexEntry | null>;

/**
 * A shadow index whose content gaffer knows — a checkout's index copied as a seed (seed-index.ts),
 * never written by git since — and the last checkpoint taken on top of it without git: what it
 * changed of that content, its tree and its commit.
 */
export interface KnownIndex {
  entries: ReadonlyMap<string, IndexEntry>;
  last: { changes: IndexChanges; key: string; tree: string; commit: string } | null;
}

/**
 * What the engine's thread hashes itself: a task's few new or changed files. More than this goes to
 * `update-index`, which streams them (a big file read here would hold the thread). A tree of more
 * than `entries` is not known at all (seed-index.ts): its map would cost more memory than it spares.
 */
export const KNOWN_INDEX_LIMITS = { paths: 256, bytes: 4 << 20, entries: 100_000 };

/** Whether the paths a checkpoint hashes are few and small enough to hash here. */
export function fitsInThread(facts: readonly StatFacts[]): boolean {
  return (
    facts.length <= KNOWN_INDEX_LIMITS.paths && facts.reduce((sum, f) => sum + f.size, 0) <= KNOWN_INDEX_LIMITS.bytes
  );
}

/**
 * Hashes files into a shadow repository as `update-index --add` does there (its attributes rewrite
 * nothing: a file's bytes as they are, a symlink's target; the exec bit as the mode) and writes
 * their blobs (loose, where neither its objects nor `alsoIn` hold them). A path that is gone is
 * dropped, as update-index drops it. Null when a path is no longer what the lstat said — another
 * kind of file (a FIFO would block this thread on open: it is opened non-blocking, never read),
 * another size, unreadable: git is asked, as for any checkpoint.
 */
export function hashFiles(
  workspace: string,
  objectsDir: string,
  alsoIn: readonly string[],
  paths: readonly string[],
  facts: readonly StatFacts[],
): { hashed: Map<string, IndexEntry>; dropped: Set<string> } | null {
  const hashed = new Map<string, IndexEntry>();
  const dropped = new Set<string>();
  for (const [i, p] of paths.entries()) {
    const fact = facts[i] as StatFacts;
    const content = readAsLooked(path.join(workspace, p), fact);
    if (content === 'gone') {
      dropped.add(p);
      continue;
    }
    if (content === null) return null;
    const id = writeLooseObject(objectsDir, 'blob', content, alsoIn);
    if (id === null) return null;
    hashed.set(p, { mode: fact.kind === 'symlink' ? 0o120000 : (fact.mode & 0o100) !== 0 ? 0o100755 : 0o100644, id });
  }
  return { hashed, dropped };
}

/** A path's content when it is still the kind and size its lstat said ('gone' when it is not there at all), else null. */
function readAsLooked(abs: string, fact: StatFacts): Buffer | 'gone' | null {
  try {
    if (fact.kind === 'symlink') {
      const target = readlinkSync(abs, { encoding: 'buffer' });
      return target.length === fact.size ? target : null;
    }
    // not followed (a symlink now fails: ELOOP), not blocking (a FIFO opens at once, and is refused below)
    const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size !== fact.size) return null;
      const content = readFileSync(fd);
      return content.length === fact.size ? content : null;
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'gone' : null;
  }
}

/** The changes to the known content: the removed paths it holds, and the hashed paths whose entry differs from its own. */
export function changesOf(
  known: KnownIndex,
  hashed: ReadonlyMap<string, IndexEntry>,
  removed: Iterable<string>,
): Map<string, IndexEntry | null> {
  const changes = new Map<string, IndexEntry | null>();
  const gone = new Set(removed);
  for (const p of gone) if (known.entries.has(p)) changes.set(p, null);
  for (const [p, entry] of hashed) {
    if (gone.has(p)) continue;
    const was = known.entries.get(p);
    if (was === undefined || was.mode !== entry.mode || was.id !== entry.id) changes.set(p, entry);
  }
  return changes;
}

/** A key of the changes: equal keys, the same tree. */
export function changesKey(changes: IndexChanges): string {
  return [...changes]
    .map(([p, e]) => `${p}\0${e === null ? '-' : `${e.mode.toString(8)} ${e.id}`}`)
    .sort()
    .join('\0');
}

/**
 * Writes the tree of the known content with the changes applied — hashing again only the folders
 * the changes are in, the others being `tree`'s (the known content's own tree) — and returns its
 * id; null when git would not have that tree (a path both a file and a folder), or when the known
 * content does not hash to `tree` itself (a path name it could not keep byte for byte): the caller
 * then rebuilds the index with git.
 */
export function writeChangedTree(
  objectsDir: string,
  alsoIn: readonly string[],
  known: KnownIndex,
  tree: string,
  changes: IndexChanges,
): string | null {
  // the known content's layout, once per tree in this process (every task of a fan-out starts from the same one); the
  // repository it borrows from holds that tree, so its folders' trees are hashed, not written (they may be packed there)
  if (
    !hasLayout(tree) &&
    writeTrees(objectsDir, entriesOf(known, new Map()), alsoIn, { remember: true, hashOnly: true }) !== tree
  )
    return null;
  return writeTrees(objectsDir, entriesOf(known, changes), alsoIn, { base: tree });
}

function* entriesOf(known: KnownIndex, changes: IndexChanges): Iterable<TreeEntry> {
  for (const [p, entry] of known.entries)
    if (!changes.has(p)) yield { path: bytesOf(p), mode: entry.mode, id: entry.id };
  for (const [p, entry] of changes) if (entry !== null) yield { path: bytesOf(p), mode: entry.mode, id: entry.id };
}

/** What one set of changes to the known content changed against another's (null: the known content itself). */
export function deltaBetween(known: KnownIndex, from: IndexChanges | null, to: IndexChanges): TreeDelta {
  const added: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  const at = (changes: IndexChanges | null, p: string): IndexEntry | undefined => {
    if (changes?.has(p) === true) return changes.get(p) ?? undefined;
    return known.entries.get(p);
  };
  for (const p of new Set([...(from?.keys() ?? []), ...to.keys()])) {
    const a = at(from, p);
    const b = at(to, p);
    if (a === undefined && b !== undefined) added.push(p);
    else if (a !== undefined && b === undefined) deleted.push(p);
    else if (a !== undefined && b !== undefined && (a.mode !== b.mode || a.id !== b.id)) modified.push(p);
  }
  return { added, modified, deleted };
}

/** A path's UTF-8 bytes as a latin1 string (tree-object.ts works on bytes). */
const bytesOf = (p: string): string => Buffer.from(p, 'utf8').toString('latin1');
