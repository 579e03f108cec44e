import { createHash } from 'node:crypto';
import { lstatSync, promises as fs, readdirSync, readlinkSync, type Dirent } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { MANIFEST_MAX_BYTES, readBounded, readBoundedText } from '../platform/files/bounded-read.js';
import { parseGitConfigKeys, readGitConfigValue } from './git-config-keys.js';
import { namesGitDriver } from './git-owned-config.js';
import { recordHarnessPackages, type HarnessRecord } from './harness-packages.js';
import { findRepoTop } from './listing.js';
import { EXCLUDED_DIR_NAMES, isExcludedDirName, normalizeRelPath, sortPaths } from './paths.js';

/**
 * The record of what the evidence does not hold, taken with every snapshot: the places that run
 * code later (the repository's hooks and config, editor tasks) by content, and the excluded
 * folders by stat. The limits below keep it cheap on any workspace (docs/outside-evidence.md).
 */
export const OUTSIDE_LIMITS = {
  /** Files of one excluded folder compared one by one (shared between its top entries); the rest by its top entries. */
  exactFilesPerFolder: 1_000,
  /** Files compared one by one over all excluded folders of a workspace. */
  exactFilesTotal: 3_000,
  /** Excluded folders recorded (at the workspace root and one level down). */
  folders: 16,
  /** Top entries of one excluded folder recorded (the packages of a `node_modules`). */
  topEntries: 2_000,
  /** Workspace subfolders looked into for excluded folders one level down. */
  subfoldersScanned: 200,
  /** Files per hooks, info or editor folder. */
  filesPerDir: 100,
  /** Submodule git dirs (`modules/…`) whose hooks and config are recorded. */
  modules: 20,
  /** Files above this are recorded by stat, not hashed. */
  hashMaxBytes: 1024 * 1024,
} as const;

/** Excluded folders that are caches every test run rewrites: never recorded (noise, and they run nothing). */
const CACHE_DIR_NAMES = new Set(['__pycache__', '.pytest_cache', '.mypy_cache', '.ruff_cache', '.cache']);
/**
 * Cache folders inside recorded folders (vitest's results, vite's pre-bundled deps, babel's cache; vite's
 * bundled config, written and removed on each run, left behind by a run that was killed).
 */
const NESTED_CACHE_NAMES = new Set(['.cache', '.vite', '.vitest', '.vite-temp', '__pycache__']);
/** Excluded folders whose files are named (recordEditorFiles below), not counted. */
const EDITOR_DIR_NAMES = new Set(['.vscode', '.idea']);
const COUNTED_DIR_NAMES = new Set(
  EXCLUDED_DIR_NAMES.filter((n) => !CACHE_DIR_NAMES.has(n) && !EDITOR_DIR_NAMES.has(n)),
);

/** A named file's state: content hash (or `stat:…` for a large file, `link:…` for a symlink) and mode. */
export interface FileMark {
  /** Where it belongs in `outside_evidence`: a git hook, another git file, an editor config. */
  group: 'hook' | 'git' | 'editor';
  /** sha1 of the content, `stat:<size>:<mtime>:<ino>` above the hash cap, `link:<target>` for a symlink. */
  hash: string;
  /** Type and permission bits. */
  mode: number;
  /** For a git config file: each key's values, hashed (so no secret is copied into the data dir). */
  keys?: Record<string, string>;
}

/**
 * One excluded folder: its top entries by stat, and its files by stat up to its budget, shared
 * fairly between the top entries (each package of a `node_modules`) and walked breadth-first
 * in each, so every entry's shallow files (`package.json`, `index.js`) are among them.
 */
export interface FolderRecord {
  /** Workspace-relative path -> `size:mtimeMs:ino:mode`. */
  files: Record<string, string>;
  /** The folder's own entries: name -> stat signature (a folder's mtime moves when an entry is added, removed or renamed in it). */
  top: Record<string, string>;
  /** Top entries whose walk its share cut short: name -> last path recorded in breadth-first order ('' for none). */
  cut?: Record<string, string>;
  /** More top entries than recorded (`OUTSIDE_LIMITS.topEntries`): the rest were not looked at. */
  overflow?: true;
}

/** What a snapshot's side file holds (JSON). */
export interface OutsideRecord {
  version: 1;
  /** The snapshot's label (`pre`, `post`, `verify-0`, …). */
  label: string;
  /** When it was taken, ms since the epoch. */
  takenAtMs: number;
  /** Named files by workspace-relative path (`.git/hooks/pre-commit`, `../.git/config`, `.vscode/tasks.json`). */
  files: Record<string, FileMark>;
  /** Excluded folders by workspace-relative path (`build`, `web/dist`). */
  folders: Record<string, FolderRecord>;
  /** The packages the tests run through, by content (harness-packages.ts); absent without a dependency folder. */
  harness?: HarnessRecord;
}

