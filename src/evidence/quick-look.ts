import { createHash } from 'node:crypto';
import { lstatSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { runGit, splitNul, type GitCallOptions, type GitResult } from './git.js';
import { excludeArgs, findRepoTop, unopenedFolders } from './listing.js';
import { normalizeRelPath } from './paths.js';
import { readTextOrNull } from './read-text.js';
import { nameOfPathBytes } from '../domain/escaped-path.js';
import { shadowIndexFile } from './shadow-repo.js';
import { foldersOf } from './special-files.js';
import { keepsPath, prepareStatusExcludes, statusLook, statusLookUsable } from './status-look.js';
import { fileSignature, signatureMtimeMs, type TrackedDigest, type WarmState } from './warm-state.js';

/**
 * Up to this many paths the quick look is one git process (`ls-files -t -m -d -o`); above it, one
 * `git status` with git's untracked cache (status-look.ts) — or, with `statusLook` off or a git
 * that keeps no cache, the walk for new files and the stat check of indexed ones as two processes
 * in parallel (the walk and the stat check then cost more than starting a process).
 */
export const quickLookLimits = { oneProcessMaxPaths: 10_000, statusLook: true };

/** Which way the last quick look of this process went (tests and profiles read it). */
export const lastLook: { via: 'one' | 'two' | 'status' | 'status+others' | null } = { via: null };

/** What decides a workspace's path set besides its files (see `pathSetRules`). */
export interface PathSetRules {
  /** Equal keys: the same rules. */
  key: string;
  /** The always-included paths that exist (files). */
  extras: string[];
  /** The repository's `info/exclude` (`/dev/null` outside a repository). */
  excludesFile: string;
}

/** Where a repository at `top` keeps what decides its path set: its git dir (a worktree's own, named by its `.git` file) and the common one. */
export function adminDirs(top: string): { own: string; common: string } | null {
  const dotGit = path.join(top, '.git');
  const st = lstatSync(dotGit, { throwIfNoEntry: false });
  if (st?.isDirectory() === true) return { own: dotGit, common: dotGit };
  if (st?.isFile() !== true) return null;
  const pointer = readTextOrNull(dotGit)
    ?.match(/^gitdir: (.+)$/m)?.[1]
    ?.trim();
  if (!pointer) return null;
  const own = path.resolve(top, pointer);
  // a worktree's (a submodule's git dir has no `commondir`: its rules are not derived here)
  const commondir = readTextOrNull(path.join(own, 'commondir'));
  return commondir === null ? null : { own, common: path.resolve(own, commondir.trim()) };
}

/**
 * Everything besides the files themselves that decides a workspace's path set: the enclosing
 * repository's index, info/exclude and config (by stat), and the always-included paths (the list
 * asked for: whether one of them exists is a change like any file's — one that appears is among
 * `extras`, one that went is a deletion the index shows). Null when the set cannot be derived from
 * the shadow index alone: the workspace is below its repository's top (ignore files above it
 * apply), the repository is a submodule, its config names an excludes file or per-worktree
 * config, or an always-included path is a folder. A worktree's rules are its own index and its
 * repository's exclude file and config.
 */
export function pathSetRules(workspace: string, alwaysInclude: string[]): PathSetRules | null {
  const parts: string[] = [];
  const extras: string[] = [];
  const top = findRepoTop(workspace);
  let excludesFile = '/dev/null';
  if (top !== null) {
    const dirs = top === workspace ? adminDirs(top) : null;
    if (dirs === null) return null;
    const config = readTextOrNull(path.join(dirs.common, 'config'));
    if (config === null) return null;
    // a per-worktree config could name one too
    if (/excludesfile|worktreeconfig/i.test(config)) return null;
    excludesFile = path.join(dirs.common, 'info', 'exclude');
    parts.push(`gitdir=${dirs.own}`);
    for (const [name, file] of [
      ['index', path.join(dirs.own, 'index')],
      ['info/exclude', excludesFile],
      ['config', path.join(dirs.common, 'config')],
    ] as const)
      parts.push(`${name}=${signature(file)}`);
  }
  const asked = new Set<string>();
  for (const raw of alwaysInclude) {
    const rel = normalizeRelPath(raw);
    if (rel === null) continue;
    asked.add(rel);
    const st = lstatSync(path.join(workspace, rel), { throwIfNoEntry: false });
    if (st?.isDirectory() === true) return null;
    if (st !== undefined) extras.push(rel);
  }
  return { key: [...parts, ...[...asked].sort().map((rel) => `include=${rel}`)].join('\0'), extras, excludesFile };
}

/** Below this size (~10,000 entries) the enclosing repository's index is not digested: listing it is cheap. */
export const trackedDigestLimits = { minIndexBytes: 1 << 20 };

/**
 * What the enclosing repository's index decides of a path set beyond what the quick look sees for
 * itself: the tracked files its ignore rules match (listed only because tracked) and the gitlinks
 * (nested repositories), each entry's mode and path. A tracked file that is not ignored is in the
 * path set whether tracked or not (the quick look finds it new or gone like any file). A user's
 * commit rewrites the index (new stats, object ids, maybe new tracked files) and leaves this the
 * same. Null outside a repository, for a small index, when the index changed while git read it,
 * or when git cannot say (`ls-files --format` is git 2.38+): the rules key then decides alone.
 */
export async function trackedDigest(workspace: string, opts: GitCallOptions): Promise<TrackedDigest | null> {
  const top = findRepoTop(workspace);
  const dirs = top === workspace ? adminDirs(top) : null;
  if (top === null || dirs === null) return null;
  const indexFile = path.join(dirs.own, 'index');
  const before = signature(indexFile);
  const size = Number(before.split(':')[1] ?? 0);
  if (before === '-' || size < trackedDigestLimits.minIndexBytes) return null;
  const lsFiles = (...args: string[]): Promise<GitResult> =>
    runGit(
      [
        `--git-dir=${dirs.own}`,
        `--work-tree=${top}`,
        '--no-optional-locks',
        '-c',
        'core.fsmonitor=false',
        'ls-files',
        '-z',
        '--cached',
        '--format=%(objectmode) %(path)',
        ...args,
      ],
      { cwd: workspace, timeoutMs: opts.timeoutMs },
    );
  const [all, ignored] = await Promise.all([lsFiles(), lsFiles('--ignored', '--exclude-standard')]);
  // what git read is the index of that signature only when it is still the same after
  if (all.exitCode !== 0 || ignored.exitCode !== 0 || signature(indexFile) !== before) return null;
  const hash = createHash('sha1').update(ignored.stdout).update('\0\0');
  const raw = all.stdout;
  for (let at = raw.indexOf(GITLINK_ENTRY); at >= 0; at = raw.indexOf(GITLINK_ENTRY, at + 1)) {
    if (at > 0 && raw[at - 1] !== 0) continue;
    const end = raw.indexOf(0, at);
    hash.update(raw.subarray(at, end < 0 ? raw.length : end + 1));
  }
  return { signature: before, digest: hash.digest('hex') };
}

const GITLINK_ENTRY = Buffer.from('160000 ');

/**
 * Whether two rules keys differ only in the enclosing repository's index, from the signature
 * `tracked` was read at to one it was not: the caller then compares the tracked entries.
 */
export function differOnlyInIndex(warmKey: string, key: string, tracked: TrackedDigest): boolean {
  const a = warmKey.split('\0');
  const b = key.split('\0');
  if (a.length !== b.length) return false;
  let differs = false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (!a[i]?.startsWith('index=') || a[i] !== `index=${tracked.signature}` || !b[i]?.startsWith('index='))
      return false;
    differs = true;
  }
  return differs;
}

