import { basename } from 'node:path';
import { runGit, splitNul } from '../evidence/git.js';
import type { ChangeSet } from '../evidence/types.js';
import type { Snapshot } from '../domain/snapshot.js';
import { readWorkspaceText } from '../platform/files/bounded-read.js';

// spec 03 "Hints from before the work; the checkpoint's tests judge": a worker's change to a test, to the
// test runner's configuration, or to anything gaffer reads to decide how to verify is a test-harness change.

/** Test files: the tests themselves, their fixtures and their recorded expectations. */
const TEST_FILE_RULES: readonly RegExp[] = [
  /(^|\/)(test|tests|__tests__|spec|specs)\//,
  // jest/vitest snapshots: the expectations, read by the test runner without the test naming them
  /(^|\/)__snapshots__\//,
  /\.snap$/,
  /\.(test|spec)\.[cm]?[jt]sx?$/,
  /_test\.go$/,
  /(^|\/)test_[^/]*\.py$/,
  /_test\.py$/,
  /(^|\/)conftest\.py$/,
];

/** Test files and runner configuration: edits to them can make a suite pass by asking less. */
const TEST_PATH_RULES: readonly RegExp[] = [
  ...TEST_FILE_RULES,
  /(^|\/)(vitest|vite|jest|playwright|ava|karma)\.config\.[cm]?[jt]s$/,
  /(^|\/)(vitest|jest)\.workspace\.[cm]?[jt]s$/,
  /(^|\/)jest\.config\.json$/,
  /(^|\/)\.mocharc(\.[a-z]+)?$/,
  /(^|\/)\.taprc$/,
  /(^|\/)\.c8rc(\.json)?$/,
  /(^|\/)\.nycrc/,
  /(^|\/)(pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py)$/,
  /(^|\/)(GNUmakefile|[Mm]akefile)$/,
  /(^|\/)(deno\.jsonc?|bunfig\.toml|go\.work|\.?pytest\.toml)$/,
  // what decides how the runner itself starts: `script-shell=true` in .npmrc makes `npm test` pass without
  // running anything, a cargo `runner`, a module that shadows pytest on `python -m pytest`'s sys.path
  /(^|\/)(\.npmrc|\.yarnrc|\.yarnrc\.yml|\.pnpmfile\.cjs)$/,
  /(^|\/)\.cargo\/config(\.toml)?$/,
  /^(pytest|_pytest|unittest|sitecustomize|usercustomize)(\.py$|\/)/,
  // the only workspace file gaffer itself reads to decide how to verify (spec 07 hints)
  /^\.gaffer\/workspace\.json$/,
];

/** `package.json` keys that change what `npm test` runs or how the test runner behaves. */
const PACKAGE_TEST_KEYS = [
  'jest',
  'ava',
  'mocha',
  'tap',
  'c8',
  'nyc',
  'vitest',
  'jasmine',
  'type',
  'imports',
  'workspaces',
];

/** One test or harness path the workers changed, with how it changed. */
export interface HarnessChange {
  path: string;
  change: 'added' | 'modified' | 'deleted';
}

/** Whether a path is a test file (not the runner's configuration) by its name alone: what spec 06's write policy protects. */
export function isTestFilePath(path: string): boolean {
  return TEST_FILE_RULES.some((rule) => rule.test(path));
}

/** Whether a path is a test file or test-runner configuration by its name alone. */
export function isTestOrHarnessPath(path: string): boolean {
  return TEST_PATH_RULES.some((rule) => rule.test(path));
}

/** `test/x.js`, `test/new.test.js (added)`: how a changed harness file is named in the answer. */
export function describeHarnessChange(c: HarnessChange): string {
  return c.change === 'modified' ? c.path : `${c.path} (${c.change})`;
}

/**
 * The test and harness files the workers changed. A `package.json` counts when its scripts or a
 * test-runner key differ from the checkpoint's (a dependency bump does not).
 */
