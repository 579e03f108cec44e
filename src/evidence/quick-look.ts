import { lstatSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { runGit, splitNul, type GitCallOptions } from './git.js';
import { excludeArgs, findRepoTop } from './listing.js';
import { normalizeRelPath } from './paths.js';
import { foldersOf } from './special-files.js';
import type { WarmState } from './warm-state.js';

/**
 * Up to this many paths, a re-checkpoint asks git once (changed, deleted and new files from the
 * shadow index): starting a process costs more than the walk. Above it, the listing and the
 * stat check run as two processes in parallel, which is faster on a big tree.
 */
export const QUICK_LOOK_MAX_PATHS = 10_000;

/** What decides a workspace's path set besides its files (see `pathSetRules`). */
export interface PathSetRules {
  /** Equal keys: the same rules. */
  key: string;
  /** The always-included paths that exist (files). */
  extras: string[];
}

/**
 * Everything besides the files themselves that decides a workspace's path set: the enclosing
 * repository's index, info/exclude and config (by stat), and the always-included paths. Null
 * when the set cannot be derived from the shadow index alone: the workspace is below its
 * repository's top (ignore files above it apply), the repository is a worktree or submodule,
 * its config names an excludes file, or an always-included path is a folder.
 */
export function pathSetRules(workspace: string, alwaysInclude: string[]): PathSetRules | null {
  const parts: string[] = [];
  const extras: string[] = [];
  const top = findRepoTop(workspace);
  if (top !== null) {
    const dotGit = path.join(top, '.git');
    if (top !== workspace || statSync(dotGit, { throwIfNoEntry: false })?.isDirectory() !== true) return null;
    let config: string;
    try {
      config = readFileSync(path.join(dotGit, 'config'), 'utf8');
    } catch {
      return null;
    }
    if (/excludesfile/i.test(config)) return null;
    for (const file of ['index', 'info/exclude', 'config']) parts.push(`${file}=${signature(path.join(dotGit, file))}`);
  }
  for (const raw of alwaysInclude) {
    const rel = normalizeRelPath(raw);
    if (rel === null) continue;
    const st = lstatSync(path.join(workspace, rel), { throwIfNoEntry: false });
    if (st?.isDirectory() === true) return null;
    if (st !== undefined) extras.push(rel);
  }
  return { key: [...parts, ...extras].join('\0'), extras };
}

function signature(file: string): string {
  const st = statSync(file, { throwIfNoEntry: false, bigint: true });
  return st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** The path set and stat-dirty paths of a re-checkpoint, learnt from one git call. */
export interface QuickLook {
  wanted: Set<string>;
  dirty: Set<string>;
  /** The folders holding the wanted paths. */
  folders: Set<string>;
  /** They are the warm checkpoint's folders (no new path in a new folder). */
  sameFolders: boolean;
}

/**
 * One `ls-files -t -m -d -o` over the shadow index: modified and deleted indexed files, and the
 * files not in it that the ignore rules let through. While the rules are the warm checkpoint's
 * (the caller compared `rules.key`; no `.gitignore` among the changes, no nested repository), the
 * path set is the last one minus what was deleted plus what is new. Null when that does not hold
 * (or git fails): the caller lists the workspace in full.
 */
export async function quickLook(
  workspace: string,
  base: string[],
  opts: GitCallOptions,
  warm: WarmState,
  rules: PathSetRules,
  skipAbs: string[],
): Promise<QuickLook | null> {
  const top = findRepoTop(workspace);
  const excludesFile = top === null ? '/dev/null' : path.join(top, '.git', 'info', 'exclude');
  const args = [
    ...base,
    '-c', `core.excludesFile=${excludesFile}`,
    '-c', 'core.quotePath=false',
    'ls-files', '-z', '-t', '-m', '-d', '-o', '--exclude-standard',
    ...excludeArgs(workspace, skipAbs),
  ];
  const result = await runGit(args, opts);
  if (result.exitCode !== 0) return null;
  const dirty = new Set<string>();
  const deleted: string[] = [];
  const added: string[] = [];
  for (const entry of splitNul(result.stdout)) {
    const tag = entry.charAt(0);
    const p = entry.slice(2);
    // a nested repository (`dir/`) or a changed ignore file: the rules may differ now
    if (p.endsWith('/') || p === '.gitignore' || p.endsWith('/.gitignore')) return null;
    if (tag === '?') added.push(p);
    else {
      dirty.add(p);
      if (tag === 'R') deleted.push(p);
    }
  }
  const wanted = new Set(warm.wanted);
  // paths the index does not hold come back as new when they are still there and not ignored
  for (const p of warm.outside) wanted.delete(p);
  for (const p of deleted) wanted.delete(p);
  let sameFolders = true;
  for (const p of added) {
    wanted.add(p);
    const slash = p.lastIndexOf('/');
    if (slash > 0 && !warm.folders.has(p.slice(0, slash))) sameFolders = false;
  }
  for (const p of rules.extras) wanted.add(p);
  return { wanted, dirty, folders: sameFolders ? warm.folders : foldersOf(wanted), sameFolders };
}
