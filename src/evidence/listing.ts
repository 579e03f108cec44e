import { createHash } from 'node:crypto';
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { forEachNulPath, runGit } from './git.js';
import { EXCLUDED_DIR_NAMES, isInExcludedDir, normalizeRelPath, relativeInside } from './paths.js';
import { emptyIndexFile } from './shadow-repo.js';
import { walkTree } from './walk.js';

export interface ListingContext {
  /** The shadow git dir (lists folders that are not inside a repository of their own). */
  gitDir: string;
  /** Per git call. */
  timeoutMs: number;
  /** Absolute paths never listed (gaffer's data dir when it lives inside the workspace). */
  skipAbs: string[];
}

export interface Listing {
  /** The raw git listings the path set is computed from. */
  raw: RawListing[];
  /** Always-included paths, resolved (existing files, the files of named folders). */
  extra: string[];
  /** Builds the set of workspace-relative paths the snapshot should hold (some may be gone). */
  paths(): Set<string>;
  /** Special or unreadable paths met while expanding `alwaysInclude` folders. */
  skipped: string[];
}

/**
 * What a later listing is compared with: a listing without its bytes (a 250,000-file repository's
 * are 17 MB, kept from one checkpoint to the next), each git output by its digest.
 */
export interface ListingMemo {
  raw: Omit<RawListing, 'raw' | 'unopened'>[];
  extra: string[];
}

export function listingMemo(listing: Listing): ListingMemo {
  return {
    raw: listing.raw.map(({ prefix, kind, digest, nested }) => ({ prefix, kind, digest, nested })),
    extra: listing.extra,
  };
}

/**
 * Whether two listings yield the same path set (same git outputs byte for byte, same always-
 * included paths): a re-checkpoint can then reuse the path set instead of building it again.
 */
export function isSameListing(a: ListingMemo, b: ListingMemo): boolean {
  if (a.raw.length !== b.raw.length || a.extra.length !== b.extra.length) return false;
  for (let i = 0; i < a.raw.length; i++) {
    const x = a.raw[i] as ListingMemo['raw'][number];
    const y = b.raw[i] as ListingMemo['raw'][number];
    if (x.prefix !== y.prefix || x.kind !== y.kind || x.digest !== y.digest) return false;
  }
  return a.extra.every((p, i) => p === b.extra[i]);
}

/** One git listing: `repo` output is `ls-files -t -s -c -o` of a repository, `plain` is `ls-files -o`. */
export interface RawListing {
  /** Workspace-relative folder it lists, with a trailing slash ('' for the workspace). */
  prefix: string;
  /** Which git command produced it (and so how to parse it). */
  kind: 'repo' | 'plain';
  /** git's NUL-separated output. */
  raw: Buffer;
  /** Its SHA-256 (isSameListing). */
  digest: string;
  /** Folders git could not open (a path past PATH_MAX, no permission), workspace-relative: listed as skipped. */
  unopened?: string[];
  /** The nested repositories it names (relative to it). */
  nested: string[];
}

/**
 * Lists what a snapshot holds: files git would not ignore (the workspace's `.gitignore`s, and an
 * enclosing repository's rules and tracked files when the workspace is inside one), the files of
 * every nested repository by its own rules (never a gitlink), minus spec 03's excluded folders,
 * plus the paths the request names.
 */
export async function listWorkspacePaths(
  workspace: string,
  alwaysInclude: string[],
  ctx: ListingContext,
  previous?: ListingMemo,
): Promise<Listing> {
  const top = findRepoTop(workspace);
  let first: RawListing | null = null;
  if (top !== null) {
    first = await listRepo(top, workspace, '', ctx);
    // A workspace the enclosing repo ignores as a whole is still snapshotted by its own rules.
    if (first !== null && top !== workspace && first.raw.length === 0) first = null;
  }
  first ??= await listPlain(workspace, '', ctx);
  const listings: RawListing[] = [];
  const seen = new Map((previous?.raw ?? []).map((l) => [l.prefix, l]));
  await expand(workspace, first, listings, ctx, seen);

  const extra: string[] = [];
  const skipped: string[] = [];
  for (const raw of alwaysInclude) {
    const rel = normalizeRelPath(raw);
    if (rel === null) continue;
    const st = lstatSync(path.join(workspace, rel), { throwIfNoEntry: false });
    if (st === undefined) continue;
    if (!st.isDirectory()) {
      extra.push(rel);
      continue;
    }
    const walked = await walkTree(workspace, rel, { skipExcludedNames: false, skipAbs: ctx.skipAbs, cap: 100_000 });
    for (const [p] of walked.entries) extra.push(p);
    skipped.push(...walked.skipped);
  }

  for (const l of listings) skipped.push(...(l.unopened ?? []));
  return { raw: listings, extra, skipped, paths: () => buildPaths(listings, extra) };
}