export async function findHarnessChanges(
  changes: ChangeSet,
  pre: Snapshot | null,
  workspace: string,
): Promise<HarnessChange[]> {
  const found: HarnessChange[] = [];
  const kinds = [
    ['added', changes.added],
    ['modified', changes.modified],
    ['deleted', changes.deleted],
  ] as const;
  const data: HarnessChange[] = [];
  for (const [change, paths] of kinds) {
    for (const path of paths) {
      if (isTestOrHarnessPath(path)) found.push({ path, change });
      else if (/(^|\/)package\.json$/.test(path)) {
        if (change !== 'modified' || (await packageTestKeysDiffer(path, pre, workspace))) found.push({ path, change });
      } else if (change !== 'added' && DATA_FILE.test(path)) data.push({ path, change });
    }
  }
  if (data.length > 0 && pre !== null) found.push(...(await onlyTestsRead(data, pre, workspace)));
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * issue 32: ignore rules the workers wrote that hid a file a test runner would load are a harness
 * change, and so is that file: the checkpoint's tests then run in a copy without it (and with the
 * checkpoint's ignore files). A file the runner loads by itself is one with a test or harness name
 * (a test file, `conftest.py`, a runner config, `sitecustomize.py`, …). Hidden code the project
 * imports (generated sources a worker ignores) stays the code's: it is evidence and named, and the
 * copy keeps it, so an honest generator is not failed by its own output going missing.
 */
export function withHiddenByIgnore(found: HarnessChange[], changes: ChangeSet, post: Snapshot | null): HarnessChange[] {
  const hidden = (post?.hiddenByIgnore ?? []).filter((p) => isTestOrHarnessPath(p));
  if (hidden.length === 0) return found;
  const have = new Set(found.map((h) => h.path));
  const more: HarnessChange[] = [];
  const added = new Set(changes.added);
  const modified = new Set(changes.modified);
  for (const p of hidden)
    if (!have.has(p) && (added.has(p) || modified.has(p)))
      more.push({ path: p, change: added.has(p) ? 'added' : 'modified' });
  for (const [change, paths] of [
    ['added', changes.added],
    ['modified', changes.modified],
    ['deleted', changes.deleted],
  ] as const) {
    for (const p of paths)
      if ((p === '.gitignore' || p.endsWith('/.gitignore')) && !have.has(p)) more.push({ path: p, change });
  }
  if (more.length === 0) return found;
  return [...found, ...more].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Data a test may keep its expectations in (`data/expected.json`, `fixtures.yaml`, a `.snap`). */
const DATA_FILE = /\.(json|jsonc|ya?ml|txt|csv|tsv|snap|xml)$/i;
/** Source files whose text can name a data file. */
const CODE_FILE = /\.([cm]?[jt]sx?|py|go|rs|rb|java|kt|php|cs|swift|sh)$/;
/** How many code files are read to find who names a changed data file (only when one changed). */
const CODE_FILES_READ = 5_000;
const CODE_FILE_BYTES = 512 * 1024;
const CODE_BYTES_READ = 32 * 1024 * 1024;

/**
 * Changed data files that the checkpoint's tests name and no other code does: the expectations of a
 * test kept beside the code (`data/expected.json` read by `test/math.test.js`). A worker that edits
 * them changes the tests, so they are put back for the original tests like any test file. A data
 * file the code itself reads (a config, a table) stays the code's.
 */
async function onlyTestsRead(candidates: HarnessChange[], pre: Snapshot, workspace: string): Promise<HarnessChange[]> {
  if (pre.source !== 'checkpoint' || !pre.gitDir) return [];
  const listed = await runGit([`--git-dir=${pre.gitDir}`, 'ls-tree', '-r', '-z', '--name-only', pre.id], {
    cwd: workspace,
    timeoutMs: 30_000,
  });
  if (listed.exitCode !== 0) return [];
  const code = splitNul(listed.stdout)
    .filter((p) => CODE_FILE.test(p))
    .slice(0, CODE_FILES_READ);
  const named = new Map(candidates.map((c) => [c, { byTests: false, byCode: false }]));
  let budget = CODE_BYTES_READ;
  for (const file of code) {
    const text = readWorkspaceText(workspace, file, Math.min(CODE_FILE_BYTES, budget));
    if (text === null) continue;
    budget -= Buffer.byteLength(text);
    const isTest = isTestOrHarnessPath(file);
    for (const [c, seen] of named) if (text.includes(basename(c.path))) seen[isTest ? 'byTests' : 'byCode'] = true;
  }
  return candidates.filter((c) => {
    const seen = named.get(c);
    return seen !== undefined && seen.byTests && !seen.byCode;
  });
}

async function packageTestKeysDiffer(path: string, pre: Snapshot | null, workspace: string): Promise<boolean> {
  const before = pre ? await readCheckpointFile(pre, path) : null;
  const after = readWorkspaceText(workspace, path);
  // unreadable on either side: the conservative answer
  if (before === null || after === null) return true;
  const pick = (text: string): string | null => {
    try {
      const json = JSON.parse(text) as Record<string, unknown>;
      return JSON.stringify([json.scripts ?? null, ...PACKAGE_TEST_KEYS.map((k) => json[k] ?? null)]);
    } catch {
      return null;
    }
  };
  const a = pick(before);
  const b = pick(after);
  return a === null || b === null || a !== b;
}

/** A file's content at the checkpoint; null when it was not there or the checkpoint holds no content. */
export async function readCheckpointFile(pre: Snapshot, path: string): Promise<string | null> {
  if (pre.source !== 'checkpoint' || !pre.gitDir) return null;
  const result = await runGit([`--git-dir=${pre.gitDir}`, 'cat-file', 'blob', `${pre.id}:${path}`], {
    cwd: pre.workspace,
    timeoutMs: 30_000,
  });
  return result.exitCode === 0 ? result.stdout.toString('utf8') : null;
}
