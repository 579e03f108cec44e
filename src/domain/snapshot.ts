// A snapshot of a workspace (spec 03) as kept on the job row: evidence/ takes it, the store keeps it.

/**
 * A snapshot of a workspace's content. JSON-serializable: the engine stores it on the job row so
 * a later process (status, baseline, diff of one path) can use it.
 */
export interface Snapshot {
  /** `checkpoint` = content-exact shadow git; `mtime` = the size+mtime fallback. */
  source: 'checkpoint' | 'mtime';
  /** Full id: the shadow commit sha, or the sha1 of the mtime manifest. */
  id: string;
  /** The absolute workspace path it was taken of. */
  workspace: string;
  /** Shadow git dir (source `checkpoint`). */
  gitDir?: string;
  /** Ref that keeps the commit reachable: refs/gaffer/<ws-hash>/<job>/<label>. */
  ref?: string;
  /** Manifest file (source `mtime`, and large files of a checkpoint), JSON. */
  manifestFile?: string;
  /** Special or unreadable files not snapshotted (relative paths). */
  skipped: string[];
  /**
   * Issue 32: a signature (size, mtime, ctime, inode) of each skipped name that is not UTF-8 and is a
   * regular file, so an edit of its content is a modification even though its content is not stored.
   */
  skippedStats?: Record<string, string>;
  /** The mtime fallback hit its 60,000-file cap. */
  truncated: boolean;
  /** Some files were over the size cap and recorded by size+mtime+inode. */
  largeFilesByStat: boolean;
  /** Why the fallback was used, when it was. */
  fallbackReason?: string;
  /** When it was taken (ms since the epoch): lets a checkpoint be compared with an mtime snapshot. */
  takenAtMs?: number;
  /**
   * The key (`<job>/<label>`) of the record of the places the evidence does not hold (git
   * hooks/config/info, editor configs, excluded folders by stat), which the process running the
   * job keeps in memory while it runs. Absent when it could not be taken.
   */
  outsideRecord?: string;
  /**
   * Files the workspace's ignore rules hid when it was taken that the rules of the checkpoint it is
   * compared with would have listed (a worker's `.gitignore` line, info/exclude or excludesFile):
   * they are in this snapshot all the same (issue 32, ignore-judge.ts).
   */
  hiddenByIgnore?: string[];
}
