import { statSync } from 'node:fs';
import type { KnownIndex } from './known-index.js';
import type { ListingMemo } from './listing.js';

/** What the enclosing repository's index tells a path set, by the index's stat signature (quick-look.ts `trackedDigest`). */
export interface TrackedDigest {
  /** The index's stat signature when it was read (the `index=` part of a rules key). */
  signature: string;
  /** SHA-1 of the mode and path of its tracked ignored entries and of its gitlinks, in index order. */
  digest: string;
}

/**
 * What this process remembers of a workspace's last checkpoint, so the next one can skip work
 * in JS when nothing it depends on changed. Only valid while the shadow index file is exactly the
 * one that checkpoint wrote (same inode, size, mtime and ctime).
 */
export interface WarmState {
  /** Stat signature of the shadow index right after the checkpoint wrote it. */
  indexSignature: string;
  /**
   * Index entries of files modified in the second the index was written (racy git: git compares
   * their content on every look until the index is written again, a second later at least).
   */
  racy: { files: number; bytes: number };
  /** When the index was last written, ms since the epoch. */
  indexWrittenMs: number;
  /** The tree that index holds (written by that checkpoint). */
  tree: string;
  /** The checkpoint's commit of that tree (reused while the tree stays the same). */
  commit: string;
  /** The listing of that checkpoint; null when its path set was derived (quick-look.ts), not listed. */
  listing: ListingMemo | null;
  /** The key of the rules its path set was made under (quick-look.ts), null when not derivable. */
  rules: string | null;
  /**
   * The enclosing repository's tracked entries when its rules were read (quick-look.ts
   * `trackedDigest`): a user's commit since changes the rules key, not them. Absent for a small or
   * no repository.
   */
  tracked?: TrackedDigest | null;
  /** The paths that checkpoint wanted. */
  wanted: Set<string>;
  /** Paths gone from the set since its last full listing (quick-look.ts): looked for by name, since git may not name them when they come back. */
  gone?: Set<string>;
  /** The folders holding them. */
  folders: Set<string>;
  /** Wanted paths that are not in the index (large, special, unreadable, gone, folders). */
  outside: Set<string>;
  /**
   * The index's content, when gaffer knows it (a seed never written by git since): the next
   * checkpoints hash their few changes and build their trees here, leaving the index as it is
   * (known-index.ts); `tree` and `commit` stay the index's.
   */
  known?: KnownIndex;
}

/**
 * Paths remembered across all workspaces (a path set of 50,000 files is a few MB): many small
 * workspaces (a server serving 50 projects) stay warm, a few huge ones push each other out.
 */
const MAX_REMEMBERED_PATHS = 400_000;
/** Workspaces remembered at once, whatever their size. */
const MAX_REMEMBERED = 128;
const remembered = new Map<string, WarmState>();
let rememberedPaths = 0;

/** The stat signature of a file, or null when it does not exist. */
export function fileSignature(file: string): string | null {
  const st = statSync(file, { throwIfNoEntry: false, bigint: true });
  return st === undefined ? null : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** The modification time (ms) a signature records. */
export function signatureMtimeMs(signature: string): number {
  return Number(BigInt(signature.split(':')[2] ?? '0') / 1_000_000n);
}

/** The state of the last checkpoint of this shadow repo, when its index is still the one it wrote. */
export function recallWarmState(gitDir: string, indexFile: string): WarmState | null {
  const state = remembered.get(gitDir);
  if (state === undefined) return null;
  if (fileSignature(indexFile) !== state.indexSignature) {
    forgetWarmState(gitDir);
    return null;
  }
  return state;
}

/** Remembers a checkpoint's state (most recent last; the oldest workspace is forgotten first). */
export function rememberWarmState(gitDir: string, state: WarmState): void {
  forgetWarmState(gitDir);
  remembered.set(gitDir, state);
  rememberedPaths += state.wanted.size;
  while (remembered.size > 1 && (remembered.size > MAX_REMEMBERED || rememberedPaths > MAX_REMEMBERED_PATHS)) {
    const oldest = remembered.keys().next().value;
    if (oldest === undefined) break;
    forgetWarmState(oldest);
  }
}

/**
 * Forgets a shadow repo: its index was removed, a checkpoint failed half-way, or a prune may have
 * removed the tree and commit it remembers.
 */
export function forgetWarmState(gitDir: string): void {
  const state = remembered.get(gitDir);
  if (state === undefined) return;
  remembered.delete(gitDir);
  rememberedPaths -= state.wanted.size;
}
