import { readdir, readFile } from 'node:fs/promises';
import { isAbsolute, join, posix, relative } from 'node:path';
import { widenForUntested, type Widening } from './related-widen.js';
import { shellQuote } from './select.js';

// spec 03 "Scope": `verify_scope: "related"` runs the tests related to the changed files, or says why it ran
// everything. Selection reads files itself (no child processes) so it stays far cheaper than the suite.

/** What related scope runs instead of the full command. */
export interface RelatedSelection {
  /** The command to run instead of the full one. */
  command: string;
  /** Test files selected (workspace-relative, sorted); for vitest/jest gaffer's own import-graph reading of what the framework will pick. */
  relatedFiles: string[];
  /** Changed files no test imports whose package's tests were added to the run; absent when none widened it. */
  widened?: string[];
}

/** Why related scope fell back to everything, or the selection. */
export type RelatedResult = { scope: 'related'; selection: RelatedSelection } | { scope: 'all'; reason: string };

/** Workspaces bigger than this run everything rather than block the daemon mapping imports. */
const MAX_FILES = 20_000;

const UNSUPPORTED: Record<string, string> = {
  configured: 'a configured verify command runs exactly as given',
  cargo: 'cargo can filter tests by name, not by changed file; related scope runs everything',
  make: 'gaffer cannot see which tests `make test` runs; related scope runs everything',
};

const all = (reason: string): RelatedResult => ({ scope: 'all', reason });
/**
 * The selection; `every` names all the tests there are: when the selection holds every one of them it
 * is the full suite, run as the full command (then no confirming full-suite run is needed, spec 03).
 */
const related = (command: string, files: Iterable<string>, widened: string[], every: Iterable<string>): RelatedResult => {
  const selected = new Set(files);
  const allTests = [...every];
  if (allTests.length > 0 && allTests.every((t) => selected.has(t))) return all('the related tests are all of the tests');
  return { scope: 'related', selection: { command, relatedFiles: [...selected].sort(), ...(widened.length > 0 ? { widened: [...widened].sort() } : {}) } };
};
const list = (paths: string[]) => paths.slice(0, 3).map((p) => `\`${p}\``).join(', ') + (paths.length > 3 ? ', …' : '');

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
    const path = posix.normalize(rel.replace(/\\/g, '/')).replace(/^(\.\/)+/, '').replace(/\/$/, '');
    if (path && path !== '.' && !path.startsWith('../')) out.add(path);
  }
  return [...out].sort();
}

// ---- what runs everything (spec 03: configuration, lockfiles, setup files, conftest.py) ----

const SETUP_NAMES = new Set([
  'package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', 'pnpm-workspace.yaml',
  'bun.lockb', 'bun.lock', '.npmrc', '.yarnrc', '.yarnrc.yml', '.nvmrc', '.node-version', '.swcrc',
  'pyproject.toml', 'setup.py', 'setup.cfg', 'pytest.ini', 'tox.ini', 'conftest.py', 'Pipfile', 'Pipfile.lock',
  'poetry.lock', 'uv.lock', 'pdm.lock', '.python-version', 'go.mod', 'go.sum', 'go.work', 'go.work.sum',
  'Cargo.toml', 'Cargo.lock', 'Makefile', 'makefile', 'GNUmakefile',
]);
const SETUP_PATTERNS = [
  /^[tj]sconfig(?:\..*)?\.json$/,
  /^(?:vitest|vite|jest)\.(?:config|workspace|setup)(?:\..*)?\.[cm]?[jt]sx?$/,
  /^(?:vitest|vite|jest)\.config\.json$/,
  /^babel\.config\./,
  /^\.babelrc/,
  /^\.mocharc/,
  /^requirements.*\.txt$/,
  /^\.env(?:\..*)?$/,
  /\.lockb?$/,
  /-lock\.(?:json|ya?ml)$/,
  /^(?:setup-?tests?|test-?setup|setup|global-?setup|global-?teardown)\.[cm]?[jt]sx?$/i,
];