/** What the record is taken of. */
export interface OutsideInput {
  /** Absolute workspace path. */
  workspace: string;
  /** Snapshot label. */
  label: string;
  /** Paths the snapshot holds even inside excluded folders: not counted again here. */
  alwaysInclude: string[];
  /** Absolute paths never entered (gaffer's data dir). */
  skipAbs: string[];
}

/** Takes the out-of-evidence record of a workspace (never throws for an unreadable place: it is left out). */
export async function takeOutsideRecord(input: OutsideInput): Promise<OutsideRecord> {
  const files: Record<string, FileMark> = {};
  recordGitDir(input.workspace, files);
  recordEditorFiles(input.workspace, files);
  const found = findExcludedFolders(input);
  // the test framework and what it runs through, whole and by content, before the sample of the rest
  const harness = await recordHarnessPackages({ workspace: input.workspace, folders: found });
  const folders = await recordExcludedFolders(input, found, harness?.roots ?? []);
  return {
    version: 1,
    label: input.label,
    takenAtMs: Date.now(),
    files,
    folders,
    ...(harness !== null ? { harness } : {}),
  };
}

/**
 * The records this process took, by job and label. A record is only ever compared while its job
 * runs (its changes are computed before it settles, in the process that runs it), so it is kept
 * in memory, not written: a file per snapshot cost the engine's thread a folder and two new
 * files a job. The engine forgets a job's records when it ends; past KEPT_JOBS jobs the oldest
 * job's go first, whatever happens.
 */
const kept = new Map<string, Map<string, OutsideRecord>>();
const KEPT_JOBS = 256;

/** Keeps a job's record; answers its key (`<job>/<label>`, a snapshot's `outsideRecord`). */
export function keepOutsideRecord(jobId: string, record: OutsideRecord): string {
  let labels = kept.get(jobId);
  if (labels === undefined) {
    labels = new Map();
    kept.set(jobId, labels);
    if (kept.size > KEPT_JOBS) kept.delete(kept.keys().next().value as string);
  }
  labels.set(record.label, record);
  return `${jobId}/${record.label}`;
}

/** The record a key names; null when this process does not hold it (another process took it, or its job ended). */
export function outsideRecordOf(key: string): OutsideRecord | null {
  const slash = key.indexOf('/');
  return kept.get(key.slice(0, slash))?.get(key.slice(slash + 1)) ?? null;
}

/** Every record of the job a key belongs to. */
export function outsideRecordsBeside(key: string): OutsideRecord[] {
  return [...(kept.get(key.slice(0, key.indexOf('/')))?.values() ?? [])];
}

/** Drops a job's records (it has ended: nothing compares them again). */
export function forgetOutsideRecords(jobId: string): void {
  kept.delete(jobId);
}

/** The data dir's folder where earlier versions wrote records, one folder per job: pruned with the jobs. */
export const OUTSIDE_DIR = 'outside';

// ---- git ----------------------------------------------------------------------------------

/**
 * The git dir of the repository the workspace is in (the workspace's own `.git` folder or the one
 * its `.git` file names, else the enclosing repository's): its config, hooks (and those of
 * `core.hooksPath`), info files, and the hooks and config of its submodules (`modules/…`).
 */
function recordGitDir(workspace: string, files: Record<string, FileMark>): void {
  const top = findRepoTop(workspace);
  if (top === null) return;
  const gitDir = resolveGitDir(path.join(top, '.git'));
  if (gitDir === null) return;
  const common = readCommonDir(gitDir);
  const add = (abs: string, group: FileMark['group']) => markFile(workspace, abs, group, files);
  const config = add(path.join(common, 'config'), 'git');
  if (common !== gitDir) {
    add(path.join(gitDir, 'config.worktree'), 'git');
    addDirFiles(path.join(gitDir, 'info'), 'git', add);
  }
  addDirFiles(path.join(common, 'info'), 'git', add);
  addHooks(path.join(common, 'hooks'), add);
  const hooksPath = configuredHooksPath(path.join(common, 'config'), config, top);
  if (hooksPath !== null && hooksPath !== path.join(common, 'hooks')) addHooks(hooksPath, add);
  for (const moduleDir of findModuleGitDirs(path.join(common, 'modules'))) {
    add(path.join(moduleDir, 'config'), 'git');
    addHooks(path.join(moduleDir, 'hooks'), add);
  }
}

