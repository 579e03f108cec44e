import { posix } from 'node:path';
import { shellQuote } from '../select.js';
import { findImporters } from './js-imports.js';
import { splitArgs } from './script.js';
import { all, related, type Tree, withWidening } from './shared.js';
import type { RelatedResult } from './types.js';
import { widenForUntested } from './widen.js';

// node --test has no related mode: gaffer reads the import graph itself and runs the selected test files,
// keeping the script's flags and honouring its positionals (files, folders, globs) as the set of tests.

// flags whose value is the next word; any other flag is taken as a switch
const VALUE_FLAGS = new Set([
  '--import',
  '--require',
  '-r',
  '--loader',
  '--experimental-loader',
  '--test-reporter',
  '--test-reporter-destination',
  '--test-concurrency',
  '--test-name-pattern',
  '--test-skip-pattern',
  '--test-timeout',
  '--test-shard',
  '--env-file',
  '--conditions',
  '-C',
  '--input-type',
  '--test-isolation',
  '--experimental-test-isolation',
  '--stack-size',
  '--max-old-space-size',
  '--title',
]);
/** node --test's default test files (Node 20–22): `*.test.js`, `*-test.js`, `*_test.js`, `test-*.js`, `test.js`, `test/**`. */
const NODE_TEST_NAME = /(?:^|\/)(?:test|test-[^/]+|[^/]+[.\-_]test)\.[^/.]+$|(?:^|\/)test\//;
const TS_LOADER = /tsx|ts-node|strip-types|transform-types|@swc-node|esbuild-register|\.ts\b/;

/** The related run for a scripts.test that runs `node --test` (or `tsx --test`): the selected test files as its arguments. */
export async function selectNodeTest(
  workspace: string,
  tree: Tree,
  changed: string[],
  run: { env: string[]; binary: string; args: string[] },
): Promise<RelatedResult> {
  const { flags, positionals } = splitArgs(run.args, VALUE_FLAGS);
  const typescript =
    run.binary !== 'node' ||
    TS_LOADER.test(run.args.join(' ')) ||
    Boolean((process.features as { typescript?: unknown }).typescript);
  const ext = typescript ? /\.[cm]?[jt]sx?$/ : /\.[cm]?jsx?$/;
  const byName = (p: string) => NODE_TEST_NAME.test(p) && ext.test(p);
  const matchers = positionals.map((arg): ((p: string) => boolean) => {
    const path = posix.normalize(arg).replace(/^\.\//, '').replace(/\/$/, '');
    if (/[*?[{]/.test(path)) {
      const glob = globToRegex(path);
      return (p) => glob.test(p);
    }
    if (tree.files.has(path)) return (p) => p === path;
    return (p) => (path === '.' || p.startsWith(`${path}/`)) && byName(p);
  });
  const isTest = (p: string) => (matchers.length > 0 ? matchers.some((m) => m(p)) : byName(p));
  const tests = [...tree.files].filter(isTest);
  const found = await findImporters(workspace, tree, tests, changed);
  const untested = found.orphans.filter((p) => !isTest(p));
  const selected = withWidening(found.tests, widenForUntested({ files: tree.files, tests, untested, isTest }), changed);
  if ('reason' in selected) return all(selected.reason);
  return related(
    [...run.env, run.binary, ...flags.map(shellQuote), ...selected.tests.map(shellQuote)].join(' '),
    selected.tests,
    selected.widened,
    tests,
  );
}

/** A glob as node --test and shells read it: `*`, `**`, `?`, `{a,b}`, `?(a|b)`. */
function globToRegex(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? '';
    if (c === '*' && glob[i + 1] === '*') {
      out += glob[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += glob[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') out += '[^/]*';
    else if ((c === '?' || c === '@') && glob[i + 1] === '(') {
      const end = glob.indexOf(')', i);
      out += `(?:${glob
        .slice(i + 2, end)
        .split('|')
        .map(escapeRegex)
        .join('|')})${c === '?' ? '?' : ''}`;
      i = end;
    } else if (c === '?') out += '[^/]';
    else if (c === '{') {
      const end = glob.indexOf('}', i);
      out += `(?:${glob
        .slice(i + 1, end)
        .split(',')
        .map(escapeRegex)
        .join('|')})`;
      i = end;
    } else out += escapeRegex(c);
  }
  return new RegExp(`^${out}$`);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