/** Why a changed path runs everything; null when it does not. */
function whyEverything(path: string): string | null {
  const name = posix.basename(path);
  if (SETUP_NAMES.has(name) || SETUP_PATTERNS.some((p) => p.test(name)) || path === '.gaffer/workspace.json') {
    return 'a change to configuration, lockfiles, setup files or conftest.py runs everything';
  }
  if (/(?:^|\/)(?:node_modules|\.venv|venv|site-packages|vendor)\//.test(path)) return 'a change to installed dependencies runs everything';
  return null;
}

// ---- the workspace tree ----

interface Tree {
  /** Every file, workspace-relative. */
  files: Set<string>;
}

/** Lists the workspace's files, skipping hidden and dependency folders; null past MAX_FILES. */
async function listFiles(workspace: string, skipDir: (name: string, entries: string[]) => boolean): Promise<Tree | null> {
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
const TOO_BIG = `the workspace has more than ${MAX_FILES} files; related scope maps imports only in smaller trees`;

async function readText(workspace: string, path: string): Promise<string> {
  return readFile(join(workspace, path), 'utf8').catch(() => '');
}

/** Reads files in parallel batches: fast, without opening thousands of descriptors at once. */
async function readAll(workspace: string, paths: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < paths.length; i += 256) {
    const batch = paths.slice(i, i + 256);
    const texts = await Promise.all(batch.map((p) => readText(workspace, p)));
    batch.forEach((p, j) => out.set(p, texts[j] ?? ''));
  }
  return out;
}

/** Files reached backwards from `changed` over `importersOf`, and the changed paths no one imports. */
function walkBack(changed: string[], importersOf: (path: string) => Iterable<string>): { reached: Set<string>; orphans: string[] } {
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
function withWidening(
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

// ---- node: vitest, jest, node:test ----

interface Script {
  /** `NAME=value` words before the command. */
  env: [string, string][];
  words: string[];
}

/** Splits a package.json script into shell words; null when it is more than one plain command. */
function parseScript(script: string): Script | null {
  const words: string[] = [];
  let word: string | null = null;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < script.length; i++) {
    const c = script[i] ?? '';
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && /["\\$`]/.test(script[i + 1] ?? '')) word = (word ?? '') + (script[++i] ?? '');
      else if (quote === '"' && /[$`]/.test(c)) return null;
      else word = (word ?? '') + c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (c === '\\') word = (word ?? '') + (script[++i] ?? '');
    else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
      if (c === '\n') return null;
    } else if (/[;&|<>()$`]/.test(c)) return null;
    else word = (word ?? '') + c;
  }
  if (quote) return null;
  if (word !== null) words.push(word);
  const env: [string, string][] = [];
  while (words.length > 0 && /^[A-Za-z_]\w*=/.test(words[0] ?? '')) {
    const assignment = words.shift() ?? '';
    const eq = assignment.indexOf('=');
    env.push([assignment.slice(0, eq), assignment.slice(eq + 1)]);
  }
  if (words[0] === 'npx') words.shift();
  return words.length > 0 ? { env, words } : null;
}

// flags whose value is the next word; any other flag is taken as a switch
const VALUE_FLAGS: Record<'vitest' | 'jest' | 'node', Set<string>> = {
  vitest: new Set(['-c', '--config', '-r', '--root', '--dir', '--reporter', '--outputFile', '--project', '--environment', '--pool', '--mode',
    '--testTimeout', '--hookTimeout', '--maxWorkers', '--minWorkers', '--shard', '-t', '--testNamePattern', '--exclude', '--bail', '--retry',
    '--sequence.seed', '--teardownTimeout', '--maxConcurrency', '--coverage.provider', '--coverage.reporter', '--coverage.reportsDirectory']),
  jest: new Set(['-c', '--config', '--rootDir', '--roots', '--reporters', '-w', '--maxWorkers', '--testTimeout', '--selectProjects',
    '--shard', '-t', '--testNamePattern', '--testPathIgnorePatterns', '--outputFile', '--coverageDirectory', '--testEnvironment',
    '--maxConcurrency', '--seed', '--coverageProvider', '--setupFiles', '--setupFilesAfterEach', '--projects']),
  node: new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--test-reporter', '--test-reporter-destination',
    '--test-concurrency', '--test-name-pattern', '--test-skip-pattern', '--test-timeout', '--test-shard', '--env-file', '--conditions',
    '-C', '--input-type', '--test-isolation', '--experimental-test-isolation', '--stack-size', '--max-old-space-size', '--title']),
};

/** Splits a runner's arguments into flags (kept, with their values) and positionals. */
function splitArgs(args: string[], valueFlags: Set<string>): { flags: string[]; positionals: string[] } {
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (!arg.startsWith('-')) positionals.push(arg);
    else if (valueFlags.has(arg) && i + 1 < args.length) flags.push(arg, args[++i] ?? '');
    else flags.push(arg);
  }
  return { flags, positionals };
}

