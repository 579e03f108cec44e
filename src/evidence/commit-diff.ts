import { GafferError } from '../domain/errors.js';
import { diffSides, type Side } from './file-diff.js';
import { DEFAULT_GIT_TIMEOUT_MS, describeGitFailure, runGit } from './git.js';
import { normalizeRelPath } from './paths.js';
import { DEFAULT_SIZE_CAP_BYTES } from './snapshot.js';

/** One path's entry in a commit's tree, as `git ls-tree -l` lists it. */
interface TreeEntry {
  mode: string;
  type: string;
  object: string;
  size: number;
}

/**
 * The unified diff of one path (relative to `cwd`, a folder of a repository) between two commits —
 * a worktree task's branch against its job's base. Read as the checkpoint diff is (fileDiff): each
 * side's blob taken by its object id (`ls-tree`, `cat-file blob`: no attribute, filter or textconv
 * applies) and compared by `git diff --no-index` outside the repository, so nothing in its config
 * or `.gitattributes` (a worker wrote them) chooses a program; a side over the size cap is a size
 * line, a binary one a size line. "" when the path did not change.
 */
export async function diffPathBetweenCommits(cwd: string, from: string, to: string, rawPath: string): Promise<string> {
  const rel = normalizeRelPath(rawPath);
  if (rel === null)
    throw new GafferError(
      'invalid_request',
      `path must be inside the workspace, got ${JSON.stringify(rawPath)}`,
      'path',
    );
  const [a, b] = await Promise.all([entryAt(cwd, from, rel), entryAt(cwd, to, rel)]);
  if (a?.mode === b?.mode && a?.object === b?.object) return '';
  const [sideA, sideB] = await Promise.all([sideOf(cwd, a, 0), sideOf(cwd, b, 1)]);
  return diffSides(rel, sideA, sideB, 'over the size cap');
}

async function entryAt(cwd: string, commit: string, rel: string): Promise<TreeEntry | null> {
  // --literal-pathspecs: a path of `*` or `:(glob)` names itself; `./`: from `cwd`, whatever folder of the repository it is
  const args = ['--literal-pathspecs', 'ls-tree', '-l', '-z', commit, '--', `./${rel}`];
  const result = await runGit(args, { cwd, timeoutMs: DEFAULT_GIT_TIMEOUT_MS });
  if (result.exitCode !== 0)
    throw new GafferError(
      'conflict',
      `cannot read commit ${commit.slice(0, 12)} in ${cwd}: ${describeGitFailure(args, result)}`,
    );
  const m = /^(\d{6}) (\w+) ([0-9a-f]+) +(\d+|-)\t/.exec(result.stdout.toString('utf8').split('\0')[0] ?? '');
  if (m === null || m[2] === 'tree') return null;
  return { mode: m[1] as string, type: m[2] as string, object: m[3] as string, size: Number(m[4] === '-' ? 0 : m[4]) };
}

async function sideOf(cwd: string, entry: TreeEntry | null, index: number): Promise<Side> {
  if (entry === null) return null;
  // a submodule is shown as git shows it: the commit it points at
  if (entry.type === 'commit') return { mode: entry.mode, content: Buffer.from(`Subproject commit ${entry.object}\n`) };
  if (entry.size > DEFAULT_SIZE_CAP_BYTES) {
    // known by size alone; `ino` tells the two sides apart, which differ (their object ids did)
    return {
      facts: {
        kind: entry.mode === '120000' ? 'symlink' : 'file',
        size: entry.size,
        mtimeMs: 0,
        ino: index,
        mode: parseInt(entry.mode, 8),
      },
    };
  }
  const args = ['cat-file', 'blob', entry.object];
  const result = await runGit(args, { cwd, timeoutMs: DEFAULT_GIT_TIMEOUT_MS });
  if (result.exitCode !== 0)
    throw new GafferError(
      'conflict',
      `cannot read object ${entry.object.slice(0, 12)} in ${cwd}: ${describeGitFailure(args, result)}`,
    );
  return { mode: entry.mode, content: result.stdout };
}
