import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readlinkSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { runGit, splitNul } from './git.js';
import { excludeArgs, findRepoTop } from './listing.js';
import { isInExcludedDir, relativeInside } from './paths.js';
import { adminDirs } from './quick-look.js';
import { emptyIndexFile } from './shadow-repo.js';
import { walkTree } from './walk.js';

// Issue 32: "the checkpoint's rules judge". A checkpoint lists the files its workspace's ignore
// rules let through (`.gitignore` files, the repository's info/exclude and core.excludesFile). A
// worker can write those rules too: a `tests/.gitignore` that ignores itself and a `conftest.py`
// beside it, a line in `.git/info/exclude`. So every snapshot compared with a checkpoint (`like`)
// is judged by that checkpoint's rules: when its rules differ, the files the new rules hide but
// the checkpoint's would have listed are added to it (and named: `hiddenByIgnore`).
//
// Cost: the `.gitignore` files are in every checkpoint (the listing re-includes them by name, so
// one that ignores itself is listed too); the rules of a checkpoint are the signatures of those
// files and the text of the two exclude files, kept in memory. A later snapshot whose rules have
// the same signatures pays a few stat calls and two small reads: no git process. Only a changed
// rule costs a listing of the ignored files and a `check-ignore` against the checkpoint's rules.

/** The ignore rules a checkpoint was listed by. */
export interface IgnoreRules {
  /** Each `.gitignore` the checkpoint holds, with its stat signature. */
  files: Map<string, string>;
  /** The repository's core.excludesFile and info/exclude, as one text in git's order of precedence. */
  excludes: string;
}

/** The rules of recent checkpoints, by workspace and commit (a job compares with its checkpoint within minutes). */
const judges = new Map<string, IgnoreRules>();
const JUDGES_MAX = 1_024;
const keyOf = (workspace: string, commit: string): string => `${workspace}\0${commit}`;

/** Larger exclude files are not read (their text stands for them: any change is then a change). */
const EXCLUDES_MAX_BYTES = 1 << 20;

/** The path sets already searched (a re-checkpoint whose listing did not change reuses its set): ~50 ns a path. */
const searched = new WeakMap<ReadonlySet<string>, string[]>();

/** The `.gitignore` paths among a checkpoint's paths. */
export function ignoreFilesOf(paths: Iterable<string>): string[] {
  const known = paths instanceof Set ? searched.get(paths) : undefined;
  if (known !== undefined) return known;
  const found: string[] = [];
  for (const p of paths)
    if (p.endsWith('.gitignore') && (p.length === 10 || p.charCodeAt(p.length - 11) === 47)) found.push(p);
  if (paths instanceof Set) searched.set(paths, found);
  return found;
}

/** Forgets what `ignoreFilesOf` found in a set that is about to change. */
export function forgetIgnoreFiles(paths: ReadonlySet<string>): void {
  searched.delete(paths);
}

/** The rules that decide a workspace's listing now, given the `.gitignore` files it lists. */
export function readIgnoreRules(workspace: string, ignoreFiles: readonly string[]): IgnoreRules {
  const files = new Map<string, string>();
  for (const p of ignoreFiles) files.set(p, signature(path.join(workspace, p)));
  return { files, excludes: excludesText(workspace) };
}

/** Keeps a checkpoint's rules, for the snapshots compared with it. */
export function noteJudge(workspace: string, commit: string, rules: IgnoreRules): void {
  judges.delete(keyOf(workspace, commit));
  judges.set(keyOf(workspace, commit), rules);
  if (judges.size > JUDGES_MAX) judges.delete(judges.keys().next().value as string);
}

/** The rules a checkpoint was listed by, or null when this process did not take it. */
export function recallJudge(workspace: string, commit: string): IgnoreRules | null {
  return judges.get(keyOf(workspace, commit)) ?? null;
}

/** Whether two sets of rules are the same files with the same signatures and the same exclude text. */
export function sameRules(a: IgnoreRules, b: IgnoreRules): boolean {
  if (a.excludes !== b.excludes || a.files.size !== b.files.size) return false;
  for (const [p, sig] of a.files) if (b.files.get(p) !== sig) return false;
  return true;
}