/**
 * Adds a listing and, recursively, the listings of the nested repositories it names (found
 * again only when its bytes differ from the previous listing of the same folder).
 */
async function expand(
  workspace: string,
  listing: RawListing,
  into: RawListing[],
  ctx: ListingContext,
  seen: Map<string, ListingMemo['raw'][number]>,
): Promise<void> {
  const before = seen.get(listing.prefix);
  listing.nested =
    before !== undefined && before.kind === listing.kind && before.digest === listing.digest
      ? before.nested
      : nestedRepos(listing);
  into.push(listing);
  for (const n of listing.nested) {
    const rel = listing.prefix + n;
    if (isInExcludedDir(`${rel}/`)) continue;
    const abs = path.join(workspace, rel);
    // a submodule entry whose folder is gone or is a file now is listed as a plain path
    if (lstatSync(abs, { throwIfNoEntry: false })?.isDirectory() !== true) continue;
    const prefix = `${rel}/`;
    const inner =
      (existsSync(path.join(abs, '.git')) ? await listRepo(abs, abs, prefix, ctx) : null) ??
      (await listPlain(abs, prefix, ctx));
    await expand(workspace, inner, into, ctx, seen);
  }
}

/**
 * Nested repositories a listing names, found in the raw bytes without parsing every entry:
 * `ls-files -o` shows an untracked one as `dir/`, `ls-files -s` a registered one as mode 160000.
 */
function nestedRepos(listing: Pick<RawListing, 'kind' | 'raw'>): string[] {
  const { raw, kind } = listing;
  const found: string[] = [];
  const each = (p: string): void => void found.push(p);
  for (let at = raw.indexOf('/\0'); at >= 0; at = raw.indexOf('/\0', at + 2)) {
    const start = raw.lastIndexOf(0, at) + 1;
    if (kind === 'plain') forEachNulPath(raw.subarray(start, at), () => 0, each);
    else if (raw[start] === UNTRACKED) forEachNulPath(raw.subarray(start, at), () => 2, each);
  }
  if (kind === 'repo') {
    // an index entry: its tag, a space, then its mode at the start of the entry
    for (let at = raw.indexOf(GITLINK); at >= 0; at = raw.indexOf(GITLINK, at + GITLINK.length)) {
      const start = at - 2;
      if (start < 0 || (start > 0 && raw[start - 1] !== 0) || raw[start] === UNTRACKED) continue;
      const end = raw.indexOf(0, at);
      const entry = raw.subarray(start, end < 0 ? raw.length : end);
      forEachNulPath(entry, entryPathAt(entry), each);
    }
  }
  return found;
}

function buildPaths(listings: RawListing[], extra: string[]): Set<string> {
  const paths = new Set<string>();
  for (const listing of listings) {
    const nested = new Set(listing.nested);
    let last = '';
    const pathAt = listing.kind === 'repo' ? entryPathAt(listing.raw) : () => 0;
    forEachNulPath(listing.raw, pathAt, (p) => {
      if (p === last || p.endsWith('/')) return; // unmerged stages repeat a path; `dir/` is a nested repo
      last = p;
      // a path tracked as a file that is now a nested repository must never reach update-index
      if (nested.has(p)) return;
      const full = listing.prefix + p;
      // tracked files inside an excluded folder are listed by git; ignored ones never reach us
      if (!isInExcludedDir(full)) paths.add(full);
    });
  }
  for (const p of extra) paths.add(p);
  return paths;
}

const GITLINK = Buffer.from('160000 ');
/** `ls-files -t`'s tag of an untracked path: every other tag is an index entry's. */
const UNTRACKED = '?'.charCodeAt(0);

/**
 * Where the path of a `ls-files -t -s -c -o` entry starts: after `? ` for an untracked path, after
 * `H <mode> <object id> <stage>\t` for an index entry (sha1 or sha256). The tag tells them apart:
 * without it, an untracked file named like an index entry (`aaaaaa <40 characters> 0<tab>x`) was
 * taken for one, and the listing named `x` instead of it. Checked by position: a regex per entry
 * costs more than the git call.
 */
function entryPathAt(raw: Buffer): (start: number, end: number) => number {
  return (start, end) => {
    if (raw[start] === UNTRACKED) return 2;
    for (const hexLength of [40, 64]) {
      const tab = 2 + 7 + hexLength + 2;
      if (start + tab < end && raw[start + 8] === 32 && raw[start + 9 + hexLength] === 32 && raw[start + tab] === 9)
        return tab + 1;
    }
    return 2;
  };
}