/** `<top>/.git` as a folder, or the folder a `.git` file (worktree, submodule) points at. */
function resolveGitDir(dotGit: string): string | null {
  const st = lstatSync(dotGit, { throwIfNoEntry: false });
  if (st === undefined) return null;
  if (st.isDirectory()) return dotGit;
  if (!st.isFile()) return null;
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(readText(dotGit) ?? '');
  return m ? path.resolve(path.dirname(dotGit), m[1] as string) : null;
}

/** A linked worktree keeps hooks, config and info in the main repository's git dir (`commondir`). */
function readCommonDir(gitDir: string): string {
  const text = readText(path.join(gitDir, 'commondir'))?.trim();
  return text ? path.resolve(gitDir, text) : gitDir;
}

/** `core.hooksPath` of the config (relative to the top of the work tree, `~` = home). */
function configuredHooksPath(configFile: string, mark: FileMark | null, top: string): string | null {
  if (mark?.keys?.['core.hookspath'] === undefined) return null;
  const text = readText(configFile);
  const value = text === null ? null : readGitConfigValue(text, 'core.hookspath');
  if (!value) return null;
  const expanded = value.startsWith('~/') ? path.join(os.homedir(), value.slice(2)) : value;
  return path.resolve(top, expanded);
}

/** Submodule git dirs under `modules/` (a name may hold slashes: up to three levels), bounded. */
function findModuleGitDirs(modulesDir: string): string[] {
  const found: string[] = [];
  const visit = (dir: string, depth: number): void => {
    for (const entry of readEntries(dir)) {
      if (found.length >= OUTSIDE_LIMITS.modules) return;
      if (!entry.isDirectory()) continue;
      const abs = path.join(dir, entry.name);
      if (lstatSync(path.join(abs, 'HEAD'), { throwIfNoEntry: false })?.isFile() === true) found.push(abs);
      else if (depth < 3) visit(abs, depth + 1);
    }
  };
  visit(modulesDir, 1);
  return found;
}

/** Hooks git would run: every file in the folder but the `*.sample`s git init writes. */
function addHooks(dir: string, add: (abs: string, group: FileMark['group']) => unknown): void {
  addDirFiles(dir, 'hook', add, (name) => !name.endsWith('.sample'));
}

function addDirFiles(
  dir: string,
  group: FileMark['group'],
  add: (abs: string, group: FileMark['group']) => unknown,
  keep: (name: string) => boolean = () => true,
): void {
  let n = 0;
  for (const entry of readEntries(dir)) {
    if (entry.isDirectory() || !keep(entry.name)) continue;
    if (++n > OUTSIDE_LIMITS.filesPerDir) return;
    add(path.join(dir, entry.name), group);
  }
}

// ---- editors ------------------------------------------------------------------------------

/** Editor files that run code when the folder is opened or a task starts (VS Code's, JetBrains'). */
function recordEditorFiles(workspace: string, files: Record<string, FileMark>): void {
  const add = (abs: string, group: FileMark['group']) => markFile(workspace, abs, group, files);
  addDirFiles(path.join(workspace, '.vscode'), 'editor', add);
  add(path.join(workspace, '.idea', 'workspace.xml'), 'editor');
  addDirFiles(path.join(workspace, '.idea', 'runConfigurations'), 'editor', add);
}

/** Records one file under its workspace-relative path; null when it is not there (or not a file). */
function markFile(
  workspace: string,
  abs: string,
  group: FileMark['group'],
  files: Record<string, FileMark>,
): FileMark | null {
  let st;
  try {
    st = lstatSync(abs, { throwIfNoEntry: false });
  } catch {
    return null;
  }
  if (st === undefined || !(st.isFile() || st.isSymbolicLink())) return null;
  let hash: string;
  let keys: Record<string, string> | undefined;
  if (st.isSymbolicLink()) hash = `link:${readLink(abs)}`;
  else if (st.size > OUTSIDE_LIMITS.hashMaxBytes) hash = `stat:${st.size}:${st.mtimeMs}:${st.ino}`;
  else {
    // unreadable (or swapped for a FIFO or a link since the lstat: issue 32): its stat still tells a later change
    const read = readBounded(abs, { maxBytes: OUTSIDE_LIMITS.hashMaxBytes });
    const content = read.ok ? read.bytes : Buffer.from(`unreadable:${st.size}:${st.mtimeMs}:${st.ino}`);
    hash = sha1(content);
    if (group === 'git' && /(^|[/\\])config(\.worktree)?$/.test(abs))
      keys = parseGitConfigKeys(content.toString('utf8'));
    // issue 32: the drivers an attributes file names, so a changed one can say which
    else if (group === 'git' && /(^|[/\\])info[/\\]attributes$/.test(abs))
      keys = Object.fromEntries(namesGitDriver(content.toString('utf8')).map((d) => [d, '1']));
  }
  const mark: FileMark = { group, hash, mode: st.mode };
  if (keys !== undefined) mark.keys = keys;
  files[path.relative(workspace, abs).split(path.sep).join('/')] = mark;
  return mark;
}

