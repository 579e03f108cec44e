import { isAbsolute, posix, relative } from 'node:path';
import { selectGo } from './go.js';
import { selectNode } from './node.js';
import { selectPytest } from './pytest.js';
import { whyEverything } from './runs-everything.js';
import { all } from './shared.js';
import type { RelatedResult, RelatedSelection } from './types.js';

// spec 03 "Scope": `verify_scope: "related"` runs the tests related to the changed files, or says why it ran
// everything. Selection reads files itself (no child processes) so it stays far cheaper than the suite.
// This file is the dispatch; each framework's selection is its own file (node.ts for package.json's
// scripts.test: vitest-jest.ts, node-test.ts; pytest.ts; go.ts).

export type { RelatedResult, RelatedSelection };

const UNSUPPORTED: Record<string, string> = {
  configured: 'a configured verify command runs exactly as given',
  cargo: 'cargo can filter tests by name, not by changed file; related scope runs everything',
  make: 'gaffer cannot see which tests `make test` runs; related scope runs everything',
};

/**
 * Selects the tests related to the changed paths for an auto-detected runner, or says why everything runs.
 * Every changed file is accounted for: a changed test runs itself; a file a test imports, directly or through
 * other modules, runs that test; a file no test imports widens the run to the tests of its package (the
 * nearest enclosing folder with its own package.json, pyproject.toml, setup.py or go.mod; for go, its own
 * package), and to everything when it has no package or the package has no tests. Only files that cannot
 * affect a test (docs, images, LICENSE, CHANGELOG) widen nothing.
 */
export async function selectRelatedTests(opts: {
  workspace: string;
  kind: string;
  command: string;
  changedPaths: string[];
}): Promise<RelatedResult> {
  const unsupported = UNSUPPORTED[opts.kind];
  if (unsupported !== undefined) return all(unsupported);
  const changed = normalizePaths(opts.workspace, opts.changedPaths);
  if (changed.length === 0) return all('no changed files to relate tests to');
  for (const path of changed) {
    const why = whyEverything(path);
    if (why !== null) return all(`\`${path}\` changed: ${why}`);
  }
  try {
    if (opts.kind === 'node') return await selectNode(opts.workspace, opts.command, changed);
    if (opts.kind === 'pytest') return await selectPytest(opts.workspace, opts.command, changed);
    if (opts.kind === 'go') return await selectGo(opts.workspace, opts.command, changed);
    return all(`the detector cannot select related tests for kind \`${opts.kind}\``);
  } catch (error) {
    // an unreadable tree is not a verdict on the work: run everything
    return all(`related tests could not be mapped: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function normalizePaths(workspace: string, paths: string[]): string[] {
  const out = new Set<string>();
  for (const raw of paths) {
    const rel = isAbsolute(raw) ? relative(workspace, raw) : raw;
    const path = posix
      .normalize(rel.replace(/\\/g, '/'))
      .replace(/^(\.\/)+/, '')
      .replace(/\/$/, '');
    if (path && path !== '.' && !path.startsWith('../')) out.add(path);
  }
  return [...out].sort();
}
