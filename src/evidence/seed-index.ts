import { copyFileSync, readFileSync, statSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Snapshot } from '../domain/snapshot.js';
import { adminDirs, pathSetRules } from './quick-look.js';
import { removeFile } from './remove-file.js';
import { shadowIndexFile } from './shadow-repo.js';
import { fileSignature, forgetWarmState, recallWarmState, rememberWarmState, signatureMtimeMs } from './warm-state.js';
import { readTextOrNull } from './read-text.js';
import { KNOWN_INDEX_LIMITS, type IndexEntry, type KnownIndex } from './known-index.js';

/** A workspace's git index as gaffer's own checkout wrote it, before any worker ran, and the tree that checkout holds. */
export interface IndexSeed {
  /** The index file (a copy made right after the checkout, with the checkout's index's mtime). */
  file: string;
  /** The tree checked out (the commit's tree, in the repository's object format). */
  tree: string;
}

/**
 * Starts a workspace's new shadow index as a copy of its checkout's index, so its first checkpoint
 * looks at what changed since the checkout instead of hashing every file (spec 03's stat cache,
 * from the first checkpoint on). Only when `reused` — the checkpoint this workspace's pre-snapshot
 * reuses — holds exactly `seed.tree`: its content was hashed byte for byte by a checkpoint, so the
 * checkout wrote the blobs as they are (no filter, eol or encoding rewrote them) and every entry
 * names the content its file has. The index must be a plain one (version 2: no skip-worktree or
 * intent-to-add entry; one stage per path) holding exactly the checkpoint's paths. The shadow
 * index's warm state is that checkpoint's, with this index's stat data: the next checkpoint asks
 * git what changed (quick-look.ts) and hashes only that.
 *
 * Racy git holds as for the checkout's own index: the copy keeps that index's mtime, so git
 * compares by content every entry of a file written in the second that index was written, and any
 * later change to a file (a worker's, or anything's before it) leaves a later mtime than its entry.
 *
 * Returns whether it seeded; otherwise the shadow index is left absent (a cold first checkpoint).
 * The caller holds the shadow repository's lock.
 */
export function seedShadowIndex(input: {
  gitDir: string;
  workspace: string;
  alwaysInclude: string[];
  reused: { gitDir: string; commit: string };
  seed: IndexSeed;
}): boolean {
  const { gitDir, seed } = input;
  const base = recallWarmState(input.reused.gitDir, shadowIndexFile(input.reused.gitDir));
  if (base === null || base.commit !== input.reused.commit || base.tree !== seed.tree || base.outside.size > 0)
    return false;
  // the rules that derive the path set from the index (quick-look.ts): without them the next checkpoint lists the workspace
  const rules = pathSetRules(input.workspace, input.alwaysInclude);
  if (rules === null) return false;
  const indexFile = shadowIndexFile(gitDir);
  forgetWarmState(gitDir);
  try {
    copyFileSync(seed.file, indexFile);
    const { atime, mtime } = statSync(seed.file);
    utimesSync(indexFile, atime, mtime);
  } catch {
    removeFile(indexFile);
    return false;
  }
  const signature = fileSignature(indexFile);
  const read = signature === null ? null : readPlainIndex(readFileSync(indexFile));
  const writtenMs = signature === null ? 0 : signatureMtimeMs(signature);
  if (
    signature === null ||
    read === null ||
    read.paths.length !== base.wanted.size ||
    !read.paths.every((p) => base.wanted.has(p))
  ) {
    removeFile(indexFile);
    return false;
  }
  const writtenS = Math.floor(writtenMs / 1000);
  const racy = read.entries.filter((e) => e.mtimeS >= writtenS);
  rememberWarmState(gitDir, {
    indexSignature: signature,
    racy: { files: racy.length, bytes: racy.reduce((sum, e) => sum + e.size, 0) },
    indexWrittenMs: writtenMs,
    tree: base.tree,
    commit: base.commit,
    listing: null,
    rules: rules.key,
    wanted: new Set(base.wanted),
    folders: new Set(base.folders),
    outside: new Set(),
    // its content is the checkpoint's tree, entry by entry: the next checkpoints need not write it to know theirs
    ...knownContent(seed.tree, read),
  });
  return true;
}

/** The known content of the trees seeded last, one map per tree (every task of a fan-out seeds the same one), not one per task. */
const knownByTree = new Map<string, ReadonlyMap<string, IndexEntry>>();
const KNOWN_TREES = 2;

/**
 * A seed's content as known-index.ts keeps it: the tree's map when an earlier seed of that tree
 * holds exactly these entries, else a new one. None for a tree of more than
 * `KNOWN_INDEX_LIMITS.entries`, or when a name is not UTF-8 (it would not come back byte for byte):
 * git builds those trees.
 */
function knownContent(tree: string, read: { paths: string[]; entries: EntryFacts[] }): { known?: KnownIndex } {
  // a bigger tree's map (~30 MB at 100,000 entries) would cost more memory than the processes it spares
  if (read.paths.length > KNOWN_INDEX_LIMITS.entries || read.paths.some((p) => p.includes('\uFFFD'))) return {};
  const kept = knownByTree.get(tree);
  const same =
    kept !== undefined &&
    kept.size === read.paths.length &&
    read.paths.every((p, i) => {
      const entry = kept.get(p);
      const e = read.entries[i] as EntryFacts;
      return entry !== undefined && entry.mode === e.mode && entry.id === e.id;
    });
  const entries = same
    ? kept
    : new Map(
        read.paths.map((p, i) => [
          p,
          { mode: (read.entries[i] as EntryFacts).mode, id: (read.entries[i] as EntryFacts).id },
        ]),
      );
  knownByTree.delete(tree);
  knownByTree.set(tree, entries);
  if (knownByTree.size > KNOWN_TREES) knownByTree.delete(knownByTree.keys().next().value as string);
  return { known: { entries, last: null } };
}