// ---- excluded folders ---------------------------------------------------------------------

/** The excluded folders at the workspace root and one level down (`build`, `web/dist`), sorted, at most `OUTSIDE_LIMITS.folders`. */
function findExcludedFolders(input: OutsideInput): string[] {
  const { workspace } = input;
  const found: string[] = [];
  let scanned = 0;
  const startedAt = Date.now();
  for (const entry of readEntries(workspace)) {
    if (!entry.isDirectory() || entry.name === '.git') continue;
    if (isExcludedDirName(entry.name)) {
      if (COUNTED_DIR_NAMES.has(entry.name)) found.push(entry.name);
      continue;
    }
    if (scanned++ >= OUTSIDE_LIMITS.subfoldersScanned || input.skipAbs.includes(path.join(workspace, entry.name)))
      continue;
    for (const inner of excludedInside(path.join(workspace, entry.name), startedAt))
      found.push(`${entry.name}/${inner}`);
  }
  return sortPaths(found)
    .slice(0, OUTSIDE_LIMITS.folders)
    .filter((rel) => !input.skipAbs.includes(path.join(workspace, rel)));
}

/**
 * The last listing of each folder one level down, by its stamp: inode and ctime, which adding,
 * removing or renaming an entry moves and a worker cannot set back (special-files.ts does the same).
 */
const excludedListings = new Map<string, { stamp: string; names: string[] }>();
const EXCLUDED_LISTINGS_MAX = 4_096;
/** A folder whose ctime is this recent may change again within the ctime's resolution: read each time. */
const RACY_MS = 1_000;

/** The excluded folders (`COUNTED_DIR_NAMES`) directly inside `abs`; read again only when its stamp moved. */
function excludedInside(abs: string, startedAt: number): string[] {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  const stamp = st?.isDirectory() === true ? `${st.ino}:${st.ctimeMs}` : null;
  const known = excludedListings.get(abs);
  if (stamp !== null && known?.stamp === stamp) return known.names;
  const names = readEntries(abs).flatMap((inner) =>
    inner.isDirectory() && COUNTED_DIR_NAMES.has(inner.name) ? [inner.name] : [],
  );
  excludedListings.delete(abs);
  if (stamp !== null && (st?.ctimeMs ?? Infinity) <= startedAt - RACY_MS) {
    excludedListings.set(abs, { stamp, names });
    if (excludedListings.size > EXCLUDED_LISTINGS_MAX)
      excludedListings.delete(excludedListings.keys().next().value as string);
  }
  return names;
}

/** The excluded folders, each stat-walked up to its budget; `recorded` (the harness packages, by content) left out. */
async function recordExcludedFolders(
  input: OutsideInput,
  found: string[],
  recorded: string[],
): Promise<Record<string, FolderRecord>> {
  const { workspace } = input;
  const included = input.alwaysInclude.map(normalizeRelPath).filter((p): p is string => p !== null);
  const folders: Record<string, FolderRecord> = {};
  let budget = OUTSIDE_LIMITS.exactFilesTotal;
  for (const rel of found) {
    const record = await statWalk(
      workspace,
      rel,
      Math.min(budget, OUTSIDE_LIMITS.exactFilesPerFolder),
      input.skipAbs,
      included,
      new Set(recorded),
    );
    budget -= Object.keys(record.files).length;
    folders[rel] = record;
  }
  return folders;
}

/** Sync stat calls are batched; the event loop (the checkpoint's git calls) gets a turn between. */
const YIELD_EVERY = 500;

