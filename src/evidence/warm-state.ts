import { statSync } from 'node:fs';
import type { Listing } from './listing.js';

/**
 * What this process remembers of a workspace's last checkpoint, so the next one can skip work
 * in JS when nothing it depends on changed. Only valid while the shadow index file is exactly the
 * one that checkpoint wrote (same inode, size, mtime and ctime).
 */
export interface WarmState {
  /** Stat signature of the shadow index right after the checkpoint wrote it. */
  indexSignature: string;
  /** The tree that index holds (written by that checkpoint). */
  tree: string;
  /** The listing of that checkpoint. */
  listing: Listing;
  /** The paths that checkpoint wanted. */
  wanted: Set<string>;
  /** The folders holding them. */
  folders: Set<string>;
  /** Wanted paths that are not in the index (large, special, unreadable, gone, folders). */
  outside: Set<string>;
}

/** Workspaces remembered at once (each holds its path set: a few MB for 50,000 files). */
const MAX_REMEMBERED = 8;
const remembered = new Map<string, WarmState>();

/** The stat signature of a file, or null when it does not exist. */
export function fileSignature(file: string): string | null {
  const st = statSync(file, { throwIfNoEntry: false, bigint: true });
  return st === undefined ? null : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** The state of the last checkpoint of this shadow repo, when its index is still the one it wrote. */
export function recallWarmState(gitDir: string, indexFile: string): WarmState | null {
  const state = remembered.get(gitDir);
  if (state === undefined) return null;
  if (fileSignature(indexFile) !== state.indexSignature) {
    remembered.delete(gitDir);
    return null;
  }
  return state;
}

/** Remembers a checkpoint's state (most recent last; the oldest workspace is forgotten first). */
export function rememberWarmState(gitDir: string, state: WarmState): void {
  remembered.delete(gitDir);
  remembered.set(gitDir, state);
  while (remembered.size > MAX_REMEMBERED) {
    const oldest = remembered.keys().next().value;
    if (oldest === undefined) break;
    remembered.delete(oldest);
  }
}

/** Forgets a shadow repo (its index was removed, or a checkpoint failed half-way). */
export function forgetWarmState(gitDir: string): void {
  remembered.delete(gitDir);
}