function digestOf(raw: Buffer): string {
  return createHash('sha256').update(raw).digest('hex');
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

/**
 * The command-line rules of every listing: spec 03's excluded folders and gaffer's data dir out,
 * and every `.gitignore` in (command-line rules come first in git's precedence): the rules are
 * evidence too, so one that ignores itself is still listed (ignore-judge.ts).
 */
export function excludeArgs(top: string, skipAbs: string[]): string[] {
  return excludePatterns(top, skipAbs).map((pattern) => `--exclude=${pattern}`);
}

/** The patterns of `excludeArgs`, in git's ignore-file syntax (also the last lines of the status look's exclude file: status-look.ts). */
export function excludePatterns(top: string, skipAbs: string[]): string[] {
  const patterns: string[] = ['!.gitignore'];
  for (const name of EXCLUDED_DIR_NAMES) patterns.push(`${name}/`);
  for (const abs of skipAbs) {
    // command-line excludes are anchored at the top of the repository, not at the cwd
    const rel = relativeInside(top, abs);
    if (rel !== null) patterns.push(`/${rel}/`);
  }
  return patterns;
}

/**
 * Lists `cwd` (at or below `top`) with the repository at `top`: its index for tracked files, its
 * ignore rules for the others. Read-only: `ls-files` never writes the index. Null when git refuses
 * (a broken `.git`, a repository owned by someone else).
 */
async function listRepo(top: string, cwd: string, prefix: string, ctx: ListingContext): Promise<RawListing | null> {
  const args = [
    `--git-dir=${path.join(top, '.git')}`,
    `--work-tree=${top}`,
    '--no-optional-locks',
    '-c',
    'core.fsmonitor=false',
    '-c',
    'core.quotePath=false',
    'ls-files',
    '-z',
    '-t',
    '-s',
    '-c',
    '-o',
    '--exclude-standard',
    ...excludeArgs(top, ctx.skipAbs),
  ];
  const result = await runGit(args, { cwd, timeoutMs: ctx.timeoutMs });
  if (result.exitCode !== 0) return null;
  const listing: RawListing = { prefix, kind: 'repo', raw: result.stdout, digest: digestOf(result.stdout), nested: [] };
  const unopened = unopenedFolders(result.stderr, relativeInside(top, cwd) ?? '', prefix);
  if (unopened.length > 0) listing.unopened = unopened;
  return listing;
}

/**
 * The folders git warned it could not open while listing (`could not open directory 'a/b/': File
 * name too long`): git names them from the top of its work tree; `from` is the listed folder there,
 * `prefix` its place in the workspace. git skips such a folder silently otherwise, so a file past
 * PATH_MAX would be "nothing changed" (issue 32).
 */
export function unopenedFolders(stderr: string, from: string, prefix: string): string[] {
  if (!stderr.includes('could not open directory')) return [];
  const found: string[] = [];
  const strip = from === '' ? '' : `${from}/`;
  for (const m of stderr.matchAll(/^warning: could not open directory '([^\n]*)$/gm)) {
    const line = m[1] as string;
    const end = line.lastIndexOf("': ");
    // git cuts a message at 4 KB: a path past PATH_MAX is named by its deepest whole folder there
    let rel = end >= 0 ? line.slice(0, end) : line.slice(0, line.lastIndexOf('/') + 1);
    rel = rel.replace(/\/$/, '');
    if (!rel.startsWith(strip)) continue;
    rel = prefix + rel.slice(strip.length);
    if (rel !== '' && !isInExcludedDir(`${rel}/`)) found.push(rel);
  }
  return found;
}

/** Lists a folder that is not in a repository: the shadow repo with an empty index, so all non-ignored files are "others". */
async function listPlain(dir: string, prefix: string, ctx: ListingContext): Promise<RawListing> {
  const args = [
    `--git-dir=${ctx.gitDir}`,
    `--work-tree=${dir}`,
    'ls-files',
    '-z',
    '-o',
    '--exclude-standard',
    ...excludeArgs(dir, ctx.skipAbs),
  ];
  const result = await runGit(args, {
    cwd: dir,
    timeoutMs: ctx.timeoutMs,
    env: { GIT_INDEX_FILE: emptyIndexFile(ctx.gitDir) },
  });
  if (result.exitCode !== 0) {
    throw new Error(
      `listing ${dir} failed: ${result.timedOut ? 'timed out' : result.stderr.trim() || result.spawnError || 'unknown'}`,
    );
  }
  const listing: RawListing = {
    prefix,
    kind: 'plain',
    raw: result.stdout,
    digest: digestOf(result.stdout),
    nested: [],
  };
  const unopened = unopenedFolders(result.stderr, '', prefix);
  if (unopened.length > 0) listing.unopened = unopened;
  return listing;
}
