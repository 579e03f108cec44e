import { existsSync, promises as fs, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { recycleFolder } from '../platform/files/spare-entries.js';
import { isGitAvailable, runGitOk } from './git.js';
import { OUTSIDE_DIR } from './outside-evidence.js';
import { shadowGitDir } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import { shadowIndexFile } from './shadow-repo.js';
import { forgetWarmState } from './warm-state.js';

const PRUNE_TIMEOUT_MS = 600_000;

/**
 * Deletes the snapshots of jobs not in `keepJobIds`: their refs in every shadow repository, then
 * `reflog expire` + `gc --prune=now` so the objects go too, their large-file manifests, their
 * mtime manifests and their out-of-evidence records. A shadow repository left without any ref is
 * removed whole. Call it when no job is live on the workspaces concerned (gc must never run
 * during a job, spec 03).
 *
 * `keepJobIds` may be a function: it is then asked again inside each repository's lock, so a job
 * created while the prune runs (its row exists before its first snapshot) is never pruned.
 */
export async function pruneSnapshots(
  dataDir: string,
  keepJobIds: Set<string> | (() => Set<string>),
): Promise<{ refsDeleted: number }> {
  const keepNow = () => (typeof keepJobIds === 'function' ? keepJobIds() : keepJobIds);
  const root = path.resolve(dataDir);
  let refsDeleted = 0;
  const shadowRoot = path.join(root, 'shadow');
  const repos = (await fs.readdir(shadowRoot).catch(() => [] as string[])).filter((name) => name.endsWith('.git'));
  const hasGit = repos.length > 0 && (await isGitAvailable());
  for (const name of repos) {
    const gitDir = path.join(shadowRoot, name);
    if (hasGit) {
      refsDeleted += await withRepoLock(gitDir, PRUNE_TIMEOUT_MS, async () => {
        const keep = keepNow();
        await removeJobDirs(path.join(gitDir, 'manifests'), keep);
        // a repository removed whole (below) whose lock was taken again meanwhile: its folder was made
        // anew for the lock, and holds no repository until a checkpoint makes one — nothing to prune
        if (!existsSync(path.join(gitDir, 'HEAD'))) return 0;
        return pruneRepo(gitDir, keep);
      });
    } else await removeJobDirs(path.join(gitDir, 'manifests'), keepNow());
  }
  await removeJobDirs(path.join(root, 'snapshots'), keepNow());
  await removeJobDirs(path.join(root, OUTSIDE_DIR), keepNow());
  return { refsDeleted };
}

async function pruneRepo(gitDir: string, keep: Set<string>): Promise<number> {
  // the shadow index's blobs stay reachable for gc only through GIT_INDEX_FILE
  const opts = { cwd: gitDir, timeoutMs: PRUNE_TIMEOUT_MS, env: { GIT_INDEX_FILE: shadowIndexFile(gitDir) } };
  const git = [`--git-dir=${gitDir}`];
  const listed = await runGitOk([...git, 'for-each-ref', '--format=%(refname)', 'refs/gaffer/'], opts);
  const refs = listed
    .toString('utf8')
    .split('\n')
    .filter((r) => r !== '');
  const doomed = refs.filter((ref) => {
    const job = ref.split('/')[3];
    return job !== undefined && !keep.has(job);
  });
  if (doomed.length === 0) return 0;
  // the tree and commit a warm checkpoint would reuse may be among the objects about to go
  forgetWarmState(gitDir);
  if (doomed.length === refs.length) {
    await fs.rm(gitDir, { recursive: true, force: true });
    return doomed.length;
  }
  // a doomed checkpoint's loose refs go with their job's folder, kept as a spare for the next jobs
  // (platform/files/spare-entries.ts); update-ref then deletes what was packed
  const folders = new Set(doomed.filter((ref) => ref.split('/').length === 5).map((ref) => path.dirname(ref)));
  await Promise.all([...folders].map((folder) => recycleFolder(path.join(gitDir, ...folder.split('/')))));
  await runGitOk([...git, 'update-ref', '--stdin'], {
    ...opts,
    input: doomed.map((ref) => `delete ${ref}\n`).join(''),
  });
  await runGitOk([...git, 'reflog', 'expire', '--expire=now', '--all'], opts);
  // refs stay loose: packing them would remove every kept job's ref folder, which the next prune takes back
  await runGitOk([...git, '-c', 'gc.packRefs=false', 'gc', '--prune=now', '--quiet'], opts);
  return doomed.length;
}

async function removeJobDirs(dir: string, keep: Set<string>): Promise<void> {
  const entries = await fs.readdir(dir).catch(() => [] as string[]);
  for (const job of entries) {
    if (!keep.has(job)) await fs.rm(path.join(dir, job), { recursive: true, force: true });
  }
}

/**
 * Removes a workspace's shadow repository once nothing will look at its snapshots again: a
 * worktree gaffer is done with (spec 06; its work is on its branch). A path that is never used
 * twice would otherwise leave one repository behind per task.
 */
export async function dropShadowRepo(dataDir: string, workspace: string): Promise<void> {
  const gitDir = shadowGitDir(dataDir, workspace);
  // after any call still running on it; its warm state goes with it
  await withRepoLock(gitDir, PRUNE_TIMEOUT_MS, () => Promise.resolve(forgetWarmState(gitDir)));
  // a seeded task's repository holds a few objects: removed at once, not one pool round trip per file and folder
  if (isSmallRepo(gitDir)) rmSync(gitDir, { recursive: true, force: true });
  else await fs.rm(gitDir, { recursive: true, force: true });
}

/** Objects in at most this many of a repository's 256 fan-out folders: a few dozen objects, most likely. */
const SMALL_REPO_FANOUT = 32;

/** Whether a shadow repository is small enough to remove without yielding to the event loop: no pack, few loose-object folders. */
function isSmallRepo(gitDir: string): boolean {
  try {
    const objects = readdirSync(path.join(gitDir, 'objects'));
    return objects.length <= SMALL_REPO_FANOUT + 2 && readdirSync(path.join(gitDir, 'objects', 'pack')).length === 0;
  } catch {
    return false;
  }
}
