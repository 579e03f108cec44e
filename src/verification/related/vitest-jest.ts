import { shellQuote } from '../select.js';
import { findImporters, JS_CODE } from './js-imports.js';
import { splitArgs } from './script.js';
import { all, list, related, type Tree, withWidening } from './shared.js';
import type { RelatedResult } from './types.js';
import { widenForUntested } from './widen.js';

// vitest and jest map imports themselves (aliases included): gaffer passes the changed files to
// `vitest related` / `jest --findRelatedTests` and reads the import graph only to name what will run.

// flags whose value is the next word; any other flag is taken as a switch
const VALUE_FLAGS: Record<'vitest' | 'jest', Set<string>> = {
  vitest: new Set([
    '-c',
    '--config',
    '-r',
    '--root',
    '--dir',
    '--reporter',
    '--outputFile',
    '--project',
    '--environment',
    '--pool',
    '--mode',
    '--testTimeout',
    '--hookTimeout',
    '--maxWorkers',
    '--minWorkers',
    '--shard',
    '-t',
    '--testNamePattern',
    '--exclude',
    '--bail',
    '--retry',
    '--sequence.seed',
    '--teardownTimeout',
    '--maxConcurrency',
    '--coverage.provider',
    '--coverage.reporter',
    '--coverage.reportsDirectory',
  ]),
  jest: new Set([
    '-c',
    '--config',
    '--rootDir',
    '--roots',
    '--reporters',
    '-w',
    '--maxWorkers',
    '--testTimeout',
    '--selectProjects',
    '--shard',
    '-t',
    '--testNamePattern',
    '--testPathIgnorePatterns',
    '--outputFile',
    '--coverageDirectory',
    '--testEnvironment',
    '--maxConcurrency',
    '--seed',
    '--coverageProvider',
    '--setupFiles',
    '--setupFilesAfterEach',
    '--projects',
  ]),
};

const VITEST_OTHER = new Set(['bench', 'list', 'typecheck', 'init', 'related']);
// related scope runs once: watch switches go (jest's `-w` is --maxWorkers and stays)
const WATCH_FLAGS = { vitest: new Set(['--run', '--watch', '-w']), jest: new Set(['--watch', '--watchAll']) };
/** vitest's and jest's default test files. */
const FRAMEWORK_TEST = /(?:\.(?:test|spec)\.[cm]?[jt]sx?$)|(?:(?:^|\/)__tests__\/.*\.[cm]?[jt]sx?$)/;

/** The related run for a scripts.test that runs vitest or jest: its flags kept, the changed files as targets. */
export async function selectVitestOrJest(
  workspace: string,
  tree: Tree,
  changed: string[],
  run: { env: string[]; exec: string; binary: 'vitest' | 'jest'; args: string[] },
): Promise<RelatedResult> {
  const { binary, args } = run;
  const sub = binary === 'vitest' && ['run', 'watch', 'dev'].includes(args[0] ?? '') ? args.slice(1) : args;
  if (binary === 'vitest' && VITEST_OTHER.has(sub[0] ?? ''))
    return all(`scripts.test runs \`vitest ${sub[0] ?? ''}\`, not the test suite`);
  const { flags, positionals } = splitArgs(sub, VALUE_FLAGS[binary]);
  if (positionals.length > 0)
    return all(`scripts.test filters which tests run (${list(positionals)}); related scope cannot keep that filter`);
  const kept = flags.filter((f) => !WATCH_FLAGS[binary].has(f));
  const isTest = (p: string) => FRAMEWORK_TEST.test(p);
  const tests = [...tree.files].filter(isTest);
  const found = await findImporters(workspace, tree, tests, changed);
  const untested = found.orphans.filter((p) => !isTest(p));
  const selected = withWidening(found.tests, widenForUntested({ files: tree.files, tests, untested, isTest }), changed);
  if ('reason' in selected) return all(selected.reason);
  // the framework maps imports itself (aliases included); a deleted file is passed as the tests that imported it;
  // a test file passed as a target runs itself, which is how a package's tests are added
  const deleted = changed.filter((p) => JS_CODE.test(p) && !tree.files.has(p));
  const targets = [
    ...changed.filter((p) => tree.files.has(p)),
    ...(deleted.length > 0 ? found.tests : []),
    ...selected.added,
  ];
  const runner =
    binary === 'vitest' ? ['vitest', 'related', '--run', ...kept] : ['jest', ...kept, '--findRelatedTests'];
  return related(
    [...run.env, run.exec, ...runner.map(shellQuote), ...[...new Set(targets)].map(shellQuote)].join(' '),
    selected.tests,
    selected.widened,
    tests,
  );
}