const VITEST_OTHER = new Set(['bench', 'list', 'typecheck', 'init', 'related']);
// related scope runs once: watch switches go (jest's `-w` is --maxWorkers and stays)
const WATCH_FLAGS = { vitest: new Set(['--run', '--watch', '-w']), jest: new Set(['--watch', '--watchAll']) };
const JS_CODE = /\.(?:[cm]?[jt]sx?)$/;
const EXEC_PREFIX: Record<string, string> = { npm: 'npx', pnpm: 'pnpm exec', yarn: 'yarn', bun: 'bunx' };

async function selectNode(workspace: string, command: string, changed: string[]): Promise<RelatedResult> {
  let pkg: { scripts?: Record<string, unknown>; devDependencies?: Record<string, unknown>; dependencies?: Record<string, unknown> };
  try {
    pkg = JSON.parse(await readFile(join(workspace, 'package.json'), 'utf8')) as typeof pkg;
  } catch {
    return all('package.json cannot be read');
  }
  const test = pkg.scripts?.test;
  if (typeof test !== 'string') return all('package.json has no scripts.test to scope');
  const pretest = pkg.scripts?.pretest;
  if (typeof pretest === 'string' && pretest.trim()) return all(`scripts.pretest (\`${pretest}\`) runs before the tests; related scope would skip it`);
  const script = parseScript(test);
  if (script === null) return all(`scripts.test (\`${test}\`) is not one plain command; related scope cannot keep what else it does`);
  const binary = posix.basename(script.words[0] ?? '');
  const args = script.words.slice(1);
  const exec = EXEC_PREFIX[command.trim().split(/\s+/)[0] ?? ''] ?? 'npx';
  const env = script.env.map(([name, value]) => `${name}=${shellQuote(value)}`);
  const tree = await listFiles(workspace, isPythonEnv);
  if (tree === null) return all(TOO_BIG);

  if (binary === 'vitest' || binary === 'jest') {
    const sub = binary === 'vitest' && ['run', 'watch', 'dev'].includes(args[0] ?? '') ? args.slice(1) : args;
    if (binary === 'vitest' && VITEST_OTHER.has(sub[0] ?? '')) return all(`scripts.test runs \`vitest ${sub[0] ?? ''}\`, not the test suite`);
    const { flags, positionals } = splitArgs(sub, VALUE_FLAGS[binary]);
    if (positionals.length > 0) return all(`scripts.test filters which tests run (${list(positionals)}); related scope cannot keep that filter`);
    const kept = flags.filter((f) => !WATCH_FLAGS[binary].has(f));
    const isTest = (p: string) => FRAMEWORK_TEST.test(p);
    const tests = [...tree.files].filter(isTest);
    const found = await findImporters(workspace, tree, tests, changed);
    const untested = found.orphans.filter((p) => !isTest(p));
    const run = withWidening(found.tests, widenForUntested({ files: tree.files, tests, untested, isTest }), changed);
    if ('reason' in run) return all(run.reason);
    // the framework maps imports itself (aliases included); a deleted file is passed as the tests that imported it;
    // a test file passed as a target runs itself, which is how a package's tests are added
    const deleted = changed.filter((p) => JS_CODE.test(p) && !tree.files.has(p));
    const targets = [...changed.filter((p) => tree.files.has(p)), ...(deleted.length > 0 ? found.tests : []), ...run.added];
    const runner = binary === 'vitest' ? ['vitest', 'related', '--run', ...kept] : ['jest', ...kept, '--findRelatedTests'];
    return related([...env, exec, ...runner.map(shellQuote), ...[...new Set(targets)].map(shellQuote)].join(' '), run.tests, run.widened, tests);
  }
  if (binary === 'mocha') return all('mocha has no related-tests mode gaffer drives; related scope runs everything');
  if ((binary === 'node' || binary === 'tsx') && args.includes('--test')) {
    return selectNodeTest(workspace, tree, changed, { env, binary: binary === 'tsx' ? `${exec} tsx` : 'node', args });
  }
  const deps = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((d) => ['vitest', 'jest', 'mocha'].includes(d));
  const hint = deps.length > 0 ? ` (devDependencies name ${deps.join(', ')}, but the script does not run it directly)` : '';
  return all(`scripts.test (\`${test}\`) runs no framework gaffer selects related tests for (vitest, jest, node --test)${hint}`);
}

