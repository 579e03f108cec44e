import { lstatSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runGit, type GitCallOptions, type GitResult } from './git.js';
import { excludePatterns } from './listing.js';
import { isInExcludedDir, relativeInside } from './paths.js';
import { readTextOrNull } from './read-text.js';

/**
 * The quick look of a big tree as one `git status` in the shadow repository, with git's
 * untracked cache: the stat check of every indexed file and, for the files not in the index, a
 * stat of each folder instead of reading it (a folder is read again only when its own stat
 * changed — a new, renamed or removed entry changes its mtime and ctime, and no one but the
 * kernel sets a ctime). `ls-files -o` cannot use the cache (only `status` reads it), and `status`
 * needs a `HEAD`: the shadow's is pointed at the warm checkpoint, whose tree the index holds, for
 * the call only.
 *
 * What `status` cannot do is put spec 03's rules above the workspace's `.gitignore` files:
 * command-line excludes turn the untracked cache off, so they go in an exclude file, below every
 * `.gitignore` in git's precedence. Two differences follow, and both are taken back here:
 * - a `.gitignore` can re-include an excluded folder (`!node_modules/`): what `status` names in
 *   one is dropped (`keepsPath`);
 * - a `.gitignore` can ignore a `.gitignore` (itself: `*`), which `status` then never names. Such
 *   a file is new only in a folder git had not seen (a new cache node) or one whose ignore file
 *   changed (an invalidated one); git counts both (trace2's `read_directory` statistics), and when
 *   either is not zero — or git used no cache — the caller asks `ls-files -o` for the new files.
 */

/** What one status look said. */
export interface StatusLook {
  result: GitResult;
  /**
   * `held`: git walked from its untracked cache and met no folder it had not seen, no changed
   * ignore file; `changed`: it met one; `unused`: it used no cache (a git before 2.35 cannot with
   * `-uall`, or the cache is off on this system) — the look then costs more than it saves.
   */
  cache: 'held' | 'changed' | 'unused';
}

/** Shadow repositories whose git used no untracked cache: the two-process look is theirs (quick-look.ts). */
const cacheUnused = new Set<string>();

/** Whether the status look is worth making in this shadow repository. */
export function statusLookUsable(gitDir: string): boolean {
  return !cacheUnused.has(gitDir);
}

/** The exclude file the status look runs with: the repository's `info/exclude`, then spec 03's rules (last wins). */
export function statusExcludesFile(gitDir: string): string {
  return path.join(gitDir, 'gaffer-status-exclude');
}

/**
 * Writes the status look's exclude file (when its text changed) and returns its path; null when
 * the look cannot be made like `ls-files -o`'s: the repository's exclude file is not a small
 * regular file (git follows a link; `ls-files` is then left to read it), or a rule cannot be a
 * line of an ignore file.
 */
export function prepareStatusExcludes(
  gitDir: string,
  workspace: string,
  repoExcludes: string,
  skipAbs: string[],
): string | null {
  const patterns = excludePatterns(workspace, skipAbs);
  if (patterns.some((p) => p.includes('\n') || p.includes('\r'))) return null;
  let repoText = '';
  if (repoExcludes !== '/dev/null') {
    let present: boolean;
    try {
      present = lstatSync(repoExcludes, { throwIfNoEntry: false }) !== undefined;
    } catch {
      // a file where a folder on its way was (`.git/info` a file): left to ls-files
      return null;
    }
    const text = present ? readTextOrNull(repoExcludes) : '';
    if (text === null) return null;
    repoText = text;
  }
  const text = `${repoText}\n${patterns.join('\n')}\n`;
  const file = statusExcludesFile(gitDir);
  if (readTextOrNull(file) !== text) writeFileSync(file, text);
  return file;
}

/** The paths under spec 03's excluded folders or gaffer's skipped ones, which `ls-files -o` never names. */
export function keepsPath(workspace: string, skipAbs: string[]): (rel: string) => boolean {
  const skipped = skipAbs.map((abs) => relativeInside(workspace, abs)).filter((rel) => rel !== null);
  return (rel) => !isInExcludedDir(rel) && !skipped.some((dir) => rel.startsWith(`${dir}/`));
}

/**
 * `git status` of the workspace against the shadow index, `HEAD` the warm checkpoint's `commit`
 * (restored after). It may write the index (its stat refresh and untracked cache): the caller
 * notes the index's new signature.
 */
export async function statusLook(
  gitDir: string,
  base: string[],
  opts: GitCallOptions,
  commit: string,
  excludesFile: string,
): Promise<StatusLook> {
  const head = path.join(gitDir, 'HEAD');
  const before = readTextOrNull(head) ?? 'ref: refs/heads/main\n';
  writeFileSync(head, `${commit}\n`);
  let result: GitResult;
  try {
    result = await runGit(
      [
        ...base,
        '-c',
        `core.excludesFile=${excludesFile}`,
        '-c',
        'core.quotePath=false',
        '-c',
        'core.untrackedCache=true',
        // the cache keeps the flags of the walk it was made by: `-uall` needs the same in config
        '-c',
        'status.showUntrackedFiles=all',
        'status',
        '--porcelain=v2',
        '-z',
        '--untracked-files=all',
        '--no-renames',
        '--ignore-submodules=all',
      ],
      {
        ...opts,
        // the index is written (the cache kept) only with optional locks; trace2 on stderr says whether the cache held
        env: { ...opts.env, GIT_OPTIONAL_LOCKS: '1', GIT_TRACE2_EVENT: '2', GIT_TRACE2_EVENT_NESTING: '10' },
      },
    );
  } finally {
    writeFileSync(head, before);
  }
  const cache = cacheOf(result.stderr);
  if (cache === 'unused' && result.exitCode === 0) cacheUnused.add(gitDir);
  return { result, cache };
}

/** trace2's `read_directory` statistics: present only when git walked from its untracked cache. */
export function cacheOf(stderr: string): StatusLook['cache'] {
  const stats = new Map<string, string>();
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{"event":"data"') || !line.includes('"category":"read_directory"')) continue;
    try {
      const event = JSON.parse(line) as { key?: unknown; value?: unknown };
      if (typeof event.key === 'string') stats.set(event.key, String(event.value));
    } catch {
      return 'changed';
    }
  }
  if (!stats.has('node-creation') || !stats.has('gitignore-invalidation')) return 'unused';
  return stats.get('node-creation') === '0' && stats.get('gitignore-invalidation') === '0' ? 'held' : 'changed';
}
