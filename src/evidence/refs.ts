import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { removeFile } from './remove-file.js';
import { runGitOk, type GitCallOptions } from './git.js';

/**
 * Points a ref of a shadow repository at an object. With git's `files` ref storage (every shadow
 * repository git ≤ 2.x creates) this writes the loose ref file the way git does — `<ref>.lock`,
 * then a rename over the ref — which saves a git process per checkpoint; git reads it like any
 * loose ref (it wins over a packed one). Any other storage (reftable) goes through `update-ref`.
 * The caller holds the repository lock, so no other writer can race the rename.
 */
export async function writeRef(gitDir: string, ref: string, objectId: string, opts: GitCallOptions): Promise<void> {
  if (!/^refs\/[A-Za-z0-9._/-]+$/.test(ref) || ref.includes('..') || ref.endsWith('.lock')) {
    throw new Error(`invalid ref name ${ref}`);
  }
  if (existsSync(path.join(gitDir, 'reftable'))) {
    await runGitOk([`--git-dir=${gitDir}`, 'update-ref', ref, objectId], opts);
    return;
  }
  // small synchronous calls cost less than round trips through libuv's thread pool
  const file = path.join(gitDir, ...ref.split('/'));
  const lock = `${file}.lock`;
  mkdirSync(path.dirname(file), { recursive: true });
  if (!linkedFromSame(gitDir, objectId, lock)) writeFileSync(lock, `${objectId}\n`);
  renameSync(lock, file);
  rememberRefFile(gitDir, objectId, file);
}

/**
 * The last ref file this process wrote in each shadow repository, with the object it names. A
 * checkpoint that names the same object as the last one (a job that changed nothing: its pre and
 * post, and the next job's pre) gets a hard link to that file rather than a file of its own: a new
 * file costs ext4 an inode allocation, which scans past every recently deleted inode (a busy
 * server prunes old jobs' files all day); a link costs a directory entry. git never writes into a
 * ref file — it renames a new one over it, or removes it — so a link shares nothing git changes.
 */
const lastRefFiles = new Map<string, { objectId: string; file: string }>();
/** Repositories whose last ref file is kept (one entry each; the oldest is let go first). */
const REF_FILES_KEPT = 256;

function rememberRefFile(gitDir: string, objectId: string, file: string): void {
  lastRefFiles.delete(gitDir);
  lastRefFiles.set(gitDir, { objectId, file });
  if (lastRefFiles.size > REF_FILES_KEPT) lastRefFiles.delete(lastRefFiles.keys().next().value as string);
}

/**
 * Links `lock` to the last ref file written in `gitDir` when that file still names `objectId` (it
 * is read first: a prune may have packed or removed it, a person may have rewritten it). False
 * when it cannot, with nothing left at `lock`: the caller writes the file.
 */
function linkedFromSame(gitDir: string, objectId: string, lock: string): boolean {
  const last = lastRefFiles.get(gitDir);
  if (last === undefined || last.objectId !== objectId) return false;
  try {
    if (readFileSync(last.file, 'utf8') !== `${objectId}\n`) return false;
    linkSync(last.file, lock);
    return true;
  } catch {
    // gone (pruned, packed), or links do not work here; a lock left by a crash is the caller's to overwrite
    removeFile(lock);
    return false;
  }
}
