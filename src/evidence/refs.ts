import { existsSync, linkSync, lstatSync, renameSync, writeFileSync } from 'node:fs';
import { makeFolder } from '../platform/files/spare-entries.js';
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
  makeFolder(path.dirname(file));
  let ino = linkedFromSame(gitDir, objectId, lock);
  if (ino === null) {
    writeFileSync(lock, `${objectId}\n`);
    ino = lstatSync(lock).ino;
  }
  renameSync(lock, file);
  rememberRefFile(gitDir, { objectId, file, ino });
}

/**
 * The last ref file this process wrote in each shadow repository, with the object it names. A
 * checkpoint that names the same object as the last one (a job that changed nothing: its pre and
 * post, and the next job's pre) gets a hard link to that file rather than a file of its own: a new
 * file costs ext4 an inode allocation, which scans past every recently deleted inode (a busy
 * server prunes old jobs' files all day); a link costs a directory entry. git never writes into a
 * ref file — it renames a new one over it, or removes it — so a link shares nothing git changes.
 */
const lastRefFiles = new Map<string, RefFile>();

/** A ref file this process wrote: where, the object it names, and its inode (what a link must reach). */
interface RefFile {
  objectId: string;
  file: string;
  ino: number;
}
/** Repositories whose last ref file is kept (one entry each; the oldest is let go first). */
const REF_FILES_KEPT = 256;

function rememberRefFile(gitDir: string, written: RefFile): void {
  lastRefFiles.delete(gitDir);
  lastRefFiles.set(gitDir, written);
  if (lastRefFiles.size > REF_FILES_KEPT) lastRefFiles.delete(lastRefFiles.keys().next().value as string);
}

/**
 * Links `lock` to the last ref file written in `gitDir` when it names `objectId`, and returns the
 * inode linked. What the link reached is checked, not read: the very inode written then, a file of
 * a ref's size — a prune may have packed or removed that file, and anything else put at its path
 * (another file, a FIFO) is not linked. Null when it cannot, with nothing left at `lock`: the caller
 * writes the file.
 */
function linkedFromSame(gitDir: string, objectId: string, lock: string): number | null {
  const last = lastRefFiles.get(gitDir);
  if (last === undefined || last.objectId !== objectId) return null;
  try {
    linkSync(last.file, lock);
    const st = lstatSync(lock);
    if (st.ino === last.ino && st.isFile() && st.size === objectId.length + 1) return st.ino;
  } catch {
    // gone (pruned, packed), or links do not work here; a lock left by a crash is the caller's to overwrite
  }
  removeFile(lock);
  return null;
}