/** The index signature a rules key names (its `index=` part), or null. */
export function indexSignatureOf(key: string): string | null {
  const part = key.split('\0').find((p) => p.startsWith('index='));
  return part === undefined ? null : part.slice('index='.length);
}

/** A path's lstat; null when nothing is there (also a file where a folder on its way was); `unknown` when it cannot be looked at. */
function lstatOrNull(file: string): Stats | null | 'unknown' {
  try {
    return lstatSync(file, { throwIfNoEntry: false }) ?? null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOTDIR' ? null : 'unknown';
  }
}

function signature(file: string): string {
  try {
    const st = statSync(file, { throwIfNoEntry: false, bigint: true });
    return st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch (err) {
    // a file where a folder on its way was (`.git/info` a file): a signature of its own
    return `!${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}

/** The path set and stat-dirty paths of a re-checkpoint, learnt without listing the workspace. */
export interface QuickLook {
  /** How the path set differs from the warm checkpoint's (`withChange`). */
  change: { removed: string[]; added: string[] };
  /** How it differs from the warm checkpoint's path set. */
  delta: { added: string[]; deleted: string[] };
  dirty: Set<string>;
  /** The folders holding the wanted paths are the warm checkpoint's (no new path in a new folder). */
  sameFolders: boolean;
  /** Folders git could not open (listing.ts `unopenedFolders`). */
  unopened: string[];
  /** Paths gone from the set since its last full listing, looked for by name at the next look (`QUICK_LOOK_GONE_MAX`). */
  gone: Set<string>;
}

/**
 * Most paths a quick look keeps looking for by name after they went (above: the workspace is
 * listed in full, which starts the count again). A path gone from the set is one git's look for
 * new files may not name when it comes back: one the ignore rules match, in the set only because
 * its repository tracks it.
 */
export const QUICK_LOOK_GONE_MAX = 10_000;

/** What git said changed against the shadow index. */
interface Changes {
  /** Files not in the index that the ignore rules let through. */
  added: string[];
  /** Indexed files whose stat differs (modified, deleted, type changed). */
  dirty: Set<string>;
  /** Indexed files that are gone. */
  deleted: string[];
}

/**
 * Asks git what changed against the shadow index — modified and deleted indexed files, and the
 * files not in it that the ignore rules let through — instead of listing every file. While the
 * rules are the warm checkpoint's (the caller compared `rules.key`; no `.gitignore` among the
 * changes, no nested repository), the path set is the last one minus what was deleted plus what is
 * new. Null when that does not hold (or git fails): the caller lists the workspace in full.
 */
export async function quickLook(
  workspace: string,
  gitDir: string,
  base: string[],
  opts: GitCallOptions,
  warm: WarmState,
  rules: PathSetRules,
  skipAbs: string[],
): Promise<QuickLook | null> {
  const withRules = [...base, '-c', `core.excludesFile=${rules.excludesFile}`, '-c', 'core.quotePath=false'];
  const others = ['-o', '--exclude-standard', ...excludeArgs(workspace, skipAbs)];
  let walked: GitResult;
  let changes: Changes | null;
  // a known index is left as gaffer wrote it (known-index.ts): status would rewrite it
  const statusExcludes =
    warm.wanted.size > quickLookLimits.oneProcessMaxPaths &&
    quickLookLimits.statusLook &&
    warm.known === undefined &&
    statusLookUsable(gitDir)
      ? prepareStatusExcludes(gitDir, workspace, rules.excludesFile, skipAbs)
      : null;
  if (warm.wanted.size <= quickLookLimits.oneProcessMaxPaths) {
    walked = await runGit([...withRules, 'ls-files', '-z', '-t', '-m', '-d', ...others], opts);
    changes = oneLook(walked);
    lastLook.via = 'one';
  } else if (statusExcludes !== null) {
    const look = await statusLook(gitDir, base, opts, warm.commit, statusExcludes);
    // status refreshed the index's stat cache and kept its untracked cache: the same content, written again
    const signature = fileSignature(shadowIndexFile(gitDir));
    if (signature !== null && signature !== warm.indexSignature) {
      warm.indexSignature = signature;
      warm.indexWrittenMs = signatureMtimeMs(signature);
    }
    walked = look.result;
    changes = statusChanges(look.result, keepsPath(workspace, skipAbs));
    lastLook.via = 'status';
    if (changes !== null && look.cache !== 'held') {
      // a new folder or a changed ignore file: a `.gitignore` there may ignore itself, which only ls-files names
      walked = await runGit([...withRules, 'ls-files', '-z', ...others], opts);
      changes.added = walked.exitCode === 0 ? splitNul(walked.stdout) : [];
      if (walked.exitCode !== 0) changes = null;
      lastLook.via = 'status+others';
    }
  } else {
    const [othersResult, statusResult] = await Promise.all([
      runGit([...withRules, 'ls-files', '-z', ...others], opts),
      runGit([...base, 'diff-files', '-z', '--name-status'], opts),
    ]);
    walked = othersResult;
    changes = twoLooks(othersResult, statusResult);
    lastLook.via = 'two';
  }
  // a nested repository (`dir/`) or a changed ignore file: the rules may differ now
  if (
    changes === null ||
    [...changes.added, ...changes.dirty].some((p) => p.endsWith('/') || p === '.gitignore' || p.endsWith('/.gitignore'))
  )
    return null;

  // paths the index does not hold (large, skipped, special) are looked at by name: git names one
  // as new only when the ignore rules let it through, and one the repository tracks may be ignored
  const removed = new Set(changes.deleted);
  const went = [...changes.deleted];
  for (const p of warm.outside) {
    const st = lstatOrNull(path.join(workspace, p));
    // a folder on its way it cannot look into: a listing says what is there
    if (st === 'unknown') return null;
    // a folder (a nested repository, a gitlink): git's look names it as before
    if (st?.isDirectory() === true) removed.add(p);
    else if (st === null) {
      removed.add(p);
      went.push(p);
    }
  }
  const added = new Set(changes.added);
  const isWanted = (p: string): boolean => added.has(p) || (warm.wanted.has(p) && !removed.has(p));
  let sameFolders = true;
  for (const p of changes.added) {
    const slash = p.lastIndexOf('/');
    if (slash > 0 && !warm.folders.has(p.slice(0, slash))) sameFolders = false;
  }
  // a path gone since the last listing that is there again: git names it only when the ignore rules let it through
  const gone = new Set([...(warm.gone ?? []), ...went]);
  if (gone.size > QUICK_LOOK_GONE_MAX) return null;
  const back: string[] = [];
  for (const p of gone) {
    if (isWanted(p)) {
      gone.delete(p);
      continue;
    }
    const st = lstatOrNull(path.join(workspace, p));
    // a folder on its way it cannot look into: a listing says what is there
    if (st === 'unknown') return null;
    if (st === null) continue;
    // a folder now: what is in it is for a listing to say
    if (st.isDirectory()) return null;
    back.push(p);
    gone.delete(p);
    const slash = p.lastIndexOf('/');
    if (slash > 0 && !warm.folders.has(p.slice(0, slash))) sameFolders = false;
  }
  const delta = { added: [...changes.added, ...back, ...rules.extras], deleted: changes.deleted };
  const change = { removed: [...removed], added: delta.added };
  return {
    change,
    delta,
    dirty: changes.dirty,
    sameFolders,
    unopened: unopenedFolders(walked.stderr, '', ''),
    gone,
  };
}

/**
 * The warm checkpoint's path set made this look's, changed in place (a 250,000-path set costs
 * ~90 ms to copy): only once the look is taken — the caller knows the rules held — and the warm
 * state let go. `had` says what the set held before.
 */
export function withChange(
  wanted: Set<string>,
  change: QuickLook['change'],
): { wanted: Set<string>; had: (p: string) => boolean } {
  const removed = new Set<string>();
  const added = new Set<string>();
  for (const p of change.removed) if (wanted.delete(p)) removed.add(p);
  for (const p of change.added) {
    if (wanted.has(p)) continue;
    wanted.add(p);
    added.add(p);
  }
  return { wanted, had: (p) => removed.has(p) || (wanted.has(p) && !added.has(p)) };
}

/** `ls-files -t -m -d -o`: `C` modified, `R` deleted (also listed as `C`), `?` other. */
function oneLook(result: GitResult): Changes | null {
  if (result.exitCode !== 0) return null;
  const changes: Changes = { added: [], dirty: new Set(), deleted: [] };
  for (const entry of splitNul(result.stdout, 2)) {
    const p = entry.slice(2);
    if (entry.startsWith('?')) changes.added.push(p);
    else {
      changes.dirty.add(p);
      if (entry.startsWith('R')) changes.deleted.push(p);
    }
  }
  return changes;
}

/**
 * `status --porcelain=v2 -z` against a `HEAD` whose tree the index holds: `1 .Y …` a changed
 * indexed file (Y: M modified, T type changed, D deleted), `? path` a new one. Anything else (a
 * staged change: the index is not the warm checkpoint's) and the look is not made.
 */
function statusChanges(result: GitResult, keep: (rel: string) => boolean): Changes | null {
  if (result.exitCode !== 0) return null;
  const changes: Changes = { added: [], dirty: new Set(), deleted: [] };
  const out = result.stdout;
  // by bytes: a name that is not UTF-8 comes back C-quoted (git.ts `splitNul`), wherever it starts in its entry
  for (let start = 0; start < out.length;) {
    const nul = out.indexOf(0, start);
    const entry = out.subarray(start, nul < 0 ? out.length : nul);
    start = nul < 0 ? out.length : nul + 1;
    if (entry[0] === QUESTION && entry[1] === SPACE) {
      const p = nameOfPathBytes(entry.subarray(2));
      if (keep(p)) changes.added.push(p);
      continue;
    }
    if (entry[0] !== ONE || entry[1] !== SPACE || entry[2] !== DOT) return null;
    // `1 XY sub mH mI mW hH hI path`: the path follows the eighth space
    let at = 0;
    for (let i = 0; i < 8 && at >= 0; i++) at = entry.indexOf(SPACE, at + 1);
    if (at < 0) return null;
    const p = nameOfPathBytes(entry.subarray(at + 1));
    changes.dirty.add(p);
    if (entry[3] === D) changes.deleted.push(p);
  }
  return changes;
}

const [QUESTION, SPACE, DOT, ONE, D] = [0x3f, 0x20, 0x2e, 0x31, 0x44];

/** `ls-files -o` (the others) and `diff-files --name-status` (status, path pairs). */
function twoLooks(othersResult: GitResult, statusResult: GitResult): Changes | null {
  if (othersResult.exitCode !== 0 || statusResult.exitCode !== 0) return null;
  const changes: Changes = { added: splitNul(othersResult.stdout), dirty: new Set(), deleted: [] };
  const parts = splitNul(statusResult.stdout);
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const p = parts[i + 1] as string;
    changes.dirty.add(p);
    if (parts[i] === 'D') changes.deleted.push(p);
  }
  return changes;
}