/** A folder's top entries, each walked with its fair share of the budget (what one leaves, later ones get). */
async function statWalk(
  workspace: string,
  folder: string,
  budget: number,
  skipAbs: string[],
  included: string[],
  recorded: ReadonlySet<string>,
): Promise<FolderRecord> {
  const record: FolderRecord = { files: {}, top: {} };
  const isIncluded = (rel: string) =>
    included.some((p) => rel === p || rel.startsWith(`${p}/`)) || isUnder(rel, recorded);
  const tick = yielder();
  let entries = readEntries(path.join(workspace, folder)).filter(
    (e) => !NESTED_CACHE_NAMES.has(e.name) && e.name !== '.git',
  );
  if (entries.length > OUTSIDE_LIMITS.topEntries) {
    entries = entries.slice(0, OUTSIDE_LIMITS.topEntries);
    record.overflow = true;
  }
  let left = budget;
  for (let i = 0; i < entries.length; i++) {
    const turn = tick();
    if (turn !== null) await turn;
    const entry = entries[i] as Dirent;
    const rel = `${folder}/${entry.name}`;
    const abs = path.join(workspace, rel);
    const signature = statSignature(abs);
    if (signature === null || skipAbs.includes(abs)) continue;
    record.top[entry.name] = signature;
    if (recorded.has(rel)) continue;
    const share = Math.floor(left / (entries.length - i));
    if (share === 0) {
      // nothing of it compared file by file: only its own stat is (not even a readdir of it)
      (record.cut ??= {})[entry.name] = '';
      continue;
    }
    if (!entry.isDirectory()) {
      if (!isIncluded(rel)) {
        record.files[rel] = signature;
        left--;
      }
      continue;
    }
    const walked = await walkBreadthFirst(workspace, rel, share, skipAbs, isIncluded, tick);
    for (const [p, sig] of walked.files) record.files[p] = sig;
    left -= walked.files.length;
    if (walked.cutAfter !== null) (record.cut ??= {})[entry.name] = walked.cutAfter;
  }
  return record;
}

/** Files under one folder level by level (names sorted), up to `cap`: the order `breadthFirstOrder` sorts. */
async function walkBreadthFirst(
  workspace: string,
  rel: string,
  cap: number,
  skipAbs: string[],
  isIncluded: (rel: string) => boolean,
  tick: () => Promise<void> | null,
): Promise<{ files: Array<[string, string]>; cutAfter: string | null }> {
  const files: Array<[string, string]> = [];
  let level = [rel];
  while (level.length > 0) {
    const next: string[] = [];
    for (const dir of level) {
      for (const entry of readEntries(path.join(workspace, dir))) {
        const turn = tick();
        if (turn !== null) await turn;
        const child = `${dir}/${entry.name}`;
        if (entry.isDirectory()) {
          if (
            entry.name !== '.git' &&
            !NESTED_CACHE_NAMES.has(entry.name) &&
            !skipAbs.includes(path.join(workspace, child)) &&
            !isIncluded(child)
          )
            next.push(child);
          continue;
        }
        if (isIncluded(child)) continue;
        if (files.length >= cap) return { files, cutAfter: files[files.length - 1]?.[0] ?? '' };
        const signature = statSignature(path.join(workspace, child));
        if (signature !== null) files.push([child, signature]);
      }
    }
    level = next;
  }
  return { files, cutAfter: null };
}

/** Whether `rel` is one of `roots` or lies under one (a lookup per folder above it). */
function isUnder(rel: string, roots: ReadonlySet<string>): boolean {
  if (roots.size === 0) return false;
  for (let at = rel.length; at > 0; at = rel.lastIndexOf('/', at - 1)) {
    if (roots.has(rel.slice(0, at))) return true;
  }
  return false;
}

function yielder(): () => Promise<void> | null {
  let since = 0;
  return () => {
    if (++since < YIELD_EVERY) return null;
    since = 0;
    return yieldToLoop();
  };
}

/** `size:mtimeMs:ino:mode` (a directory's mtime moves when an entry is added, removed or renamed in it). */
function statSignature(abs: string): string | null {
  try {
    const st = lstatSync(abs, { throwIfNoEntry: false });
    return st === undefined ? null : `${st.size}:${st.mtimeMs}:${st.ino}:${st.mode}`;
  } catch {
    return null;
  }
}

// ---- small fs helpers ---------------------------------------------------------------------

/** A folder's entries sorted by name (code-unit order); none when it is missing or unreadable. */
function readEntries(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    return [];
  }
}

function readText(file: string): string | null {
  return readBoundedText(file, { maxBytes: MANIFEST_MAX_BYTES });
}

function readLink(abs: string): string {
  try {
    return readlinkSync(abs);
  } catch {
    return '';
  }
}

function sha1(data: Buffer | string): string {
  return createHash('sha1').update(data).digest('hex');
}
