import { createHash } from 'node:crypto';
import { appendFileSync, closeSync, existsSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import { writeLooseObject } from './commit-object.js';
import { hasLayout, TREE_MODES, writeTrees, type TreeEntry } from './tree-object.js';
import { readBounded } from '../platform/files/bounded-read.js';
import { readTextOrNull } from './read-text.js';

/** An index bigger than this is git's to commit (a million entries is ~100 MB). */
const INDEX_MAX_BYTES = 256 << 20;

/** A commit's author and committer, as `git commit` takes them from GIT_AUTHOR_* and GIT_COMMITTER_*. */
export interface CommitIdentity {
  name: string;
  email: string;
}

/** Where a worktree's commit goes: its administrative folder (its index, its HEAD's log) and the repository's common one (objects, refs). */
export interface IndexCommitSite {
  gitDir: string;
  commonDir: string;
}

/**
 * What `git commit -q --no-verify --no-gpg-sign --cleanup=verbatim -m <message>` makes of a
 * worktree's index when HEAD is the branch `ref` at `parent`, written without a process: the
 * index's trees (the folders it changed, against the parent's layout tree-object.ts keeps), the commit, the branch moved (`<ref>.lock`, then a
 * rename over it, as git does) and a line on each reflog git keeps for it. `unchanged` when the
 * index holds the parent's tree (git would refuse: nothing to commit). Null whenever it cannot be
 * sure to write what git would — an index of another shape (a version other than 2 or 3, a split or
 * sparse index, an entry that is unmerged, intent-to-add or skip-worktree, a bad checksum), a
 * repository that is not plain sha1 loose refs and objects (sha256, reftable, a shared repository,
 * a packed or moved branch, a parent not loose or not laid out) — and the caller runs `git commit`.
 */
export function commitIndex(
  site: IndexCommitSite,
  ref: string,
  parent: string,
  message: string,
  who: CommitIdentity,
  at = new Date(),
): { commit: string } | 'unchanged' | null {
  if (!isPlainRepository(site.commonDir) || existsSync(path.join(site.commonDir, 'reftable'))) return null;
  const refFile = path.join(site.commonDir, ...ref.split('/'));
  if (
    readTextOrNull(path.join(site.gitDir, 'HEAD'))?.trim() !== `ref: ${ref}` ||
    readTextOrNull(refFile)?.trim() !== parent
  )
    return null;
  const parentTree = looseCommitTree(site.commonDir, parent);
  // built from the parent's layout (a fan-out's base, laid out by its tasks' checkpoints): only the changed folders are
  // hashed and written. Without one, git: it would write every folder's tree again where the repository packed them
  if (parentTree === null || !hasLayout(parentTree)) return null;
  const entries = readIndexEntries(path.join(site.gitDir, 'index'));
  if (entries === null) return null;
  const objects = path.join(site.commonDir, 'objects');
  const tree = writeTrees(objects, entries, [], { base: parentTree });
  if (tree === null) return null;
  if (tree === parentTree) return 'unchanged';
  const person = personAt(who, at);
  const commit = writeLooseObject(objects, 'commit', commitBody(tree, parent, person, message));
  if (commit === null || !updateLooseRef(refFile, parent, commit)) return null;
  const line = `${parent} ${commit} ${person}\tcommit: ${message.split('\n')[0] ?? ''}\n`;
  // git writes a reflog where one is kept: the branch's (made with it) and the worktree's HEAD's
  for (const log of [path.join(site.commonDir, 'logs', ...ref.split('/')), path.join(site.gitDir, 'logs', 'HEAD')]) {
    try {
      if (existsSync(log)) appendFileSync(log, line);
    } catch {
      // the branch holds the commit: a history line that could not be added loses no work
    }
  }
  return { commit };
}

/**
 * The tree `git write-tree` writes from an index file of the repository, written without a
 * process when the commit `parent`'s tree is laid out here (only the folders the index changed
 * against it are hashed and written); null otherwise, or for an index or repository index-commit
 * cannot be sure of: the caller asks git.
 */
export function writeIndexTree(commonDir: string, indexFile: string, parent: string): string | null {
  if (!isPlainRepository(commonDir)) return null;
  const parentTree = looseCommitTree(commonDir, parent);
  if (parentTree === null || !hasLayout(parentTree)) return null;
  const entries = readIndexEntries(indexFile);
  return entries === null ? null : writeTrees(path.join(commonDir, 'objects'), entries, [], { base: parentTree });
}

/**
 * The commit `git commit-tree <tree> -p <parent> -m <message>` writes (the given identity, now in
 * the local time zone), written into the repository's objects without a process; null when the
 * repository is not plain (see commitIndex) or the write fails: the caller asks git.
 */
export function writeCommit(
  commonDir: string,
  tree: string,
  parent: string,
  message: string,
  who: CommitIdentity,
  at = new Date(),
): string | null {
  if (!/^[0-9a-f]{40}$/.test(tree) || !/^[0-9a-f]{40}$/.test(parent) || !isPlainRepository(commonDir)) return null;
  const person = personAt(who, at);
  return writeLooseObject(path.join(commonDir, 'objects'), 'commit', commitBody(tree, parent, person, message));
}

function commitBody(tree: string, parent: string, person: string, message: string): Buffer {
  return Buffer.from(`tree ${tree}\nparent ${parent}\nauthor ${person}\ncommitter ${person}\n\n${message}\n`, 'utf8');
}

/**
 * A repository whose objects git writes as plain sha1 loose files with no permissions of their own
 * to keep, and whose commits carry no header but tree, parent, author and committer: no extension
 * (sha256, reftable, a per-worktree config), no shared repository, no commit encoding, nothing included.
 */
export function isPlainRepository(commonDir: string): boolean {
  const config = readTextOrNull(path.join(commonDir, 'config'));
  return (
    config !== null &&
    !/^\s*\[(?:extensions|include)|objectformat|sharedrepository|refstorage|commitencoding|worktreeconfig/im.test(
      config,
    )
  );
}

/** The entries of a version 2 or 3 sha1 index with only plain stage-0 entries and no split or sparse extension, checksum checked; else null. */
export function readIndexEntries(indexFile: string): TreeEntry[] | null {
  // a worktree's index, which its worker could have swapped for a FIFO or a link (issue 32)
  const read = readBounded(indexFile, { maxBytes: INDEX_MAX_BYTES });
  if (!read.ok) return null;
  const buf = read.bytes;
  if (buf.length < 32 || buf.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = buf.readUInt32BE(4);
  if (version !== 2 && version !== 3) return null;
  const body = buf.length - 20;
  if (!createHash('sha1').update(buf.subarray(0, body)).digest().equals(buf.subarray(body))) return null;
  const count = buf.readUInt32BE(8);
  const entries: TreeEntry[] = [];
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at + 62 > body) return null;
    const flags = buf.readUInt16BE(at + 60);
    // an extended entry (intent-to-add, skip-worktree) or a stage (a conflict): git's to commit
    if ((flags & 0x7000) !== 0) return null;
    const mode = buf.readUInt32BE(at + 24);
    const nameStart = at + 62;
    const nameEnd = buf.indexOf(0, nameStart);
    if (nameEnd < 0 || nameEnd >= body || !TREE_MODES.has(mode)) return null;
    const length = flags & 0xfff;
    if (length !== 0xfff && length !== nameEnd - nameStart) return null;
    entries.push({ path: buf.toString('latin1', nameStart, nameEnd), mode, id: buf.toString('hex', at + 40, at + 60) });
    at += (62 + (nameEnd - nameStart) + 8) & ~7;
  }
  // extensions: a split index keeps its entries elsewhere, a sparse one folds folders into entries
  while (at + 8 <= body) {
    const signature = buf.toString('latin1', at, at + 4);
    if (signature === 'link' || signature === 'sdir') return null;
    at += 8 + buf.readUInt32BE(at + 4);
  }
  return at === body ? entries : null;
}

/** The tree of a commit kept as a loose object; null when it is packed or unreadable. */
function looseCommitTree(commonDir: string, id: string): string | null {
  try {
    const file = readBounded(path.join(commonDir, 'objects', id.slice(0, 2), id.slice(2)), { maxBytes: 1 << 20 });
    if (!file.ok) return null;
    const object = inflateSync(file.bytes, { maxOutputLength: 4 << 20 });
    const match = /^commit \d+\0tree ([0-9a-f]{40})\n/.exec(object.toString('latin1', 0, 64));
    return match?.[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * Points a loose ref at `to` as git does: `<ref>.lock` created exclusively, the ref read again under
 * it — it must still be `from`, or not exist at all when `from` is null — the lock written and
 * renamed over the ref. False when the lock is taken, the ref is not as expected, or a write fails:
 * nothing changed, git is asked.
 */
export function updateLooseRef(refFile: string, from: string | null, to: string): boolean {
  const lock = `${refFile}.lock`;
  let fd: number;
  try {
    fd = openSync(lock, 'wx');
  } catch {
    return false;
  }
  let moved = false;
  try {
    const now = readTextOrNull(refFile)?.trim() ?? null;
    if (now === from && (from !== null || !existsSync(refFile))) {
      writeSync(fd, `${to}\n`);
      closeSync(fd);
      fd = -1;
      renameSync(lock, refFile);
      moved = true;
    }
  } catch {
    // the lock is removed below: the ref is as it was
  } finally {
    if (fd !== -1) closeSync(fd);
    if (!moved) rmSync(lock, { force: true });
  }
  return moved;
}

/** An identity at a time as a commit or a reflog line holds it: `name <email> <seconds> <local zone>`. */
export function personAt(who: CommitIdentity, at: Date): string {
  return `${who.name} <${who.email}> ${Math.floor(at.getTime() / 1000)} ${timezoneOf(at)}`;
}

/** The local time zone as git writes it in a commit: `+0100`, `-0530`. */
function timezoneOf(at: Date): string {
  const minutes = -at.getTimezoneOffset();
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
}
