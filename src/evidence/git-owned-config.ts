import { readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commonDirOf, findGitDir } from './head-commit.js';
import { readBounded } from '../platform/files/bounded-read.js';

/**
 * The configuration gaffer's own git calls run with (issue 32): a worker can write `.git/config`,
 * `config.worktree`, an included file, `.git/info/attributes` and any `.gitattributes`, and gaffer's
 * git runs after it, unsandboxed, as the user. Nothing that runs a program may come from there.
 *
 * git reads the repository's config and gives no switch to skip it, but command-line config
 * (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`, passed down to the git processes git itself starts, into
 * submodules too) is read last and wins. So every call carries:
 * - FIXED: hooks, fsmonitor, pager, editors, ssh, askpass, credential helpers, proxies, the `ext::`
 *   transport, signature programs, an external diff, implicit bare repositories — each set to
 *   nothing or to the plain program git would run anyway (`ssh`, `gpg`);
 * - per repository, every driver an attribute could name (`filter.<x>`, `diff.<x>`, `merge.<x>`,
 *   found in the repository's config files, their includes and its submodules' configs) emptied:
 *   an empty clean, smudge or process filter is no filter, and an empty diff command, textconv
 *   or merge driver cannot start (git says so and fails that diff or merge: no code runs).
 * The user's files are never rewritten. Porcelain diffs also get `--no-ext-diff --no-textconv`.
 *
 * A config file git would block on or swell from (a FIFO, a device, a file past CONFIG_MAX_BYTES)
 * refuses the call before git starts: `refusal` says which file.
 */

const FIXED: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', 'true'],
  ['sequence.editor', 'true'],
  ['core.sshCommand', 'ssh'],
  ['core.askPass', ''],
  ['credential.helper', ''],
  ['core.gitProxy', ''],
  ['protocol.ext.allow', 'never'],
  ['diff.external', ''],
  ['log.showSignature', 'false'],
  ['merge.verifySignatures', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['gpg.program', 'gpg'],
  ['gpg.openpgp.program', 'gpg'],
  ['gpg.x509.program', 'gpgsm'],
  ['gpg.ssh.program', 'ssh-keygen'],
  // a folder that looks like a bare repository (HEAD, objects/, refs/ and a config a worker wrote)
  // is never taken for one: gaffer names its git dirs explicitly
  ['safe.bareRepository', 'explicit'],
  // a submodule's git runs with its own config, whose drivers gaffer has not read: never entered
  ['status.submoduleSummary', 'false'],
  ['diff.ignoreSubmodules', 'all'],
  ['submodule.recurse', 'false'],
  ['fetch.recurseSubmodules', 'false'],
  ['gc.auto', '0'],
  ['gc.autoDetach', 'false'],
  ['maintenance.auto', 'false'],
  // output gaffer parses: never coloured, never without untracked files
  ['color.ui', 'false'],
  ['color.diff', 'false'],
  ['color.status', 'false'],
  ['status.showUntrackedFiles', 'normal'],
];

/** Keys (lowercased) that run a program when set in a repository's config: named in a verdict when a worker sets one. */
const EXECUTABLE_KEY =
  /^(core\.(hookspath|fsmonitor|pager|editor|sshcommand|askpass|gitproxy|alternaterefscommand|attributesfile)|sequence\.editor|pager\..+|alias\..+|credential\..*helper|diff\.external|diff\..+\.(command|textconv)|filter\..+\.(clean|smudge|process)|merge\..+\.driver|gpg\..*program|gpg\.ssh\.defaultkeycommand|log\.showsignature|include\.path|includeif\..+\.path|remote\..+\.(uploadpack|receivepack|vcs)|url\..+\.insteadof|protocol\..*allow|submodule\..+\.update|uploadpack\.packobjectshook|hook\..+\.command|core\.worktree)$/;

/** Whether a git config key (as `git config -l` prints it: section and name lowercased) can make git run a program. */
export function isExecutableGitKey(key: string): boolean {
  return EXECUTABLE_KEY.test(key);
}

/** An attributes line that names a driver a config could define (`filter=`, `diff=`, `merge=` with a name). */
export function namesGitDriver(attributesText: string): string[] {
  const found = new Set<string>();
  for (const m of attributesText.matchAll(/(?:^|\s)(filter|diff|merge)=([^\s]+)/g))
    found.add(`${m[1] as string}=${m[2] as string}`);
  return [...found];
}

