import {
  copyFileSync,
  existsSync,
  promises as fs,
  mkdtempSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeGitFailure, runGit, runGitOk, splitNul, type GitCallOptions } from './git.js';
import { commitIndex, readIndexEntries, writeCommit, writeIndexTree } from './index-commit.js';
import { readTextOrNull } from './read-text.js';
import { addWorktreeFiles } from './worktree-add.js';

/**
 * The git side of worktree isolation (spec 06): the base commit, the worktrees and branches, their
 * commits, merges and the patch that carries a result back. Every call runs with the user's hooks
 * and fsmonitor off (`-c`, which beats the repository's config): gaffer's git work runs no code of
 * the repository's. Calls on one repository are serialized by the caller (`serialized` below).
 */

const TIMEOUT_MS = 120_000;
/** Overrides on every call in the user's repository: no hook, no fsmonitor daemon, no pager. */
const SAFE = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'core.pager=cat'];
/** The identity of gaffer's commits (the user's global config is never read). */
const IDENTITY = {
  GIT_AUTHOR_NAME: 'gaffer',
  GIT_AUTHOR_EMAIL: 'gaffer@localhost',
  GIT_COMMITTER_NAME: 'gaffer',
  GIT_COMMITTER_EMAIL: 'gaffer@localhost',
};

const call = (cwd: string, env?: Record<string, string>): GitCallOptions => ({
  cwd,
  timeoutMs: TIMEOUT_MS,
  ...(env ? { env } : {}),
});
const git = async (cwd: string, args: string[], env?: Record<string, string>): Promise<string> =>
  (await runGitOk([...SAFE, ...args], call(cwd, env))).toString('utf8').trim();

/** Where a workspace sits in its repository. */
export interface RepoFacts {
  /** The repository's top folder. */
  top: string;
  /** The workspace relative to it ('' at the top). */
  prefix: string;
  /** The shared git dir (for serializing calls on one repository). */
  commonDir: string;
  /** The user's index file (absolute; it may not exist yet). */
  index: string;
  head: string;
}

/** The workspace's repository, or why worktree isolation cannot use it (spec 06: not a repository, or no commit yet). One git call. */
export async function readRepo(workspace: string): Promise<RepoFacts | { refused: string }> {
  const args = [
    'rev-parse',
    '--show-toplevel',
    '--show-prefix',
    '--git-common-dir',
    '--path-format=absolute',
    '--git-path',
    'index',
    '--verify',
    '--quiet',
    'HEAD^{commit}',
  ];
  const facts = await runGit([...SAFE, ...args], call(workspace));
  const [top = '', prefix = '', common = '', index = '', head = ''] = facts.stdout.toString('utf8').split('\n');
  if (index === '')
    return { refused: 'is not inside a git repository — run `git init` and commit, or use isolation "shared"' };
  if (facts.exitCode !== 0 || head === '')
    return { refused: 'is a git repository with no commit yet — commit once, or use isolation "shared"' };
  return { top, prefix: prefix.replace(/\/$/, ''), commonDir: path.resolve(workspace, common), index, head };
}

/** The commit a job's worktrees start from. */
export interface BaseCommit {
  commit: string;
  /** Its tree, when known (the base commit made here: its worktrees' checked-out indexes hold it). */
  tree?: string;
}

/**
 * A commit holding HEAD plus the working tree's uncommitted changes — tracked edits, deletions and
 * untracked files that are not ignored — made through a private index with `commit-tree` (no hook
 * runs, the user's index and branches are untouched). Its parent is HEAD.
 */
