import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGit } from '../evidence/git.js';
import type { ChangeSet, Snapshot } from '../evidence/types.js';

// spec 03 "Hints from before the work; the checkpoint's tests judge": a worker's change to a test, to the
// test runner's configuration, or to anything gaffer reads to decide how to verify is a test-harness change.

/** Test files and runner configuration: edits to them can make a suite pass by asking less. */
const TEST_PATH_RULES: readonly RegExp[] = [
  /(^|\/)(test|tests|__tests__|spec|specs)\//,
  /\.(test|spec)\.[cm]?[jt]sx?$/,
  /_test\.go$/,
  /(^|\/)test_[^/]*\.py$/,
  /_test\.py$/,
  /(^|\/)conftest\.py$/,
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
const PACKAGE_TEST_KEYS = ['jest', 'ava', 'mocha', 'tap', 'c8', 'nyc', 'vitest', 'jasmine', 'type', 'imports', 'workspaces'];

/** One test or harness path the workers changed, with how it changed. */
export interface HarnessChange {
  path: string;
  change: 'added' | 'modified' | 'deleted';
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
export async function findHarnessChanges(changes: ChangeSet, pre: Snapshot | null, workspace: string): Promise<HarnessChange[]> {
  const found: HarnessChange[] = [];
  const kinds = [
    ['added', changes.added],
    ['modified', changes.modified],
    ['deleted', changes.deleted],
  ] as const;
  for (const [change, paths] of kinds) {
    for (const path of paths) {
      if (isTestOrHarnessPath(path)) found.push({ path, change });
      else if (/(^|\/)package\.json$/.test(path) && (change !== 'modified' || (await packageTestKeysDiffer(path, pre, workspace)))) found.push({ path, change });
    }
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function packageTestKeysDiffer(path: string, pre: Snapshot | null, workspace: string): Promise<boolean> {
  const before = pre ? await readCheckpointFile(pre, path) : null;
  let after: string | null = null;
  try {
    after = readFileSync(join(workspace, path), 'utf8');
  } catch {
    after = null;
  }
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
  const result = await runGit([`--git-dir=${pre.gitDir}`, 'cat-file', 'blob', `${pre.id}:${path}`], { cwd: pre.workspace, timeoutMs: 30_000 });
  return result.exitCode === 0 ? result.stdout.toString('utf8') : null;
}
