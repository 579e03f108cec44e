import type { Snapshot } from '../domain/snapshot.js';
import type { IndexSeed } from './seed-index.js';

export interface SnapshotOptions {
  /** Absolute workspace path. */
  workspace: string;
  /** gaffer's data dir: shadow repos live under `<dataDir>/shadow/`. */
  dataDir: string;
  /** Job id (for the ref name). */
  jobId: string;
  /** Ref label: `pre`, `post`, `verify-0`, `fix-1`, … */
  label: string;
  /** Paths (relative to the workspace) always included even when ignored (`files`, `outputs`). */
  alwaysInclude?: string[];
  /** Files above this are recorded by stat, default 20 MiB. */
  sizeCapBytes?: number;
  /** Per git call, default 120 s. */
  gitTimeoutMs?: number;
  /** Force the mtime fallback (no git on PATH is detected by itself). */
  forceMtime?: boolean;
  /**
   * The snapshot this one will be diffed against: an mtime `like` forces the mtime fallback, so
   * before and after always have the same source. The engine passes the pre-snapshot here.
   */
  like?: Snapshot;
  /** Cap of the mtime fallback, default 60,000 files (spec 03). */
  mtimeMaxEntries?: number;
  /** The path whose shadow repository keeps this checkpoint, when not the workspace's own (a worktree job's shared base). */
  shadowOf?: string;
  /**
   * A checkpoint of a tree this workspace holds too, byte for byte (another worktree of one base,
   * before any worker): this snapshot is its content, read through its shadow repository's
   * objects, with this workspace's own record of the places outside the evidence. No git process
   * runs. Only a content checkpoint with no files by stat can be reused; the caller knows the
   * trees are the same.
   */
  reuse?: Snapshot;
  /**
   * This workspace's index as gaffer's checkout wrote it, before any worker, and the tree checked
   * out. With `reuse`: when the reused checkpoint holds that very tree, this workspace's shadow
   * index starts as a copy of it (seed-index.ts), so its next checkpoint hashes only what changed
   * since. Without: when this shadow repository's last checkpoint was of another checkout of that
   * tree and held it exactly, under the same checkout rules (a worktree job's base, job after job),
   * this checkpoint starts so (`seedFromCheckout`).
   */
  seedIndex?: IndexSeed;
}

/** What changed between two snapshots of one workspace: full lists, never capped. */
export interface ChangeSet {
  added: string[];
  modified: string[];
  deleted: string[];
}