/**
 * `.gitattributes` files among a job's changed paths that name a driver, each as
 * `<path>: filter=x, diff=y` (read without following a link, a FIFO or a device never opened for
 * long, at most CONFIG_MAX_BYTES): issue 32's verdict names them beside the config keys.
 */
export function attributesNamingDrivers(workspace: string, changed: readonly string[]): string[] {
  const out: string[] = [];
  for (const rel of changed) {
    if (!/(^|\/)\.gitattributes$/.test(rel)) continue;
    const read = readConfigFile(path.join(workspace, rel), workspace);
    const drivers = read.text === null ? [] : namesGitDriver(read.text);
    if (drivers.length > 0) out.push(`${rel}: ${drivers.join(', ')}`);
  }
  return out;
}

/** A config larger than this is refused (git would read it whole, in every call). */
const CONFIG_MAX_BYTES = 4 * 1024 * 1024;
/** Include depth git itself allows. */
const MAX_INCLUDE_DEPTH = 10;
/** Submodule git dirs looked into (`modules/…`, nested). */
const MAX_MODULES = 50;

const DRIVER_SECTION =
  /\[\s*(filter|diff|merge)\s+"((?:[^"\\\n]|\\.)*)"\s*\]|\[\s*(filter|diff|merge)\.([^\]\s]+)\s*\]/gi;
const INCLUDE_LINE = /^\s*path\s*=\s*(.*)$/i;
const INCLUDE_SECTION = /^\s*\[\s*include(?:if\s+"[^"\n]*")?\s*\]/i;

/** What one git dir's config files say gaffer must override, and the stats they were read at. */
interface Scanned {
  /** Every file read or looked for, and their stats when read. */
  files: string[];
  stamp: string;
  drivers: string[];
  refusal: string | null;
  env: Readonly<Record<string, string>>;
}

const scans = new Map<string, Scanned>();
/** Git dirs remembered (a long-lived server meets a new one per worktree task): the oldest goes first. */
const SCANS_MAX = 512;

/** What `runGit` needs for one call: the environment entries, or why the call is refused. */
export interface OwnedConfig {
  env: Readonly<Record<string, string>>;
  /** `GIT_WORK_TREE` for the call: the folder holding the `.git` git found from the cwd; null when the call names its git dir. */
  workTree: string | null;
  refusal: string | null;
}

/**
 * The command-line config for a git call with `args` in `cwd`: FIXED, and the drivers of the
 * repository the call reaches (`--git-dir=` when given, else the one git would find from `cwd`).
 */
export function ownedGitConfig(cwd: string, args: readonly string[]): OwnedConfig {
  const found = repositoryOfCall(cwd, args);
  const scanned = found === null ? null : scanGitDir(found.gitDir);
  const env = scanned?.env ?? FIXED_ENV;
  // a repository found from the cwd works on the folder that holds its `.git`: a `core.worktree` a
  // worker set (`/`) never points gaffer's status or add elsewhere
  const workTree =
    found?.top !== undefined && !MAKES_REPOSITORIES.has(args[commandIndex(args)] ?? '') ? found.top : null;
  return { env, workTree, refusal: scanned?.refusal ?? null };
}

/** The environment of FIXED and the drivers' overrides (made once per scan; never mutated). */
function configEnv(drivers: readonly string[]): Readonly<Record<string, string>> {
  const pairs: Array<readonly [string, string]> = [...FIXED];
  for (const name of drivers) {
    pairs.push(
      [`filter.${name}.clean`, ''],
      [`filter.${name}.smudge`, ''],
      [`filter.${name}.process`, ''],
      [`filter.${name}.required`, 'false'],
    );
    pairs.push([`diff.${name}.command`, ''], [`diff.${name}.textconv`, ''], [`merge.${name}.driver`, '']);
  }
  const env: Record<string, string> = {
    GIT_CONFIG_COUNT: String(pairs.length),
    GIT_EDITOR: 'true',
    GIT_SEQUENCE_EDITOR: 'true',
    GIT_PAGER: 'cat',
    GIT_ASKPASS: '',
  };
  pairs.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return Object.freeze(env);
}

const FIXED_ENV = configEnv([]);

/** Commands that make a repository or a worktree of their own: a work tree in the env would be theirs. */
const MAKES_REPOSITORIES = new Set(['init', 'clone', 'worktree']);

/** Porcelain commands that run an external diff or a textconv unless told not to. */
const PORCELAIN_DIFF = new Set(['diff', 'show', 'log', 'whatchanged', 'format-patch', 'range-diff', 'stash']);

/** `args` with `--no-ext-diff --no-textconv` after a porcelain diff command (git's options before it kept). */
export function withoutExternalDiff(args: readonly string[]): string[] {
  const at = commandIndex(args);
  if (at < 0 || !PORCELAIN_DIFF.has(args[at] as string)) return [...args];
  // `stash show`/`stash create` take them on `show` only; the others right after the command
  if (args[at] === 'stash')
    return args[at + 1] === 'show'
      ? [...args.slice(0, at + 2), '--no-ext-diff', '--no-textconv', ...args.slice(at + 2)]
      : [...args];
  const extra = ['--no-ext-diff', '--no-textconv'].filter((flag) => !args.includes(flag));
  return [...args.slice(0, at + 1), ...extra, ...args.slice(at + 1)];
}

/** Index of git's subcommand in `args` (after its global options), -1 when none. */
function commandIndex(args: readonly string[]): number {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (
      a === '-c' ||
      a === '-C' ||
      a === '--git-dir' ||
      a === '--work-tree' ||
      a === '--namespace' ||
      a === '--config-env'
    )
      i++;
    else if (!a.startsWith('-')) return i;
  }
  return -1;
}