export async function commitWorkingTree(repo: RepoFacts, message: string): Promise<BaseCommit> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gaffer-base-'));
  const index = path.join(dir, 'index');
  const env = { ...IDENTITY, GIT_INDEX_FILE: index };
  try {
    // the user's index as the start: its stat cache spares hashing what did not change (a copy: theirs is never written)
    if (existsSync(repo.index)) copyFileSync(repo.index, index);
    else await git(repo.top, ['read-tree', repo.head], env);
    await git(repo.top, ['add', '-A', '--', '.'], env);
    // the tree written here when HEAD's is laid out (the last base, most jobs): a process fewer before the first worktree
    const tree = writeIndexTree(repo.commonDir, index, repo.head) ?? (await git(repo.top, ['write-tree'], env));
    // the bytes commit-tree writes, without its process where the repository is plain (index-commit.ts)
    const commit = writeCommit(repo.commonDir, tree, repo.head, message, {
      name: IDENTITY.GIT_COMMITTER_NAME,
      email: IDENTITY.GIT_COMMITTER_EMAIL,
    });
    return {
      commit: commit ?? (await git(repo.top, ['commit-tree', tree, '-p', repo.head, '-m', message], env)),
      tree,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `git worktree add --no-checkout -b <branch> <dir> <base>`: the repository-wide part of making a
 * worktree (its administrative folder, its branch), the part calls on one repository must take
 * turns for. `checkOutWorktree` fills it.
 */
export async function addWorktree(repo: RepoFacts, dir: string, branch: string, base: string): Promise<WorktreeGit> {
  // the files git would write, written here where the repository is plain (worktree-add.ts): three processes fewer a task
  const written = addWorktreeFiles(repo.commonDir, dir, branch, base, {
    name: IDENTITY.GIT_COMMITTER_NAME,
    email: IDENTITY.GIT_COMMITTER_EMAIL,
  });
  if (written !== null) return { dir, gitDir: written.gitDir, commonDir: repo.commonDir };
  await git(repo.top, ['worktree', 'add', '--quiet', '--no-checkout', '-b', branch, dir, base], IDENTITY);
  // read now, before any worker could rewrite the `.git` file that names it
  const pointer = readFileSync(path.join(dir, '.git'), 'utf8').match(/^gitdir: (.+)$/m);
  if (!pointer?.[1]) throw new Error(`${dir}/.git does not name its git dir`);
  return { dir, gitDir: path.resolve(dir, pointer[1].trim()), commonDir: repo.commonDir };
}

/**
 * A worktree as gaffer made it: its folder and its administrative folder, read when it was made.
 * gaffer's later calls in it name both (`--git-dir`, `--work-tree`) and never follow the folder's
 * `.git` file, which a worker can rewrite — say, to point gaffer's reset at the user's own checkout.
 */
export interface WorktreeGit {
  dir: string;
  gitDir: string;
  /** The repository's common git dir (its refs), as read before any worker ran. */
  commonDir: string;
}

const pinned = (wt: WorktreeGit, args: string[]): string[] => [
  `--git-dir=${wt.gitDir}`,
  `--work-tree=${wt.dir}`,
  ...args,
];

/**
 * Checks out a new worktree's HEAD into it and its index (what `worktree add` does itself, here
 * outside the repository's turn: it touches that worktree alone), then keeps a copy of that index
 * at `indexCopy`: the base with fresh stat data, the start of the task's commit and of its shadow
 * index (seed-index.ts). The copy keeps the index's mtime, which racy git reads entries against.
 */
export async function checkOutWorktree(wt: WorktreeGit, indexCopy: string): Promise<void> {
  // a split index would need its shared part beside the copy
  await git(
    wt.dir,
    pinned(wt, ['-c', 'core.splitIndex=false', 'reset', '--hard', '--quiet', '--no-recurse-submodules']),
  );
  const index = path.join(wt.gitDir, 'index');
  copyFileSync(index, indexCopy);
  const { atime, mtime } = statSync(index);
  utimesSync(indexCopy, atime, mtime);
}

/**
 * Puts a task's result on its branch: the base plus the given paths (top-relative, changed or
 * deleted) as the worktree holds them — nothing else. The worktree is first put back on its branch,
 * the branch at the base and the index at the base's (its copy as checked out when there is one),
 * so a commit the worker made itself (say, of a file it then deleted: content the evidence never
 * saw) or anything it staged is not on the branch and cannot be merged; then the paths are added
 * (`git add`: the repository's own attributes and filters apply) and the index committed — by
 * index-commit.ts when index and repository are plain, else `git commit` (no hook, no signing, no
 * maintenance). Returns the new tip, or null when nothing differs from the base (the branch is then at it).
 */
export async function commitWorktree(
  wt: WorktreeGit,
  branch: string,
  base: { commit: string; index: string | null },
  message: string,
  paths: readonly string[],
): Promise<string | null> {
  const { dir } = wt;
  const ref = `refs/heads/${branch}`;
  if (readTextOrNull(path.join(wt.gitDir, 'HEAD'))?.trim() !== `ref: ${ref}`)
    await git(dir, pinned(wt, ['symbolic-ref', 'HEAD', ref]));
  if (looseRef(wt, ref) === base.commit && base.index !== null && existsSync(base.index))
    copyFileSync(base.index, path.join(wt.gitDir, 'index'));
  else await git(dir, pinned(wt, ['reset', '-q', '--mixed', base.commit]));
  if (paths.length === 0) return null;
  const env = { ...IDENTITY, GIT_LITERAL_PATHSPECS: '1' };
  // -f: a path the worker's own ignore rules hide is on the branch all the same (the checkpoint's rules listed it, issue 32)
  const added = await runGit(
    [...SAFE, ...pinned(wt, ['add', '-A', '-f', '--pathspec-from-file=-', '--pathspec-file-nul'])],
    { ...call(dir, env), input: `${paths.join('\0')}\0` },
  );
  if (added.exitCode !== 0) throw new Error(`git add in ${dir}: ${added.stderr.trim()}`);
  // what git commit would write, written here when the index and the repository are plain (index-commit.ts): a process fewer per task
  const written = commitIndex(wt, ref, base.commit, message, {
    name: IDENTITY.GIT_COMMITTER_NAME,
    email: IDENTITY.GIT_COMMITTER_EMAIL,
  });
  if (written === 'unchanged') return null;
  if (written !== null) return written.commit;
  const commit = [
    ...SAFE,
    '-c',
    'maintenance.auto=false',
    '-c',
    'gc.auto=0',
    ...pinned(wt, ['commit', '-q', '--no-verify', '--no-gpg-sign', '--cleanup=verbatim', '-m', message]),
  ];
  const committed = await runGit(commit, call(dir, IDENTITY));
  if (committed.exitCode !== 0) {
    // the paths hold what the base did (a change undone): nothing to commit
    const same = await runGit([...SAFE, ...pinned(wt, ['diff', '--cached', '--quiet', base.commit])], call(dir));
    if (same.exitCode === 0) return null;
    throw new Error(`git commit in ${dir}: ${describeGitFailure(commit, committed)}`);
  }
  return looseRef(wt, ref) ?? (await git(dir, pinned(wt, ['rev-parse', '--verify', ref])));
}

/** A branch's commit as its loose ref file says (git's `files` storage), else null: git is asked. */
function looseRef(wt: WorktreeGit, ref: string): string | null {
  const id = readTextOrNull(path.join(wt.commonDir, ...ref.split('/')))?.trim() ?? '';
  return /^[0-9a-f]{40,64}$/.test(id) ? id : null;
}

/** Removes a worktree without `--force`: git's refusal (modified or untracked files left) comes back as the reason. */
export async function removeWorktree(repo: RepoFacts, dir: string): Promise<string | null> {
  const result = await runGit([...SAFE, 'worktree', 'remove', dir], call(repo.top));
  return result.exitCode === 0
    ? null
    : result.stderr.trim().split('\n').slice(-2).join(' ') || `exit ${result.exitCode}`;
}

/**
 * What `git worktree remove <dir>` (no `--force`) does, with one process instead of two, and only
 * its last step in the repository's turn (`turn`): the worktree's own `git status --porcelain
 * --ignore-submodules=none` must say nothing (else git's refusal, in git's words), then its folder
 * is removed, then — in the turn — its administrative folder. Named by the folders gaffer read when
 * it made the worktree, never by the `.git` file a worker can rewrite. A locked worktree, or one
 * with a submodule (a gitlink in its index, its own modules), and any index this process cannot
 * read plainly, go to `git worktree remove` in the turn as before.
 */
export async function removeTaskWorktreeGit(
  repo: RepoFacts,
  wt: WorktreeGit,
  turn: <T>(fn: () => Promise<T>) => Promise<T>,
): Promise<string | null> {
  const entries = readIndexEntries(path.join(wt.gitDir, 'index'));
  const plain =
    entries !== null &&
    !entries.some((e) => e.mode === 0o160000) &&
    !['locked', 'modules'].some((f) => existsSync(path.join(wt.gitDir, f)));
  if (!plain) return turn(() => removeWorktree(repo, wt.dir));
  const status = await runGit(
    [...SAFE, ...pinned(wt, ['status', '--porcelain', '--ignore-submodules=none'])],
    call(wt.dir),
  );
  if (status.exitCode !== 0) return turn(() => removeWorktree(repo, wt.dir));
  if (status.stdout.length > 0)
    return `fatal: '${wt.dir}' contains modified or untracked files, use --force to delete it`;
  try {
    await fs.rm(wt.dir, { recursive: true, force: true });
  } catch (err) {
    return `could not remove ${wt.dir}: ${err instanceof Error ? err.message : String(err)}`;
  }
  return turn(async () => {
    rmSync(wt.gitDir, { recursive: true, force: true });
    try {
      // the last worktree gone: git removes the folder that held them
      rmdirSync(path.dirname(wt.gitDir));
    } catch {
      // others still there
    }
    return null;
  });
}

/** The paths one commit changed against another (renames as delete + add). */
export async function changedPaths(cwd: string, from: string, to: string): Promise<string[]> {
  return splitNul(await runGitOk([...SAFE, 'diff', '--name-only', '--no-renames', '-z', from, to, '--'], call(cwd)));
}

/** Merges a branch into the worktree at `dir`: the new tip, or the conflicting paths (the merge undone). */
export async function mergeInto(
  dir: string,
  branch: string,
  message: string,
): Promise<{ merged: string } | { conflicts: string[]; reason: string }> {
  const merged = await runGit([...SAFE, 'merge', '--no-ff', '--no-edit', '-m', message, branch], call(dir, IDENTITY));
  if (merged.exitCode === 0) return { merged: await git(dir, ['rev-parse', 'HEAD']) };
  const conflicts = splitNul(await runGitOk([...SAFE, 'diff', '--name-only', '--diff-filter=U', '-z'], call(dir)));
  await runGit([...SAFE, 'merge', '--abort'], call(dir));
  const reason = merged.stdout.toString('utf8').concat(merged.stderr).trim().split('\n').slice(-2).join(' ');
  return { conflicts, reason };
}

/**
 * Applies the change `from..to` to a working tree (not its index): `git apply --check` first, so a
 * patch that does not apply cleanly changes nothing. Null when applied, else git's reason.
 */
export async function applyToWorkingTree(repo: RepoFacts, from: string, to: string): Promise<string | null> {
  const patch = await runGitOk([...SAFE, 'diff', '--binary', '--no-renames', from, to, '--'], call(repo.top));
  if (patch.length === 0) return null;
  for (const args of [['apply', '--check'], ['apply']]) {
    const result = await runGit([...SAFE, ...args, '--whitespace=nowarn', '-'], { ...call(repo.top), input: patch });
    if (result.exitCode !== 0)
      return result.stderr.trim().split('\n').slice(0, 3).join(' ') || `git apply exit ${result.exitCode}`;
  }
  return null;
}

/** Deletes a branch that is gaffer's; `-d` (merged only) unless `force`. Null when deleted, else git's reason. */
export async function deleteBranch(repo: RepoFacts, branch: string, force: boolean): Promise<string | null> {
  const result = await runGit([...SAFE, 'branch', force ? '-D' : '-d', branch], call(repo.top));
  return result.exitCode === 0 ? null : result.stderr.trim();
}

/** Whether `commit` is an ancestor of `of`. */
export async function isAncestor(cwd: string, commit: string, of: string): Promise<boolean> {
  return (await runGit([...SAFE, 'merge-base', '--is-ancestor', commit, of], call(cwd))).exitCode === 0;
}

/** A branch's tip, or null when there is no such branch. */
export async function branchTip(cwd: string, branch: string): Promise<string | null> {
  const r = await runGit([...SAFE, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], call(cwd));
  return r.exitCode === 0 ? r.stdout.toString('utf8').trim() : null;
}

/** A file's content in a commit, `rel` relative to `cwd` (a folder of the repository); null when the commit has no such file. */
export async function readAtCommit(cwd: string, commit: string, rel: string): Promise<Buffer | null> {
  const r = await runGit([...SAFE, 'cat-file', 'blob', `${commit}:./${rel}`], call(cwd));
  return r.exitCode === 0 ? r.stdout : null;
}

/** The unified diff of one path (relative to `cwd`) between two commits, its paths relative to `cwd`; "" when it did not change. */
export async function commitFileDiff(cwd: string, from: string, to: string, rel: string): Promise<string> {
  const args = [
    ...SAFE,
    '--literal-pathspecs',
    'diff',
    '--no-color',
    '--no-ext-diff',
    '--no-textconv',
    '--no-renames',
    '--relative',
    '--src-prefix=a/',
    '--dst-prefix=b/',
    '-U3',
    from,
    to,
    '--',
    rel,
  ];
  return (await runGitOk(args, call(cwd))).toString('utf8');
}

/** gaffer's branches (`gaffer/…`) with their tips. */
export async function listGafferBranches(cwd: string): Promise<{ branch: string; commit: string }[]> {
  const out = await git(cwd, ['for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads/gaffer/']);
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [branch = '', commit = ''] = line.split(' ');
      return { branch, commit };
    });
}

