import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { runGit, splitNul } from './git.js';
import { EXCLUDED_DIR_NAMES, isInExcludedDir, normalizeRelPath, relativeInside } from './paths.js';
import { emptyIndexFile } from './shadow-repo.js';
import { walkTree } from './walk.js';

export interface ListingContext {
  /** The shadow git dir (lists folders that are not inside a repository of their own). */
  gitDir: string;
  timeoutMs: number;
  /** Absolute paths never listed (gaffer's data dir when it lives inside the workspace). */
  skipAbs: string[];
}

export interface Listing {
  /** Workspace-relative paths that should be in the snapshot (some may no longer exist). */
  paths: string[];
  /** Special or unreadable paths met while expanding `alwaysInclude` folders. */
  skipped: string[];
}

/** `100644 <sha> 0\t<path>`: a cached entry of `ls-files -s`; anything else is untracked. */
const STAGED = /^([0-7]{6}) [0-9a-f]{40,64} [0-3]\t/;
const GITLINK = '160000';

/**
 * Lists what a snapshot holds: files git would not ignore (the workspace's `.gitignore`s, and an
 * enclosing repository's rules and tracked files when the workspace is inside one), the files of
 * every nested repository by its own rules (never a gitlink), minus spec 03's excluded folders,
 * plus the paths the request names.
 */
export async function listWorkspacePaths(workspace: string, alwaysInclude: string[], ctx: ListingContext): Promise<Listing> {
  const found = new Set<string>();
  const top = findRepoTop(workspace);
  let listed: RepoListing | null = null;
  if (top !== null) {
    listed = await listRepo(top, workspace, ctx);
    // A workspace the enclosing repo ignores as a whole is still snapshotted by its own rules.
    if (listed !== null && top !== workspace && listed.files.length === 0 && listed.nested.length === 0) listed = null;
  }
  listed ??= await listPlain(workspace, ctx);
  await collect(workspace, '', listed, found, ctx);

  const paths: string[] = [];
  for (const p of found) if (!isInExcludedDir(p)) paths.push(p);
  const skipped: string[] = [];
  for (const raw of alwaysInclude) {
    const rel = normalizeRelPath(raw);
    if (rel === null) continue;
    const abs = path.join(workspace, rel);
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (st === undefined) continue;
    if (!st.isDirectory()) {
      paths.push(rel);
      continue;
    }
    const walked = await walkTree(workspace, rel, { skipExcludedNames: false, skipAbs: ctx.skipAbs, cap: 100_000 });
    for (const [p] of walked.entries) paths.push(p);
    skipped.push(...walked.skipped);
  }
  return { paths: [...new Set(paths)], skipped };
}

interface RepoListing {
  files: string[];
  /** Nested repositories (relative, no trailing slash): their files are listed by their own rules. */
  nested: string[];
}

async function collect(workspace: string, prefix: string, listed: RepoListing, into: Set<string>, ctx: ListingContext): Promise<void> {
  // a path tracked as a file that is now a nested repository must never reach update-index (gitlink)
  const nestedHere = new Set(listed.nested);
  for (const f of listed.files) if (!nestedHere.has(f)) into.add(prefix + f);
  for (const n of listed.nested) {
    const rel = prefix + n;
    if (isInExcludedDir(`${rel}/`)) continue;
    const abs = path.join(workspace, rel);
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (st === undefined || !st.isDirectory()) {
      // a submodule entry whose folder is gone or is a file now: list it as a plain path
      if (st !== undefined) into.add(rel);
      continue;
    }
    const inner = (existsSync(path.join(abs, '.git')) ? await listRepo(abs, abs, ctx) : null) ?? (await listPlain(abs, ctx));
    await collect(workspace, `${rel}/`, inner, into, ctx);
  }
}

/** The nearest folder at or above `dir` holding a `.git` (directory, or file of a worktree/submodule). */
export function findRepoTop(dir: string): string | null {
  let current = path.resolve(dir);
  for (;;) {
    if (existsSync(path.join(current, '.git'))) return current;
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

function excludeArgs(top: string, skipAbs: string[]): string[] {
  const args: string[] = [];
  for (const name of EXCLUDED_DIR_NAMES) args.push(`--exclude=${name}/`);
  for (const abs of skipAbs) {
    // command-line excludes are anchored at the top of the repository, not at the cwd
    const rel = relativeInside(top, abs);
    if (rel !== null) args.push(`--exclude=/${rel}/`);
  }
  return args;
}

/**
 * Lists `cwd` (at or below `top`) with the repository at `top`: its index for tracked files, its
 * ignore rules for the others. Read-only: `ls-files` never writes the index. Null when git refuses
 * (a broken `.git`, a repository owned by someone else).
 */
async function listRepo(top: string, cwd: string, ctx: ListingContext): Promise<RepoListing | null> {
  const args = [
    `--git-dir=${path.join(top, '.git')}`,
    `--work-tree=${top}`,
    '--no-optional-locks',
    '-c', 'core.fsmonitor=false',
    '-c', 'core.quotePath=false',
    'ls-files', '-z', '-s', '-c', '-o', '--exclude-standard',
    ...excludeArgs(top, ctx.skipAbs),
  ];
  const result = await runGit(args, { cwd, timeoutMs: ctx.timeoutMs });
  if (result.exitCode !== 0) return null;
  const files: string[] = [];
  const nested: string[] = [];
  let last = '';
  for (const entry of splitNul(result.stdout)) {
    const staged = STAGED.exec(entry);
    if (staged === null) {
      pushUntracked(entry, files, nested);
      continue;
    }
    const p = entry.slice(staged[0].length);
    if (p === last) continue; // unmerged stages repeat a path
    last = p;
    if (staged[1] === GITLINK) nested.push(p);
    else files.push(p);
  }
  return { files, nested };
}

/** Lists a folder that is not in a repository: the shadow repo with an empty index, so all non-ignored files are "others". */
async function listPlain(dir: string, ctx: ListingContext): Promise<RepoListing> {
  const args = [
    `--git-dir=${ctx.gitDir}`,
    `--work-tree=${dir}`,
    'ls-files', '-z', '-o', '--exclude-standard',
    ...excludeArgs(dir, ctx.skipAbs),
  ];
  const result = await runGit(args, { cwd: dir, timeoutMs: ctx.timeoutMs, env: { GIT_INDEX_FILE: emptyIndexFile(ctx.gitDir) } });
  if (result.exitCode !== 0) {
    throw new Error(`listing ${dir} failed: ${result.timedOut ? 'timed out' : result.stderr.trim() || result.spawnError || 'unknown'}`);
  }
  const files: string[] = [];
  const nested: string[] = [];
  for (const entry of splitNul(result.stdout)) pushUntracked(entry, files, nested);
  return { files, nested };
}

function pushUntracked(entry: string, files: string[], nested: string[]): void {
  // ls-files -o shows a nested repository as its folder with a trailing slash
  if (entry.endsWith('/')) nested.push(entry.slice(0, -1));
  else files.push(entry);
}