/** The git dir a call reaches: its `--git-dir=`, else git's own discovery from `cwd` with the folder holding `.git` (null: none). */
function repositoryOfCall(cwd: string, args: readonly string[]): { gitDir: string; top?: string } | null {
  const at = commandIndex(args);
  const global = at < 0 ? args : args.slice(0, at);
  for (let i = 0; i < global.length; i++) {
    const a = global[i] as string;
    if (a.startsWith('--git-dir=')) return { gitDir: followGitFile(path.resolve(cwd, a.slice('--git-dir='.length))) };
    if (a === '--git-dir' && i + 1 < global.length)
      return { gitDir: followGitFile(path.resolve(cwd, global[i + 1] as string)) };
  }
  try {
    return findGitDir(path.resolve(cwd));
  } catch {
    return null;
  }
}

/** A `--git-dir` that names a `.git` file: the folder its `gitdir:` line names, as git reads it. */
function followGitFile(gitDir: string): string {
  if (statKind(gitDir) !== 'file') return gitDir;
  const pointer = readConfigFile(gitDir)
    .text?.match(/^gitdir: (.+)$/m)?.[1]
    ?.trim();
  return pointer ? path.resolve(path.dirname(gitDir), pointer) : gitDir;
}

/** The config files of a git dir, read again only when one of them changed (stat). */
function scanGitDir(gitDir: string): Scanned {
  const common = safeCommonDir(gitDir);
  const roots = [path.join(common, 'config'), path.join(common, 'config.worktree')];
  if (common !== gitDir) roots.push(path.join(gitDir, 'config'), path.join(gitDir, 'config.worktree'));
  for (const moduleDir of listModules(common))
    roots.push(path.join(moduleDir, 'config'), path.join(moduleDir, 'config.worktree'));
  const cached = scans.get(gitDir);
  if (cached !== undefined && roots.every((r) => cached.files.includes(r)) && cached.stamp === stampFiles(cached.files))
    return cached;
  const drivers = new Set<string>();
  // each file's stat taken before it is read: a change made while it is read shows next time
  const stats = new Map<string, string>();
  let refusal: string | null = null;
  const visit = (file: string, depth: number) => {
    if (refusal !== null || depth > MAX_INCLUDE_DEPTH || stats.has(file)) return;
    stats.set(file, statStamp(file));
    const read = readConfigFile(file);
    if (read.refusal !== null) {
      refusal = read.refusal;
      return;
    }
    if (read.text === null) return;
    for (const m of read.text.matchAll(DRIVER_SECTION)) drivers.add(driverName(m));
    for (const included of includedFiles(read.text, file)) visit(included, depth + 1);
  };
  for (const file of roots) visit(file, 0);
  for (const file of roots) if (!stats.has(file)) stats.set(file, statStamp(file));
  const scanned: Scanned = {
    files: [...stats.keys()],
    stamp: [...stats.values()].join('\0'),
    drivers: [...drivers],
    refusal,
    env: drivers.size === 0 ? FIXED_ENV : configEnv([...drivers]),
  };
  scans.delete(gitDir);
  scans.set(gitDir, scanned);
  if (scans.size > SCANS_MAX) scans.delete(scans.keys().next().value as string);
  return scanned;
}