/** `git worktree prune`: forgets worktrees whose folders are gone. */
export async function pruneWorktreeRecords(repo: RepoFacts): Promise<void> {
  await git(repo.top, ['worktree', 'prune']);
}

/** A repository lane's calls: the one running, and those waiting in order (the ones that can wait longest last). */
interface Lane {
  running: boolean;
  waiting: { run: () => void; later: boolean }[];
}
const queues = new Map<string, Lane>();
/** The calls running and waiting in each repository's bounded lane (`inTurns`). */
const lanes = new Map<string, { running: number; waiting: (() => void)[] }>();

/**
 * Runs `fn` in a lane of `repo` that lets `width` calls run at once (the others wait their turn, in
 * order): work that touches no shared state but competes for the CPU and the disk (checkouts).
 */
export async function inTurns<T>(
  repo: Pick<RepoFacts, 'commonDir'>,
  lane: string,
  width: number,
  fn: () => Promise<T>,
): Promise<T> {
  const key = `${repo.commonDir}\0${lane}`;
  let state = lanes.get(key);
  if (!state) lanes.set(key, (state = { running: 0, waiting: [] }));
  const turn = state;
  if (turn.running >= Math.max(1, width)) await new Promise<void>((resolve) => turn.waiting.push(resolve));
  else turn.running++;
  try {
    return await fn();
  } finally {
    const next = turn.waiting.shift();
    // the turn passes on as it is (still counted); the last one out forgets the lane
    if (next) next();
    else if (--turn.running === 0) lanes.delete(key);
  }
}

