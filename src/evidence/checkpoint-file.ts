import { DEFAULT_GIT_TIMEOUT_MS, runGitOk } from './git.js';
import { normalizeRelPath } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import { isNotInCheckpoint } from './shadow-checkpoint.js';
import type { Snapshot } from '../domain/snapshot.js';

/** One file as a snapshot holds it: its content, absent, or known only by stat (an mtime snapshot, a file over the size cap). */
export type CheckpointFile =
  | {
      found: 'content';
      content: Buffer;
      /** git's mode: `100644`, `100755`, or `120000` for a symlink (its content the link's target). */
      mode: string;
    }
  | { found: 'absent' }
  | { found: 'stat-only' };

/** Reads one workspace-relative file as `snapshot` recorded it (the shadow commit's blob). */
export async function readCheckpointFile(snapshot: Snapshot, rawPath: string): Promise<CheckpointFile> {
  const rel = normalizeRelPath(rawPath);
  const gitDir = snapshot.gitDir;
  if (rel === null) return { found: 'absent' };
  if (snapshot.source === 'mtime' || gitDir === undefined) return { found: 'stat-only' };
  // most jobs' workspaces have no objectives file: the checkpoint just taken says so without a git process
  if (isNotInCheckpoint(gitDir, snapshot.id, rel)) return { found: 'absent' };
  return withRepoLock(gitDir, DEFAULT_GIT_TIMEOUT_MS, async () => {
    const opts = { cwd: snapshot.workspace, timeoutMs: DEFAULT_GIT_TIMEOUT_MS };
    const listed = await runGitOk(
      [`--git-dir=${gitDir}`, '--literal-pathspecs', 'ls-tree', '-z', snapshot.id, '--', rel],
      opts,
    );
    const entry = /^(\d{6}) blob ([0-9a-f]+)\t/.exec(listed.toString('utf8').split('\0')[0] ?? '');
    // a file over the size cap is in the snapshot's manifest, not its tree
    if (entry === null) return snapshot.largeFilesByStat ? { found: 'stat-only' } : { found: 'absent' };
    const [, mode = '', blob = ''] = entry;
    return { found: 'content', mode, content: await runGitOk([`--git-dir=${gitDir}`, 'cat-file', 'blob', blob], opts) };
  });
}