/** A worktree's common dir, or the git dir itself (a `commondir` gaffer cannot read: the git dir). */
function safeCommonDir(gitDir: string): string {
  if (statKind(path.join(gitDir, 'commondir')) !== 'file') return gitDir;
  try {
    return commonDirOf(gitDir) ?? gitDir;
  } catch {
    return gitDir;
  }
}

/** `modules/<name>` git dirs (nested too), up to MAX_MODULES. */
function listModules(common: string): string[] {
  const out: string[] = [];
  if (statKind(path.join(common, 'modules')) !== 'dir') return out;
  const queue = [path.join(common, 'modules')];
  while (queue.length > 0 && out.length < MAX_MODULES) {
    const dir = queue.shift() as string;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const sub = path.join(dir, name);
      if (statKind(path.join(sub, 'HEAD')) === 'file') {
        out.push(sub);
        queue.push(path.join(sub, 'modules'));
      } else if (statKind(sub) === 'dir') queue.push(sub);
      if (out.length >= MAX_MODULES) break;
    }
  }
  return out;
}

function statKind(file: string): 'file' | 'dir' | 'other' | null {
  let st;
  try {
    st = statSync(file, { throwIfNoEntry: false });
  } catch {
    return null;
  }
  if (st === undefined) return null;
  return st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other';
}

/** The subsection of a driver section header, as git reads it (`\"` and `\\` unescaped; the old `[diff.x]` form lowercased). */
function driverName(m: RegExpMatchArray): string {
  if (m[2] !== undefined) return m[2].replace(/\\(.)/g, '$1');
  return (m[4] as string).toLowerCase();
}

/** Files named by `[include]` and `[includeIf "…"]` `path =` lines (every condition taken as true). */
function includedFiles(text: string, from: string): string[] {
  const out: string[] = [];
  let inInclude = false;
  for (const raw of text.split(/\r?\n/)) {
    const header = /^\s*\[/.test(raw);
    if (header) inInclude = INCLUDE_SECTION.test(raw);
    const line = header ? raw.replace(/^\s*\[[^\]]*\]/, '') : raw;
    if (!inInclude) continue;
    const m = INCLUDE_LINE.exec(line);
    if (!m) continue;
    let value = (m[1] as string)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .replace(/\s*[#;].*$/, '');
    if (value === '') continue;
    if (value.startsWith('~/')) value = path.join(os.homedir(), value.slice(2));
    out.push(path.resolve(path.dirname(from), value));
  }
  return out;
}

/**
 * A config file's text; null when it does not exist; a refusal when git would block on it or swell
 * (bounded-read.ts: a FIFO, a socket, a device, a file past the cap). A link is followed as git
 * follows it, anywhere (`within: /`), or — for a workspace's own `.gitattributes` — only inside it.
 */
function readConfigFile(file: string, within = '/'): { text: string | null; refusal: string | null } {
  const read = readBounded(file, { maxBytes: CONFIG_MAX_BYTES, within });
  if (read.ok) return { text: read.bytes.toString('utf8'), refusal: null };
  if (read.missing || read.why.startsWith('a folder') || read.why.startsWith('a link out'))
    return { text: null, refusal: null };
  return {
    text: null,
    refusal: `git config ${file}: ${read.why}; gaffer runs no git on this repository until it is a plain file (a worker may have left it)`,
  };
}

/** The stats of the files a scan read or looked for: a scan stands while they are the same. */
function stampFiles(files: string[]): string {
  return files.map(statStamp).join('\0');
}

function statStamp(file: string): string {
  try {
    const st = statSync(file, { throwIfNoEntry: false, bigint: true });
    if (st !== undefined) return `${file}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.mode}`;
  } catch {
    // a path through a file (ENOTDIR), a loop: not there
  }
  return `${file}:-`;
}