/**
 * Runs `fn` after every earlier call for the same repository in this process (spec 06: git calls on
 * one repository are serialized). A `lane` is a queue of its own on that repository: work that
 * touches no shared state but competes for the disk takes turns without holding up the
 * repository's other calls. A call made with `later` (a passed task's worktree removal: nobody
 * waits for it) lets the calls that others wait for (a new worktree) go first; among themselves,
 * calls keep their order.
 */
export function serialized<T>(
  repo: Pick<RepoFacts, 'commonDir'>,
  fn: () => Promise<T>,
  lane = '',
  opts: { later?: boolean } = {},
): Promise<T> {
  const key = `${repo.commonDir}\0${lane}`;
  let queue = queues.get(key);
  if (!queue) queues.set(key, (queue = { running: false, waiting: [] }));
  const q = queue;
  const later = opts.later === true;
  return new Promise<T>((resolve, reject) => {
    const run = (): void => {
      void Promise.resolve()
        .then(fn)
        .then(resolve, reject)
        .finally(() => {
          q.running = false;
          next(key, q);
        });
    };
    if (later) {
      q.waiting.push({ run, later });
      // not started before this turn of the event loop ends: a call made in it that someone waits for (the next task's worktree, started when this task's work went on its branch) goes first
      setImmediate(() => next(key, q));
      return;
    }
    const at = q.waiting.findIndex((w) => w.later);
    q.waiting.splice(at < 0 ? q.waiting.length : at, 0, { run, later });
    next(key, q);
  });
}

/** Starts a lane's next call when none runs; forgets an empty lane. */
function next(key: string, q: Lane): void {
  if (q.running) return;
  const first = q.waiting.shift();
  if (first) {
    q.running = true;
    first.run();
  } else if (queues.get(key) === q) queues.delete(key);
}
