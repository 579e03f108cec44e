import { readdir } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { RelatedResult } from './types.js';
import type { Widening } from './widen.js';
import { readWorkspaceText } from '../../platform/files/bounded-read.js';

// What every framework's selection shares: the two answers, reading the workspace tree without child
// processes (so selection stays far cheaper than the suite), and walking an import graph backwards.

/** Workspaces bigger than this run everything rather than block the daemon mapping imports. */
const MAX_FILES = 20_000;

/** The answer that runs everything, with why: every refusal to scope goes through here. */
export const all = (reason: string): RelatedResult => ({ scope: 'all', reason });
/**
 * The selection; `every` names all the tests there are: when the selection holds every one of them it
 * is the full suite, run as the full command (then no confirming full-suite run is needed, spec 03).
 */
export const related = (
  command: string,
  files: Iterable<string>,
  widened: string[],
  every: Iterable<string>,
): RelatedResult => {
  const selected = new Set(files);
  const allTests = [...every];
  if (allTests.length > 0 && allTests.every((t) => selected.has(t)))
    return all('the related tests are all of the tests');
  return {
    scope: 'related',
    selection: {
      command,
      relatedFiles: [...selected].sort(),
      ...(widened.length > 0 ? { widened: [...widened].sort() } : {}),
    },
  };
};
/** Names the first few paths in a reason, so a long change set keeps the reason one line. */
export const list = (paths: string[]) =>
  paths
    .slice(0, 3)
    .map((p) => `\`${p}\``)
    .join(', ') + (paths.length > 3 ? ', …' : '');

// ---- the workspace tree ----

/** The workspace's files, as one walk saw them: each framework filters its tests and sources from it. */
export interface Tree {
  /** Every file, workspace-relative. */
  files: Set<string>;
}

/** Lists the workspace's files, skipping hidden and dependency folders; null past MAX_FILES. */
export async function listFiles(
  workspace: string,
  skipDir: (name: string, entries: string[]) => boolean,
): Promise<Tree | null> {
  const files = new Set<string>();
  let overflow = false;
  const walk = async (dir: string): Promise<void> => {
    if (overflow) return;
    const entries = await readdir(join(workspace, dir), { withFileTypes: true }).catch(() => []);
    const names = entries.map((e) => e.name);
    if (dir && skipDir(posix.basename(dir), names)) return;
    const subdirs: string[] = [];
    for (const entry of entries) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory() && !entry.name.startsWith('.') && !SKIPPED_DIRS.has(entry.name)) subdirs.push(path);
      else if (entry.isFile()) files.add(path);
    }
    if (files.size > MAX_FILES) overflow = true;
    else await Promise.all(subdirs.map(walk));
  };
  await walk('');
  return overflow ? null : { files };
}

const SKIPPED_DIRS = new Set(['node_modules', '__pycache__', 'site-packages']);
/** Why a tree past MAX_FILES runs everything. */
export const TOO_BIG = `the workspace has more than ${MAX_FILES} files; related scope maps imports only in smaller trees`;

/** A Python virtualenv folder: installed code, not the project's, so no walk maps it. */
export const isPythonEnv = (name: string, entries: string[]) => entries.includes('pyvenv.cfg') || name === 'venv';

/** A workspace file's text; empty when it cannot be read (a missing file imports nothing). */
export async function readText(workspace: string, path: string): Promise<string> {
  // a worker's FIFO or link to /dev/zero would hold a thread of the pool for good (issue 32)
  return Promise.resolve(readWorkspaceText(workspace, path) ?? '');
}

/** Reads files in parallel batches: fast, without opening thousands of descriptors at once. */
export async function readAll(workspace: string, paths: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < paths.length; i += 256) {
    const batch = paths.slice(i, i + 256);
    const texts = await Promise.all(batch.map((p) => readText(workspace, p)));
    batch.forEach((p, j) => out.set(p, texts[j] ?? ''));
  }
  return out;
}

/** Files reached backwards from `changed` over `importersOf`, and the changed paths no one imports. */
export function walkBack(
  changed: string[],
  importersOf: (path: string) => Iterable<string>,
): { reached: Set<string>; orphans: string[] } {
  const reached = new Set<string>(changed);
  const queue = [...changed];
  const orphans: string[] = [];
  for (let i = 0; i < queue.length; i++) {
    const path = queue[i] ?? '';
    let imported = false;
    for (const importer of importersOf(path)) {
      imported = true;
      if (!reached.has(importer)) {
        reached.add(importer);
        queue.push(importer);
      }
    }
    if (!imported && i < changed.length) orphans.push(path);
  }
  return { reached, orphans };
}

/** The selected tests plus those untested changes widen to (`added`), or why everything runs. */
export function withWidening(
  selected: string[],
  widening: Widening,
  changed: string[],
  relation = 'imports',
): { tests: string[]; added: string[]; widened: string[] } | { reason: string } {
  if ('reason' in widening) return widening;
  const tests = [...new Set([...selected, ...widening.tests])].sort();
  if (tests.length === 0) return { reason: `no related tests: no test file ${relation} ${list(changed)}` };
  return { tests, added: widening.tests, widened: widening.widened };
}