/** vitest's and jest's default test files. */
const FRAMEWORK_TEST = /(?:\.(?:test|spec)\.[cm]?[jt]sx?$)|(?:(?:^|\/)__tests__\/.*\.[cm]?[jt]sx?$)/;
/** node --test's default test files (Node 20–22): `*.test.js`, `*-test.js`, `*_test.js`, `test-*.js`, `test.js`, `test/**`. */
const NODE_TEST_NAME = /(?:^|\/)(?:test|test-[^/]+|[^/]+[.\-_]test)\.[^/.]+$|(?:^|\/)test\//;
const TS_LOADER = /tsx|ts-node|strip-types|transform-types|@swc-node|esbuild-register|\.ts\b/;

async function selectNodeTest(
  workspace: string,
  tree: Tree,
  changed: string[],
  run: { env: string[]; binary: string; args: string[] },
): Promise<RelatedResult> {
  const { flags, positionals } = splitArgs(run.args, VALUE_FLAGS.node);
  const typescript = run.binary !== 'node' || TS_LOADER.test(run.args.join(' ')) || Boolean((process.features as { typescript?: unknown }).typescript);
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
  return related([...run.env, run.binary, ...flags.map(shellQuote), ...selected.tests.map(shellQuote)].join(' '), selected.tests, selected.widened, tests);
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
      out += `(?:${glob.slice(i + 2, end).split('|').map(escapeRegex).join('|')})${c === '?' ? '?' : ''}`;
      i = end;
    } else if (c === '?') out += '[^/]';
    else if (c === '{') {
      const end = glob.indexOf('}', i);
      out += `(?:${glob.slice(i + 1, end).split(',').map(escapeRegex).join('|')})`;
      i = end;
    } else out += escapeRegex(c);
  }
  return new RegExp(`^${out}$`);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