function signature(file: string): string {
  try {
    const st = lstatSync(file, { throwIfNoEntry: false, bigint: true });
    return st === undefined ? '-' : `${st.mode}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return '?';
  }
}

/**
 * A small regular file's text, read without following a link, never blocking on a FIFO or a
 * device; null when it is none (gone, special, too large: the reason stands in the text instead).
 */
function readSmall(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    // git follows a link here: where it points is part of the rules (a change of it is a change)
    if ((err as NodeJS.ErrnoException).code !== 'ELOOP') return null;
    try {
      return `(a link to ${readlinkSync(file)})`;
    } catch {
      return '(a link)';
    }
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return `(not a regular file: mode ${st.mode.toString(8)})`;
    if (st.size > EXCLUDES_MAX_BYTES) return `(over ${EXCLUDES_MAX_BYTES} bytes: ${st.size} ${st.mtimeMs} ${st.ino})`;
    const buf = Buffer.alloc(st.size);
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return buf.toString('utf8', 0, at);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * core.excludesFile (of the repository's own config: gaffer's git reads no global one) then
 * info/exclude: concatenated in this order, the last matching line wins as between git's two files.
 */
function excludesText(workspace: string): string {
  const top = findRepoTop(workspace);
  if (top === null) return '';
  const dirs = adminDirs(top);
  if (dirs === null) return '';
  const config = readSmall(path.join(dirs.common, 'config')) ?? '';
  const parts: string[] = [];
  const named = /^\s*excludesfile\s*=\s*(.*?)\s*$/im.exec(config)?.[1];
  if (named !== undefined && named !== '') {
    const value = named.replace(/^"(.*)"$/, '$1');
    const file = value.startsWith('~/')
      ? path.join(process.env.HOME ?? '/', value.slice(2))
      : path.resolve(workspace, value);
    parts.push(readSmall(file) ?? '');
  }
  parts.push(readSmall(path.join(dirs.common, 'info', 'exclude')) ?? '');
  return parts.join('\n');
}

/** What the hidden-file pass needs. */
export interface HiddenInput {
  workspace: string;
  /** The checkpoint whose rules judge: its shadow repository and commit. */
  judge: { gitDir: string; id: string };
  /** Its exclude text (null: not known here, the workspace's present one is used). */
  excludes: string | null;
  /** The shadow repository of this snapshot (a git dir with no rules of its own). */
  gitDir: string;
  timeoutMs: number;
  skipAbs: string[];
}

/** At most this many ignored files are judged (a changed rule that hides more is named as truncated by the count). */
const HIDDEN_CANDIDATES_MAX = 100_000;

/**
 * The files the workspace's present rules ignore that the checkpoint's rules would list: the
 * ignored files (ignored folders walked, spec 03's excluded folders never), judged by
 * `check-ignore` in a folder holding only the checkpoint's `.gitignore` files (and, for a
 * workspace below its repository's top, the `.gitignore` files above it, which no worker wrote),
 * with the checkpoint's exclude text as the only excludes file.
 */
export async function findHiddenByIgnore(input: HiddenInput): Promise<string[]> {
  const { workspace, timeoutMs, skipAbs } = input;
  const top = findRepoTop(workspace);
  const args =
    top === null
      ? [`--git-dir=${input.gitDir}`, `--work-tree=${workspace}`]
      : [
          `--git-dir=${path.join(top, '.git')}`,
          `--work-tree=${top}`,
          '--no-optional-locks',
          '-c',
          'core.fsmonitor=false',
        ];
  const env: Record<string, string> = top === null ? { GIT_INDEX_FILE: emptyIndexFile(input.gitDir) } : {};
  const listed = await runGit(
    [
      ...args,
      '-c',
      'core.quotePath=false',
      'ls-files',
      '-z',
      '-o',
      '-i',
      '--directory',
      '--exclude-standard',
      ...excludeArgs(top ?? workspace, skipAbs),
    ],
    {
      cwd: workspace,
      timeoutMs,
      env,
    },
  );
  if (listed.exitCode !== 0)
    throw new Error(
      `listing the ignored files of ${workspace} failed: ${listed.stderr.trim() || listed.spawnError || 'unknown'}`,
    );
  const files: string[] = [];
  const folders: string[] = [];
  for (const entry of splitNul(listed.stdout)) {
    // spec 03's excluded folders, and gaffer's own data dir, are never evidence whatever the rules
    if (isInExcludedDir(entry)) continue;
    const abs = path.join(workspace, entry).replace(/\/$/, '');
    if (skipAbs.some((s) => abs === s || abs.startsWith(`${s}/`))) continue;
    if (entry.endsWith('/')) folders.push(entry.slice(0, -1));
    else files.push(entry);
  }
  if (files.length === 0 && folders.length === 0) return [];

  const scratch = mkdtempSync(path.join(input.gitDir, 'gaffer-judge-'));
  try {
    const relWorkspace = top === null ? '' : (relativeInside(top, workspace) ?? '');
    const root = path.join(scratch, 'tree');
    const inWorkspace = relWorkspace === '' ? root : path.join(root, relWorkspace);
    mkdirSync(inWorkspace, { recursive: true });
    // the rules above the workspace (outside it, so no worker's): as they are
    if (top !== null && relWorkspace !== '') {
      const segments = relWorkspace.split('/');
      for (let i = 0; i < segments.length; i++) {
        const rel = segments.slice(0, i).join('/');
        const text = readSmall(path.join(top, rel, '.gitignore'));
        if (text !== null) {
          mkdirSync(path.join(root, rel), { recursive: true });
          writeFileSync(path.join(root, rel, '.gitignore'), text);
        }
      }
    }
    await writeCheckpointIgnoreFiles(input.judge, inWorkspace, timeoutMs);
    const excludesFile = path.join(scratch, 'excludes');
    writeFileSync(excludesFile, input.excludes ?? excludesText(workspace));
    const ignoredByCheckpoint = async (paths: string[]): Promise<Set<string>> => {
      const judged = await runGit(
        [
          `--git-dir=${input.gitDir}`,
          `--work-tree=${root}`,
          '-c',
          `core.excludesFile=${excludesFile}`,
          '-c',
          'core.quotePath=false',
          'check-ignore',
          '--no-index',
          '-z',
          '--stdin',
        ],
        {
          cwd: inWorkspace,
          timeoutMs,
          env: { GIT_INDEX_FILE: emptyIndexFile(input.gitDir) },
          input: `${paths.join('\0')}\0`,
        },
      );
      if (judged.exitCode !== 0 && judged.exitCode !== 1)
        throw new Error(
          `judging ${workspace}'s ignored files by the checkpoint's rules failed: ${judged.stderr.trim() || judged.spawnError || 'unknown'}`,
        );
      return new Set(splitNul(judged.stdout));
    };
    // a folder the checkpoint's rules ignore as a whole (a build output, a cache) is not walked:
    // nothing below it could be listed (folders made here, so a rule for folders only applies)
    for (const f of folders) mkdirSync(path.join(inWorkspace, f), { recursive: true });
    const ignoredFolders = folders.length > 0 ? await ignoredByCheckpoint(folders) : new Set<string>();
    const candidates = [...files];
    for (const folder of folders) {
      if (ignoredFolders.has(folder) || candidates.length >= HIDDEN_CANDIDATES_MAX) continue;
      const walked = await walkTree(workspace, folder, {
        skipExcludedNames: true,
        skipAbs,
        cap: HIDDEN_CANDIDATES_MAX,
      });
      for (const [p] of walked.entries) candidates.push(p);
    }
    if (candidates.length === 0) return [];
    const ignored = await ignoredByCheckpoint(candidates);
    return candidates.filter((p) => !ignored.has(p));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Writes the checkpoint's `.gitignore` files under `dir`, as its tree holds them. */
async function writeCheckpointIgnoreFiles(
  judge: { gitDir: string; id: string },
  dir: string,
  timeoutMs: number,
): Promise<void> {
  const base = [`--git-dir=${judge.gitDir}`];
  const tree = await runGit([...base, 'ls-tree', '-r', '-z', '--full-tree', judge.id], { cwd: dir, timeoutMs });
  if (tree.exitCode !== 0)
    throw new Error(`reading checkpoint ${judge.id} failed: ${tree.stderr.trim() || tree.spawnError || 'unknown'}`);
  const wanted: Array<{ path: string; oid: string }> = [];
  for (const entry of splitNul(tree.stdout, 'tab')) {
    const tab = entry.indexOf('\t');
    const p = entry.slice(tab + 1);
    const [mode, type, oid] = entry.slice(0, tab).split(' ');
    if (type === 'blob' && mode !== '120000' && oid !== undefined && ignoreFilesOf([p]).length === 1)
      wanted.push({ path: p, oid });
  }
  if (wanted.length === 0) return;
  const blobs = await runGit([...base, 'cat-file', '--batch'], {
    cwd: dir,
    timeoutMs,
    input: wanted.map((w) => `${w.oid}\n`).join(''),
  });
  if (blobs.exitCode !== 0)
    throw new Error(
      `reading checkpoint ${judge.id}'s ignore files failed: ${blobs.stderr.trim() || blobs.spawnError || 'unknown'}`,
    );
  let at = 0;
  for (const w of wanted) {
    const eol = blobs.stdout.indexOf(10, at);
    const size = Number(blobs.stdout.toString('latin1', at, eol).split(' ')[2]);
    const content = blobs.stdout.subarray(eol + 1, eol + 1 + size);
    at = eol + 1 + size + 1;
    const abs = path.join(dir, w.path);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}
