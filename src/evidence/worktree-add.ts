import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { isPlainRepository, personAt, updateLooseRef, type CommitIdentity } from './index-commit.js';
import { readTextOrNull } from './read-text.js';

const ZERO = '0'.repeat(40);
/** A ref name component git takes as it is (check-ref-format, sanitize_refname_component): no rewriting to guess. */
const PLAIN_COMPONENT = /^(?!\.)(?!.*\.\.)(?!.*\.lock$)[A-Za-z0-9._-]+$/;

/**
 * What `git worktree add --no-checkout -b <branch> <dir> <base>` makes (git 2.39: three processes —
 * `worktree add`, `branch`, `symbolic-ref`), written without a process: the branch at `base` with
 * its reflog line, the administrative folder `worktrees/<name>` (a counter after the name when it
 * is taken, as git does; `locked` while it is made, so a prune leaves it), its `gitdir`,
 * `commondir`, `HEAD` and the HEAD's reflog line, and the worktree's `.git` file. The caller holds
 * the repository's turn. Null, with nothing left behind, whenever it cannot be sure to make what
 * git makes — a repository that is not plain (index-commit.ts), one that keeps no reflogs by
 * default or writes relative worktree paths, a name git would rewrite, a folder already there, a
 * branch that exists (loose or packed) or clashes with one — and the caller runs git.
 */
export function addWorktreeFiles(
  commonDir: string,
  dir: string,
  branch: string,
  base: string,
  who: CommitIdentity,
  at = new Date(),
): { gitDir: string } | null {
  const config = readTextOrNull(path.join(commonDir, 'config'));
  if (
    config === null ||
    !isPlainRepository(commonDir) ||
    /relativepaths|^\s*bare\s*=\s*true/im.test(config) ||
    existsSync(path.join(commonDir, 'reftable'))
  )
    return null;
  // a branch's reflog is written (git's default, and what `git init` writes), not left out
  if (
    [...config.matchAll(/^\s*logallrefupdates\s*(?:=\s*(\S*))?/gim)].some((m) => !/^(?:true|always)$/i.test(m[1] ?? ''))
  )
    return null;
  const name = path.basename(dir);
  if (
    !/^[0-9a-f]{40}$/.test(base) ||
    !branch.split('/').every((c) => PLAIN_COMPONENT.test(c)) ||
    !PLAIN_COMPONENT.test(name) ||
    existsSync(dir)
  )
    return null;
  const ref = `refs/heads/${branch}`;
  if (packedClash(commonDir, ref) || registered(commonDir, dir)) return null;
  const refFile = path.join(commonDir, ...ref.split('/'));
  const made: string[] = [];
  try {
    mkdirSync(path.dirname(refFile), { recursive: true });
    if (!updateLooseRef(refFile, null, base)) return null;
    made.push(refFile);
    const branchLog = path.join(commonDir, 'logs', ...ref.split('/'));
    mkdirSync(path.dirname(branchLog), { recursive: true });
    // a log left by an earlier branch of that name is added to, as git does, and kept if this fails
    if (!existsSync(branchLog)) made.push(branchLog);
    appendFileSync(branchLog, `${ZERO} ${base} ${personAt(who, at)}\tbranch: Created from ${base}\n`);

    const admin = adminFolder(realpathSync(commonDir), name);
    made.push(admin);
    writeFileSync(path.join(admin, 'locked'), 'initializing\n');
    mkdirSync(dir, { recursive: true });
    made.push(dir);
    const top = realpathSync(dir);
    writeFileSync(path.join(top, '.git'), `gitdir: ${admin}\n`);
    writeFileSync(path.join(admin, 'gitdir'), `${path.join(top, '.git')}\n`);
    writeFileSync(path.join(admin, 'commondir'), '../..\n');
    writeFileSync(path.join(admin, 'HEAD'), `ref: ${ref}\n`);
    mkdirSync(path.join(admin, 'logs'));
    writeFileSync(path.join(admin, 'logs', 'HEAD'), `${ZERO} ${base} ${personAt(who, at)}\n`);
    rmSync(path.join(admin, 'locked'));
    return { gitDir: admin };
  } catch {
    // undone, newest first: git makes it all again
    for (const p of made.reverse()) rmSync(p, { recursive: true, force: true });
    return null;
  }
}

/** `worktrees/<name>` made (not there before), or `<name>1`, `<name>2`… when taken: git's own choice. */
function adminFolder(commonDir: string, name: string): string {
  const worktrees = path.join(commonDir, 'worktrees');
  mkdirSync(worktrees, { recursive: true });
  for (let counter = 0; ; counter++) {
    const candidate = path.join(worktrees, counter === 0 ? name : `${name}${counter}`);
    try {
      mkdirSync(candidate);
      return candidate;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || counter > 10_000) throw err;
    }
  }
}

/** Whether a worktree at `dir` is registered already (a folder removed without a prune): git refuses it without `-f`. */
function registered(commonDir: string, dir: string): boolean {
  const dotGit = path.join(path.resolve(dir), '.git');
  let names: string[];
  try {
    names = readdirSync(path.join(commonDir, 'worktrees'));
  } catch {
    return false;
  }
  return names.some((n) => readTextOrNull(path.join(commonDir, 'worktrees', n, 'gitdir'))?.trim() === dotGit);
}

/** Whether `packed-refs` holds the ref, a ref it would have to be a folder of, or one below it (git refuses those). */
function packedClash(commonDir: string, ref: string): boolean {
  for (const line of (readTextOrNull(path.join(commonDir, 'packed-refs')) ?? '').split('\n')) {
    const name = line.startsWith('#') || line.startsWith('^') ? undefined : line.split(' ')[1];
    if (name !== undefined && (name === ref || ref.startsWith(`${name}/`) || name.startsWith(`${ref}/`))) return true;
  }
  return false;
}
