import { comparePathOrder } from './diff.js';
import type { HarnessRecord } from './harness-packages.js';
import {
  outsideRecordOf,
  outsideRecordsBeside,
  type FileMark,
  type FolderRecord,
  type OutsideRecord,
} from './outside-evidence.js';
import { isExecutableGitKey } from './git-owned-config.js';
import { sortPaths } from './paths.js';
import type { Snapshot } from '../domain/snapshot.js';
import type { ExcludedFolderCounts, OutsideEvidenceJson } from '../domain/changes.js';

/** Each list in `outside_evidence` names at most this many (the counts stay exact). */
export const OUTSIDE_LIST_CAP = 10;

/** One thing that changed between two records. */
interface OutsideChange {
  /** Identity across records (a named file, a file of an excluded folder, a folder's top entry). */
  key: string;
  /** `git`, `editor` and `harness` entries are named; `excluded` ones are counted per folder. */
  group: 'git' | 'editor' | 'harness' | 'excluded';
  /** The entry as reported (named groups), or the folder (excluded). */
  text: string;
  change: 'added' | 'modified' | 'deleted';
  /** The folder was compared only in part (its budget ran out, on either side). */
  partial?: boolean;
  /** A git config or attributes file: the keys now set that make git run a program (issue 32). */
  code?: string[];
}

/**
 * `changes.outside_evidence` between two snapshots: what changed in the repository's hooks,
 * config and info, the editor configs, and the excluded folders; null when nothing did (or
 * neither snapshot has a record: taken before gaffer kept one). What only a verification wrote
 * (a step ending in a `verify-…` snapshot, as the engine labels them) is not blamed on the
 * workers: it is counted in `verification_wrote`.
 */
export function outsideEvidenceOf(before: Snapshot, after: Snapshot): OutsideEvidenceJson | null {
  if (before.outsideRecord === undefined && after.outsideRecord === undefined) return null;
  const first = before.outsideRecord === undefined ? null : outsideRecordOf(before.outsideRecord);
  const last = after.outsideRecord === undefined ? null : outsideRecordOf(after.outsideRecord);
  if (first === null || last === null) {
    const missing = first === null ? 'the checkpoint' : 'the snapshot after the work';
    return { count: 0, unavailable: `${missing} has no record of the places outside the evidence` };
  }
  const key = `${before.outsideRecord}@${first.takenAtMs}|${after.outsideRecord}@${last.takenAtMs}`;
  const cached = results.get(key);
  if (cached !== undefined) return cached;
  const result = computeOutsideEvidence(after.outsideRecord as string, first, last);
  remember(results, key, result);
  return result;
}

function computeOutsideEvidence(
  afterKey: string,
  first: OutsideRecord,
  last: OutsideRecord,
): OutsideEvidenceJson | null {
  const net = diffRecords(first, last);
  if (net.length === 0) return null;
  const byVerification = verificationOnlyKeys(afterKey, first, last);
  const kept = net.filter((c) => !byVerification.has(c.key));
  return toJson(kept, net.length - kept.length);
}

/** Keys that changed only in steps ending in a `verify-…` record between the two (spec 03: never blamed on workers). */
function verificationOnlyKeys(afterKey: string, first: OutsideRecord, last: OutsideRecord): Set<string> {
  const beside = outsideRecordsBeside(afterKey);
  if (!beside.includes(first) || !beside.some((r) => r.label.startsWith('verify-'))) return new Set();
  const chain = beside
    .filter((r) => r.takenAtMs > first.takenAtMs && r.takenAtMs < last.takenAtMs)
    .sort((a, b) => a.takenAtMs - b.takenAtMs);
  const steps = [first, ...chain, last];
  const byWorkers = new Set<string>();
  const byVerification = new Set<string>();
  for (let i = 1; i < steps.length; i++) {
    const end = steps[i] as OutsideRecord;
    const into = end.label.startsWith('verify-') ? byVerification : byWorkers;
    for (const c of diffRecords(steps[i - 1] as OutsideRecord, end)) into.add(c.key);
  }
  for (const k of byWorkers) byVerification.delete(k);
  return byVerification;
}

/** What changed from one record to a later one of the same workspace. */
export function diffRecords(a: OutsideRecord, b: OutsideRecord): OutsideChange[] {
  const out: OutsideChange[] = [];
  for (const p of sortPaths(new Set([...Object.keys(a.files), ...Object.keys(b.files)]))) {
    const change = describeFileChange(p, a.files[p], b.files[p]);
    if (change !== null) out.push(change);
  }
  for (const folder of sortPaths(new Set([...Object.keys(a.folders), ...Object.keys(b.folders)]))) {
    diffFolder(folder, a.folders[folder], b.folders[folder], out);
  }
  diffHarness(a.harness, b.harness, out);
  return out;
}

/**
 * The harness packages compared file by file, by content: every path of a package both records hold
 * whole (one the file cap cut short: the paths both hold); a package recorded on one side only is a
 * change of its own (a framework installed, removed or swapped for a link).
 */