// static `import … from`, `export … from`, bare `import '…'`, `import(…)`, `require(…)`
const JS_IMPORT = /\b(?:import|export)\s[^'"`;]*?\bfrom\s*(['"])([^\n]+?)\1|\bimport\s*(['"])([^\n]+?)\3|\b(?:import|require)\s*\(\s*(['"])([^\n]+?)\5\s*\)/g;
const RESOLVE_EXTS = ['.js', '.ts', '.mjs', '.mts', '.cjs', '.cts', '.jsx', '.tsx', '.json'];
const TS_FOR_JS: Record<string, string[]> = { '.js': ['.ts', '.tsx'], '.mjs': ['.mts'], '.cjs': ['.cts'], '.jsx': ['.tsx'] };

/** The file a relative specifier names (or a deleted changed path it named); null when it names none. */
function resolveSpecifier(from: string, specifier: string, exists: (p: string) => boolean): string | null {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return null;
  const base = posix.normalize(posix.join(posix.dirname(from), specifier.replace(/[?#].*$/, '')));
  if (base.startsWith('../')) return null;
  const ext = posix.extname(base);
  const candidates = [
    base,
    ...(TS_FOR_JS[ext] ?? []).map((ts) => base.slice(0, -ext.length) + ts),
    ...RESOLVE_EXTS.map((e) => base + e),
    ...RESOLVE_EXTS.map((e) => `${base}/index${e}`),
  ];
  return candidates.find(exists) ?? null;
}

/** Test files that import a changed path, directly or through other modules, by relative specifiers. */
async function findImporters(workspace: string, tree: Tree, tests: string[], changed: string[]): Promise<{ tests: string[]; orphans: string[] }> {
  const changedSet = new Set(changed);
  // a deleted file still counts as imported by whoever names it
  const exists = (p: string) => tree.files.has(p) || changedSet.has(p);
  const importers = new Map<string, Set<string>>();
  const seen = new Set(tests);
  let frontier = tests.filter((p) => JS_CODE.test(p));
  while (frontier.length > 0) {
    const texts = await readAll(workspace, frontier);
    const next: string[] = [];
    for (const [file, text] of texts) {
      for (const match of text.matchAll(JS_IMPORT)) {
        const target = resolveSpecifier(file, match[2] ?? match[4] ?? match[6] ?? '', exists);
        if (target === null || target === file) continue;
        const set = importers.get(target) ?? new Set<string>();
        set.add(file);
        importers.set(target, set);
        if (!seen.has(target)) {
          seen.add(target);
          if (JS_CODE.test(target) && tree.files.has(target)) next.push(target);
        }
      }
    }
    frontier = next;
  }
  const testSet = new Set(tests);
  const { reached, orphans } = walkBack(changed, (p) => importers.get(p) ?? []);
  const selected = [...reached].filter((p) => testSet.has(p) && tree.files.has(p));
  // a changed test file is selected directly; it is never an orphan
  return { tests: selected, orphans: orphans.filter((p) => !testSet.has(p)) };
}

// ---- pytest ----

const isPythonEnv = (name: string, entries: string[]) => entries.includes('pyvenv.cfg') || name === 'venv';
const PY_TEST = /(?:^|\/)(?:test_[^/]*|[^/]*_test)\.py$/;

/** Dotted names a module may be imported by: every suffix of its path (`src.pkg.api`, `pkg.api`, `api`). */
function moduleNames(path: string): string[] {
  const parts = path.replace(/\.py$/, '').split('/');
  if (parts.at(-1) === '__init__') parts.pop();
  return parts.map((_, i) => parts.slice(i).join('.')).filter(Boolean);
}

/** Dotted module names a Python file imports; relative imports resolved against its own path. */
function pythonImports(path: string, text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/^[ \t]*import[ \t]+([^\n#;]+)/gm)) {
    for (const part of (m[1] ?? '').split(',')) names.push(part.trim().split(/\s+/)[0] ?? '');
  }
  for (const m of text.matchAll(/^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)/gm)) {
    const level = (m[1] ?? '').length;
    let base = m[2] ?? '';
    if (level > 0) {
      const dirs = posix.dirname(path).split('/').filter((d) => d !== '.');
      if (level - 1 > dirs.length) continue;
      base = [...dirs.slice(0, dirs.length - (level - 1)), ...(base ? [base] : [])].join('.');
    }
    if (base) names.push(base);
    for (const item of (m[3] ?? '').replace(/[()\\]/g, ' ').split(',')) {
      const name = item.trim().split(/\s+/)[0] ?? '';
      if (/^\w+$/.test(name)) names.push(base ? `${base}.${name}` : name);
    }
  }
  return names.filter((n) => /^[\w.]+$/.test(n));
}

async function selectPytest(workspace: string, command: string, changed: string[]): Promise<RelatedResult> {
  const tree = await listFiles(workspace, isPythonEnv);
  if (tree === null) return all(TOO_BIG);
  const sources = [...tree.files].filter((p) => p.endsWith('.py'));
  const texts = await readAll(workspace, sources);
  // importers by every prefix of what they import: `import pkg.api` also runs `pkg/__init__.py`
  const byName = new Map<string, Set<string>>();
  for (const [file, text] of texts) {
    for (const name of pythonImports(file, text)) {
      const parts = name.split('.');
      for (let i = 1; i <= parts.length; i++) {
        const prefix = parts.slice(0, i).join('.');
        const set = byName.get(prefix) ?? new Set<string>();
        set.add(file);
        byName.set(prefix, set);
      }
    }
  }
  const importersOf = (p: string) => (p.endsWith('.py') ? moduleNames(p).flatMap((n) => [...(byName.get(n) ?? [])]).filter((f) => f !== p) : []);
  const isTest = (p: string) => PY_TEST.test(p);
  const isRealTest = (p: string) => isTest(p) && tree.files.has(p);
  const tests = sources.filter(isTest);
  const selected = new Set([...walkBack(changed, importersOf).reached].filter(isRealTest));
  // a test named after a changed module: `api.py` → `test_api.py`, `api_test.py`
  const stemOf = (test: string) => posix.basename(test, '.py').replace(/^test_|_test$/g, '');
  const testStems = new Set(tests.map(stemOf));
  const stems = new Set(changed.filter((p) => p.endsWith('.py')).map((p) => moduleNames(p).at(-1)));
  for (const test of tests) if (stems.has(stemOf(test))) selected.add(test);
  // an importer that no test reaches does not test the file: each changed path must reach a test itself
  const isNamedTest = (p: string) => p.endsWith('.py') && testStems.has(moduleNames(p).at(-1) ?? '');
  const untested = changed.filter((p) => !isTest(p) && !isNamedTest(p) && ![...walkBack([p], importersOf).reached].some(isRealTest));
  // `--doctest-glob` collects tests from docs: then no doc is inert
  const docsAreTests = (await Promise.all(PYTEST_CONFIGS.map((f) => readText(workspace, f)))).some((t) => t.includes('doctest-glob'));
  const widening = widenForUntested({ files: tree.files, tests, untested, isTest, ...(docsAreTests ? { isInert: () => false } : {}) });
  const run = withWidening([...selected], widening, changed, 'imports or is named after');
  if ('reason' in run) return all(run.reason);
  return related(`${command.trim()} ${run.tests.map(shellQuote).join(' ')}`, run.tests, run.widened, tests.filter(isRealTest));
}

const PYTEST_CONFIGS = ['pytest.ini', 'pyproject.toml', 'setup.cfg', 'tox.ini'];

// ---- go ----

/** Go's `./...` skips vendor, testdata, `_`/`.` folders and nested modules. */
const isNotPackageTree = (name: string, entries: string[]) => name === 'vendor' || name === 'testdata' || name.startsWith('_') || entries.includes('go.mod');

async function selectGo(workspace: string, command: string, changed: string[]): Promise<RelatedResult> {
  const words = command.trim().split(/\s+/);
  if (words[0] !== 'go' || words[1] !== 'test' || !words.includes('./...')) return all(`\`${command}\` is not \`go test … ./...\`; related scope runs it as given`);
  const base = words.filter((w) => w !== './...');
  const tree = await listFiles(workspace, isNotPackageTree);
  if (tree === null) return all(TOO_BIG);
  const goFiles = [...tree.files].filter((p) => p.endsWith('.go'));
  const dirOf = (p: string) => posix.dirname(p);
  const packages = new Set(goFiles.map(dirOf));
  const hasTests = new Set(goFiles.filter((p) => p.endsWith('_test.go')).map(dirOf));
  const module = /^module\s+"?([^\s"]+)"?/m.exec(await readText(workspace, 'go.mod'))?.[1] ?? null;

  // package dir → the package dirs its code (and, separately, its tests) import
  const codeImports = new Map<string, Set<string>>();
  const testImports = new Map<string, Set<string>>();
  if (module !== null) {
    const texts = await readAll(workspace, goFiles);
    for (const [file, text] of texts) {
      const map = file.endsWith('_test.go') ? testImports : codeImports;
      const set = map.get(dirOf(file)) ?? new Set<string>();
      for (const path of goImports(text)) {
        const dir = path === module ? '.' : path.startsWith(`${module}/`) ? path.slice(module.length + 1) : null;
        if (dir !== null) set.add(dir);
      }
      map.set(dirOf(file), set);
    }
  }

  const changedCode = new Set<string>();
  const changedTests = new Set<string>();
  const isGoCode = (p: string) => p.endsWith('.go') || packages.has(dirOf(p));
  for (const path of changed) {
    // testdata and embedded files belong to the package of the folder they sit in
    const cut = path.search(/(?:^|\/)testdata\//);
    const dir = cut >= 0 ? path.slice(0, cut) || '.' : dirOf(path);
    if (isGoTestSupport(path)) changedTests.add(dir);
    else if (isGoCode(path)) changedCode.add(dir);
  }
  // code that imports changed code changes too; tests that import any of it are related
  const importers = new Map<string, string[]>();
  for (const [pkg, deps] of codeImports) for (const dep of deps) importers.set(dep, [...(importers.get(dep) ?? []), pkg]);
  const importersOf = (dir: string) => importers.get(dir) ?? [];
  const affected = walkBack([...changedCode], importersOf).reached;
  const selected = new Set([...affected, ...changedTests]);
  for (const [pkg, deps] of testImports) if ([...deps].some((d) => affected.has(d))) selected.add(pkg);
  // a changed file whose package, and every package importing it, has no tests: nothing related tests it
  const isTested = (dir: string) => {
    const reach = walkBack([dir], importersOf).reached;
    return [...reach].some((d) => hasTests.has(d)) || [...testImports.values()].some((deps) => [...deps].some((d) => reach.has(d)));
  };
  const untested = changed.filter((p) => !isGoTestSupport(p) && !(isGoCode(p) && isTested(dirOf(p))));
  // a go package's own tests run whenever it has any: an untested one widens to everything
  const widening = widenForUntested({ files: tree.files, tests: [], untested, isTest: isGoTestSupport });
  if ('reason' in widening) return all(widening.reason);
  const run = [...selected].filter((p) => packages.has(p)).sort();
  if (!run.some((p) => hasTests.has(p))) return all(`no related tests: no Go package with tests is affected by ${list(changed)}`);
  const files = goFiles.filter((p) => p.endsWith('_test.go') && selected.has(dirOf(p)));
  const args = run.map((p) => (p === '.' ? '.' : `./${p}`));
  return related([...base, ...args].map(shellQuote).join(' '), files, [], goFiles.filter((p) => p.endsWith('_test.go')));
}

/** A `_test.go` file or testdata: run by its own package's tests only. */
const isGoTestSupport = (path: string) => path.endsWith('_test.go') || /(?:^|\/)testdata\//.test(path);

/** Import paths of a Go file: single imports and `import ( … )` blocks. */
function goImports(text: string): string[] {
  const paths: string[] = [];
  for (const m of text.matchAll(/^import\s*\(([\s\S]*?)\)/gm)) {
    for (const q of (m[1] ?? '').matchAll(/"([^"\n]+)"/g)) paths.push(q[1] ?? '');
  }
  for (const m of text.matchAll(/^import\s+(?:[\w.]+\s+)?"([^"\n]+)"/gm)) paths.push(m[1] ?? '');
  return paths;
}
