import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { constants as zlibConstants, inflateSync } from 'node:zlib';
import { readTextOrNull } from './read-text.js';

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Whether the workspace's repository has a commit at HEAD, read from its files the way git reads
 * them, without a process: HEAD (a branch named by a loose or packed ref, or a commit id) naming a
 * loose object that is a commit. Null whenever the files alone cannot say for sure — no `.git`
 * found, a folder owned by another user (git refuses those), a repository extension, a ref or
 * object git keeps elsewhere (reftable, a pack, alternates), an unborn branch: the caller asks git.
 */
export function readHeadHasCommit(workspace: string): true | null {
  const id = readHeadId(workspace);
  return id !== null && isLooseCommit(id.common, id.id) ? true : null;
}

/**
 * The id HEAD names, read from the repository's files as git reads them (a branch's loose or packed
 * ref, or a detached id), with the common dir it was read in; null whenever the files alone cannot
 * say for sure (as readHeadHasCommit). It may name a packed object: the caller asks git for that.
 */
export function readHeadId(workspace: string): { id: string; common: string } | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const found = findGitDir(path.resolve(workspace));
  if (found === null) return null;
  const { top, gitDir } = found;
  // git refuses a repository whose folders another user owns (safe.directory): git decides those
  if (lstatSync(top).uid !== uid || lstatSync(gitDir).uid !== uid) return null;
  const common = commonDirOf(gitDir);
  // an extension (reftable, sha256, one this git may not know) is git's to read
  if (
    common === null ||
    existsSync(path.join(common, 'reftable')) ||
    /^\s*\[extensions/im.test(readTextOrNull(path.join(common, 'config')) ?? '[extensions]')
  )
    return null;
  const head = readTextOrNull(path.join(gitDir, 'HEAD'))?.trim();
  if (head === undefined) return null;
  const id = head.startsWith('ref: ') ? refId(common, head.slice(5).trim()) : head;
  if (id === null || !OBJECT_ID.test(id)) return null;
  return { id, common };
}

/** The nearest `.git` at or above `dir`: its folder, or the one its `gitdir:` file names. */
export function findGitDir(dir: string): { top: string; gitDir: string } | null {
  const device = lstatSync(dir, { throwIfNoEntry: false })?.dev;
  for (let current = dir; ; current = path.dirname(current)) {
    // git's search stops at a filesystem boundary (GIT_DISCOVERY_ACROSS_FILESYSTEM is never set for it)
    if (lstatSync(current, { throwIfNoEntry: false })?.dev !== device) return null;
    const dotGit = path.join(current, '.git');
    const st = lstatSync(dotGit, { throwIfNoEntry: false });
    if (st?.isDirectory() === true) return { top: current, gitDir: dotGit };
    if (st?.isFile() === true) {
      const pointer = readTextOrNull(dotGit)
        ?.match(/^gitdir: (.+)$/m)?.[1]
        ?.trim();
      return pointer ? { top: current, gitDir: path.resolve(current, pointer) } : null;
    }
    // a workspace inside a git dir itself (`.git/…`) is git's to judge
    if (st !== undefined || path.basename(current) === '.git' || path.dirname(current) === current) return null;
  }
}

/** A git dir's common dir (a worktree's `commondir`), or the git dir itself. */
export function commonDirOf(gitDir: string): string | null {
  const pointer = readTextOrNull(path.join(gitDir, 'commondir'));
  if (pointer === null) return existsSync(path.join(gitDir, 'objects')) ? gitDir : null;
  return path.resolve(gitDir, pointer.trim());
}

/** A branch's id from its loose ref, else from `packed-refs`; null when neither names it (unborn, or kept elsewhere). */
function refId(common: string, ref: string): string | null {
  if (!/^refs\/heads\/[^\0\s]+$/.test(ref) || ref.split('/').includes('..')) return null;
  const loose = readTextOrNull(path.join(common, ...ref.split('/')));
  if (loose !== null) return loose.trim();
  for (const line of (readTextOrNull(path.join(common, 'packed-refs')) ?? '').split('\n')) {
    const [id, name] = line.split(' ');
    if (name === ref && id !== undefined) return id;
  }
  return null;
}

/** Whether the object is a loose object whose header says it is a commit (its first bytes inflated, not the whole object). */
function isLooseCommit(common: string, id: string): boolean {
  const file = path.join(common, 'objects', id.slice(0, 2), id.slice(2));
  let fd: number | null = null;
  try {
    // a worker can leave a FIFO where an object was: opened without blocking, read only when regular (issue 32)
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    if (!fstatSync(fd).isFile()) return false;
    const head = Buffer.alloc(64);
    const read = readSync(fd, head, 0, head.length, 0);
    return (
      inflateSync(head.subarray(0, read), { finishFlush: zlibConstants.Z_SYNC_FLUSH })
        .subarray(0, 7)
        .toString('latin1') === 'commit '
    );
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