function diffHarness(a: HarnessRecord | undefined, b: HarnessRecord | undefined, out: OutsideChange[]): void {
  if (a === undefined && b === undefined) return;
  const before = a ?? EMPTY_HARNESS;
  const after = b ?? EMPTY_HARNESS;
  const rootsBefore = new Set(before.roots);
  const rootsAfter = new Set(after.roots);
  const cut = new Set([before.cut, after.cut].filter((c): c is string => c !== undefined));
  const found: OutsideChange[] = [];
  const push = (p: string, change: OutsideChange['change']) =>
    found.push({ key: `h:${p}`, group: 'harness', text: `${p} (${change})`, change });
  for (const root of sortPaths(new Set([...before.roots, ...after.roots]))) {
    if (rootsBefore.has(root) && rootsAfter.has(root)) continue;
    push(root, rootsBefore.has(root) ? 'deleted' : 'added');
  }
  for (const p of sortPaths(new Set([...Object.keys(before.files), ...Object.keys(after.files)]))) {
    const root = rootOf(p, rootsBefore);
    if (root === null || !rootsAfter.has(root)) continue;
    const was = before.files[p];
    const now = after.files[p];
    if (was === now) continue;
    if (was === undefined || now === undefined) {
      if (!cut.has(root)) push(p, was === undefined ? 'added' : 'deleted');
    } else push(p, 'modified');
  }
  const order = new Map(found.map((c) => [c.text, c]));
  for (const text of sortPaths(order.keys())) out.push(order.get(text) as OutsideChange);
}

const EMPTY_HARNESS: HarnessRecord = { files: {}, roots: [] };

/** The root a path was recorded under (the root itself, or a folder above it). */
function rootOf(p: string, roots: ReadonlySet<string>): string | null {
  for (let at = p.length; at > 0; at = p.lastIndexOf('/', at - 1)) {
    const candidate = p.slice(0, at);
    if (roots.has(candidate)) return candidate;
  }
  return null;
}

const EXEC_BITS = 0o111;
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

function describeFileChange(
  p: string,
  before: FileMark | undefined,
  after: FileMark | undefined,
): OutsideChange | null {
  const mark = after ?? before;
  if (mark === undefined) return null;
  const group = mark.group === 'editor' ? 'editor' : 'git';
  const hook = mark.group === 'hook';
  const code = executableKeysSet(before?.keys, after?.keys);
  const entry = (change: OutsideChange['change'], details: string[]): OutsideChange => ({
    key: `f:${p}`,
    group,
    text: `${p} (${details.join(', ')})`,
    change,
    ...(code.length > 0 ? { code } : {}),
  });
  if (before === undefined && after !== undefined) {
    const details = ['added'];
    if ((after.mode & S_IFMT) === S_IFLNK) details.push('symlink');
    else if (hook && (after.mode & EXEC_BITS) !== 0) details.push('executable');
    return entry('added', details);
  }
  if (after === undefined) return entry('deleted', ['deleted']);
  if (before === undefined || (before.hash === after.hash && before.mode === after.mode)) return null;
  const details: string[] = [];
  const wasExec = (before.mode & EXEC_BITS) !== 0;
  const isExec = (after.mode & EXEC_BITS) !== 0;
  if (before.hash !== after.hash) {
    const keys = changedKeys(before.keys, after.keys);
    details.push(keys.length > 0 ? `modified: ${keys.join(', ')}` : 'modified');
  }
  if (hook && wasExec !== isExec) details.push(isExec ? 'made executable' : 'no longer executable');
  else if (hook && isExec) details.push('executable');
  if (details.length === 0) details.push('mode changed');
  return entry('modified', details);
}

/** Keys after that run a program (a config's `filter.x.clean`, an attributes file's `filter=x`) and were not so before. */
function executableKeysSet(
  before: Record<string, string> | undefined,
  after: Record<string, string> | undefined,
): string[] {
  if (after === undefined) return [];
  return sortPaths(new Set(Object.keys(after))).filter(
    (k) => (isExecutableGitKey(k) || /^(filter|diff|merge)=/.test(k)) && before?.[k] !== after[k],
  );
}

/** Config keys added, removed or given other values; at most 5 named. */
function changedKeys(before: Record<string, string> | undefined, after: Record<string, string> | undefined): string[] {
  if (before === undefined || after === undefined) return [];
  const keys = sortPaths(new Set([...Object.keys(before), ...Object.keys(after)])).filter(
    (k) => before[k] !== after[k],
  );
  return keys.length > 5 ? [...keys.slice(0, 5), `+${keys.length - 5} more`] : keys;
}

/**
 * An excluded folder compared entry by entry (its top entries: the packages of a
 * `node_modules`): the files both records hold for an entry by stat, up to where the shorter
 * walk stopped; an entry whose walk was cut on either side and shows no such change still
 * counts once when its own stat changed (its mtime moves when a file is added, removed or
 * renamed directly in it; an in-place edit deeper than the walk reached is not seen).
 */
