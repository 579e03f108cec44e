import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runGit } from './git.js';
import { findRepoTop } from './listing.js';
import type { GitFacts } from '../domain/changes.js';

const FACTS_TIMEOUT_MS = 30_000;

/** Up to this many changed tracked paths, `diff --shortstat` is asked about those paths only (each is a pathspec). */
export const gitFactsLimits = { pathspecMax: 500, pathspecBytes: 64 << 10 };

/**
 * `git status`-ish facts of the user's own repository, scoped to the workspace: how many paths
 * `git status --porcelain` lists and `git diff --shortstat HEAD`. Undefined outside a repository.
 * Never writes to the user's `.git`: even with `--no-optional-locks` `git diff` refreshes the
 * index, so both commands run on a throwaway copy of it.
 *
 * A tracked path `diff HEAD` shows is one `status` lists (it differs from HEAD in the index or the
 * worktree), so the diff is asked about the tracked paths status listed, not the whole tree: its
 * own pass over every file costs as much as status's (~0.5 s at 250,000 files), and none is needed
 * when status lists no tracked path.
 */
export async function readGitFacts(workspace: string): Promise<GitFacts | undefined> {
  const cwd = path.resolve(workspace);
  // no `.git` at or above it: not in a repository, and no git process to learn that
  const top = findRepoTop(cwd);
  if (top === null) return undefined;
  const probe = await runGit(['rev-parse', '--is-inside-work-tree', '--git-path', 'index'], {
    cwd,
    timeoutMs: FACTS_TIMEOUT_MS,
  });
  const [inside, indexPath] = probe.stdout.toString('utf8').split('\n');
  if (probe.exitCode !== 0 || inside !== 'true' || indexPath === undefined || indexPath === '') return undefined;

  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gaffer-facts-'));
  try {
    const indexCopy = path.join(tmp, 'index');
    await fs.copyFile(path.resolve(cwd, indexPath), indexCopy).catch(() => undefined);
    const opts = { cwd, timeoutMs: FACTS_TIMEOUT_MS, env: { GIT_INDEX_FILE: indexCopy } };
    const common = ['--no-optional-locks', '-c', 'core.fsmonitor=false', '-c', 'core.quotePath=false'];
    const status = await runGit([...common, 'status', '--porcelain', '-z', '--', '.'], opts);
    if (status.exitCode !== 0) return undefined;
    const text = status.stdout.toString('utf8');
    const { count, tracked } = statusEntries(text);
    // an unborn HEAD (no commit yet) has no shortstat
    const shortstatOf = async (args: string[], at: string, paths: string[]): Promise<string> => {
      const diff = await runGit(
        [...args, 'diff', '--shortstat', '--no-ext-diff', '--no-textconv', 'HEAD', '--', ...paths],
        { ...opts, cwd: at },
      );
      return diff.exitCode === 0 ? diff.stdout.toString('utf8').trim() : '';
    };
    // a name that is not UTF-8 cannot be given back as the bytes it is: the whole tree is asked
    const few =
      !text.includes('\uFFFD') &&
      tracked.length <= gitFactsLimits.pathspecMax &&
      tracked.reduce((sum, p) => sum + p.length, 0) <= gitFactsLimits.pathspecBytes;
    const shortstat =
      tracked.length === 0
        ? ''
        : few
          ? // status names paths from the repository's top: each is a literal pathspec there
            await shortstatOf(['--literal-pathspecs', ...common], top, tracked)
          : await shortstatOf(common, cwd, ['.']);
    return { repo: true, dirty_count: count, shortstat };
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

/** `status --porcelain -z`: its entries (what the plain form prints as lines) and the tracked paths among them, a rename's both. */
function statusEntries(out: string): { count: number; tracked: string[] } {
  const fields = out.split('\0');
  const tracked: string[] = [];
  let count = 0;
  for (let i = 0; i < fields.length; i++) {
    const entry = fields[i] as string;
    if (entry.length < 4) continue;
    count++;
    const xy = entry.slice(0, 2);
    if (xy === '??' || xy === '!!') continue;
    tracked.push(entry.slice(3));
    // `R`/`C`: the source path follows as a field of its own
    if (xy[0] === 'R' || xy[0] === 'C') tracked.push(fields[++i] ?? '');
  }
  return { count, tracked };
}