/**
 * Shadow repositories whose last checkpoint was of a fresh checkout and held exactly the tree
 * checked out — every file hashed, so that checkout wrote each blob byte for byte — with what
 * decided that then: `<tree>\0<checkout rules>` (checkoutRulesKey).
 */
const faithfulCheckouts = new Map<string, string>();

/**
 * What decides whether a checkout writes a tree's blobs as they are, besides the tree's own
 * `.gitattributes`: the repository's config and `info/attributes`, and the user's attributes file
 * (git reads `~/.config/git/attributes` without any global config), by stat. Null when the
 * workspace is not the top of a repository or worktree, or its config could name more (a
 * per-worktree config, an included file).
 */
export function checkoutRulesKey(workspace: string): string | null {
  const dirs = adminDirs(workspace);
  if (dirs === null) return null;
  const config = readTextOrNull(path.join(dirs.common, 'config'));
  // a per-worktree config, or one that includes another file, could say more than this key sees
  if (config === null || /worktreeconfig|^\s*\[include/im.test(config)) return null;
  const userAttributes = path.join(
    process.env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'),
    'git',
    'attributes',
  );
  return [path.join(dirs.common, 'config'), path.join(dirs.common, 'info', 'attributes'), userAttributes]
    .map(signatureOf)
    .join('\0');
}

/**
 * Before a checkpoint of a fresh checkout of `seed.tree` in a shadow repository of its own (a
 * worktree job's shared base, kept from job to job): when that repository's last checkpoint was of
 * another checkout of the very same tree and held it exactly, under the same checkout rules, the
 * shadow index starts as this checkout's index (seedShadowIndex, the last checkpoint in the role
 * of the reused one): the checkpoint looks at what differs from it instead of hashing every file.
 * The caller holds the shadow repository's lock.
 */
export function seedFromCheckout(input: {
  gitDir: string;
  workspace: string;
  alwaysInclude: string[];
  seed: IndexSeed;
}): boolean {
  const { gitDir, seed } = input;
  const rules = checkoutRulesKey(input.workspace);
  if (rules === null || faithfulCheckouts.get(gitDir) !== `${seed.tree}\0${rules}`) return false;
  const last = recallWarmState(gitDir, shadowIndexFile(gitDir));
  if (last === null || last.tree !== seed.tree) return false;
  return seedShadowIndex({ ...input, reused: { gitDir, commit: last.commit } });
}

/** After that checkpoint: whether it held exactly the tree checked out (every file hashed or seeded from such a one), under which rules. */
export function noteCheckout(input: { gitDir: string; workspace: string; seed: IndexSeed }, snapshot: Snapshot): void {
  const { gitDir, seed } = input;
  const rules = checkoutRulesKey(input.workspace);
  const state = recallWarmState(gitDir, shadowIndexFile(gitDir));
  if (
    rules !== null &&
    snapshot.source === 'checkpoint' &&
    !snapshot.largeFilesByStat &&
    state?.commit === snapshot.id &&
    state.tree === seed.tree &&
    state.outside.size === 0
  ) {
    faithfulCheckouts.set(gitDir, `${seed.tree}\0${rules}`);
  } else faithfulCheckouts.delete(gitDir);
}

function signatureOf(file: string): string {
  const st = statSync(file, { throwIfNoEntry: false, bigint: true });
  return st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** One entry's stat facts that matter here, and its content. */
interface EntryFacts {
  mtimeS: number;
  size: number;
  mode: number;
  /** Its object id (hex). */
  id: string;
}

/** Fixed part of a version-2 index entry: ctime, mtime, dev, ino, mode, uid, gid, size (4 bytes each but the times, 8), a sha1, flags. */
const ENTRY_FIXED = 62;
const SHA1_BYTES = 20;

/**
 * The paths, stat facts and content of a version-2, sha1 index whose entries are all stage 0; null for any
 * other (another version, an extended or unmerged entry, a name that runs past the file).
 */
export function readPlainIndex(buf: Buffer): { paths: string[]; entries: EntryFacts[] } | null {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC' || buf.readUInt32BE(4) !== 2) return null;
  const count = buf.readUInt32BE(8);
  const paths: string[] = [];
  const entries: EntryFacts[] = [];
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_FIXED > buf.length) return null;
    const flags = buf.readUInt16BE(at + 40 + SHA1_BYTES);
    // extended (0x4000) cannot be set in version 2; a stage (0x3000) means a conflict
    if ((flags & 0x7000) !== 0) return null;
    const nameStart = at + ENTRY_FIXED;
    const nameEnd = buf.indexOf(0, nameStart);
    if (nameEnd < 0) return null;
    const length = flags & 0xfff;
    if (length !== 0xfff && length !== nameEnd - nameStart) return null;
    paths.push(buf.toString('utf8', nameStart, nameEnd));
    entries.push({
      mtimeS: buf.readUInt32BE(at + 8),
      size: buf.readUInt32BE(at + 36),
      mode: buf.readUInt32BE(at + 24),
      id: buf.toString('hex', at + 40, at + 40 + SHA1_BYTES),
    });
    // the entry is NUL-padded to a multiple of 8 bytes (1 to 8 NULs)
    at += (ENTRY_FIXED + (nameEnd - nameStart) + 8) & ~7;
  }
  return { paths, entries };
}