function diffFolder(
  folder: string,
  a: FolderRecord | undefined,
  b: FolderRecord | undefined,
  out: OutsideChange[],
): void {
  const before = a ?? EMPTY_FOLDER;
  const after = b ?? EMPTY_FOLDER;
  const partial =
    before.cut !== undefined || after.cut !== undefined || before.overflow === true || after.overflow === true;
  const push = (key: string, change: OutsideChange['change']) =>
    out.push({ key, group: 'excluded', text: folder, change, ...(partial ? { partial } : {}) });
  const filesBefore = byTopEntry(folder, before.files);
  const filesAfter = byTopEntry(folder, after.files);
  const names = new Set([
    ...Object.keys(before.top),
    ...Object.keys(after.top),
    ...filesBefore.keys(),
    ...filesAfter.keys(),
  ]);
  for (const name of sortPaths(names)) {
    const bound = shorterWalk(before.cut?.[name], after.cut?.[name]);
    const inRange = (p: string) => bound === null || (bound !== '' && breadthFirstOrder(p, bound) <= 0);
    const was = filesBefore.get(name) ?? [];
    const now = new Map(filesAfter.get(name) ?? []);
    let seen = 0;
    for (const [p, sig] of was) {
      if (!inRange(p)) continue;
      const current = now.get(p);
      if (current === undefined) push(`x:${p}`, 'deleted');
      else if (current !== sig) push(`x:${p}`, 'modified');
      else continue;
      seen++;
    }
    const old = new Set(was.map(([p]) => p));
    for (const p of now.keys()) {
      if (!inRange(p) || old.has(p)) continue;
      push(`x:${p}`, 'added');
      seen++;
    }
    if (seen > 0 || bound === null) continue;
    const topBefore = before.top[name];
    const topAfter = after.top[name];
    if (topBefore === topAfter) continue;
    push(`t:${folder}/${name}`, topBefore === undefined ? 'added' : topAfter === undefined ? 'deleted' : 'modified');
  }
}

const EMPTY_FOLDER: FolderRecord = { files: {}, top: {} };

/** A folder's recorded files grouped by top entry name, in walk order. */
function byTopEntry(folder: string, files: Record<string, string>): Map<string, Array<[string, string]>> {
  const groups = new Map<string, Array<[string, string]>>();
  for (const [p, sig] of Object.entries(files)) {
    const name = p.slice(folder.length + 1).split('/')[0] as string;
    let group = groups.get(name);
    if (group === undefined) groups.set(name, (group = []));
    group.push([p, sig]);
  }
  return groups;
}

/** Where the shorter of two cut walks stopped: null when neither was cut, '' when one recorded nothing. */
function shorterWalk(x: string | undefined, y: string | undefined): string | null {
  if (x === undefined) return y ?? null;
  if (y === undefined) return x;
  return x === '' || y === '' ? '' : breadthFirstOrder(x, y) <= 0 ? x : y;
}

/** The order of a breadth-first walk with sorted names: shallower first, then path order. */
function breadthFirstOrder(a: string, b: string): number {
  const depth = (p: string) => p.split('/').length;
  return depth(a) - depth(b) || comparePathOrder(a, b);
}

function toJson(kept: OutsideChange[], verificationWrote: number): OutsideEvidenceJson {
  let truncated = false;
  const capped = <T>(list: T[]): T[] => {
    if (list.length > OUTSIDE_LIST_CAP) truncated = true;
    return list.slice(0, OUTSIDE_LIST_CAP);
  };
  const git = capped(kept.filter((c) => c.group === 'git').map((c) => c.text));
  const editor = capped(kept.filter((c) => c.group === 'editor').map((c) => c.text));
  const gitCode = capped(
    kept.filter((c) => c.code !== undefined).map((c) => `${c.key.slice(2)}: ${(c.code ?? []).join(', ')}`),
  );
  const dependencies = capped(kept.filter((c) => c.group === 'harness').map((c) => c.text));
  const folders = new Map<string, ExcludedFolderCounts>();
  for (const c of kept) {
    if (c.group !== 'excluded') continue;
    let counts = folders.get(c.text);
    if (counts === undefined) folders.set(c.text, (counts = { added: 0, modified: 0, deleted: 0 }));
    counts[c.change]++;
    if (c.partial === true) counts.partial = true;
  }
  const excluded = capped(sortPaths(folders.keys())).map((n) => [n, folders.get(n) as ExcludedFolderCounts] as const);
  return {
    ...(git.length > 0 ? { git } : {}),
    ...(editor.length > 0 ? { editor } : {}),
    ...(gitCode.length > 0 ? { git_code: gitCode } : {}),
    ...(dependencies.length > 0 ? { dependencies } : {}),
    ...(excluded.length > 0 ? { excluded: Object.fromEntries(excluded) } : {}),
    count: kept.length,
    ...(truncated ? { truncated: true as const } : {}),
    ...(verificationWrote > 0 ? { verification_wrote: verificationWrote } : {}),
  };
}

// ---- reading records ----------------------------------------------------------------------

const CACHE_MAX = 64;
const results = new Map<string, OutsideEvidenceJson | null>();

function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
}
