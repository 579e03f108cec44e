import type { Snapshot } from '../domain/snapshot.js';

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
}

/** What changed between two snapshots of one workspace: full lists, never capped. */
export interface ChangeSet {
  added: string[];
  modified: string[];
  deleted: string[];
}
