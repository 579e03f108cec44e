import { posix } from 'node:path';

// spec 03 "Scope", issue 10 point 4: related scope must not leave a changed file untested. A changed file no
// test imports widens the run to the tests of its package, else to everything; only files no test can observe
// (prose, images, licence, changelog) widen nothing.

/** Test support: a file here that no test imports may still be read at run time (fixtures, mocks, data). */
export const TEST_DIR = /(?:^|\/)(?:test|tests|__tests__|spec|testing|fixtures|__fixtures__|__mocks__|testdata)\//;

const INERT_NAME =
  /^(?:README|CHANGELOG|CHANGES|HISTORY|LICEN[CS]E|COPYING|NOTICE|AUTHORS|CONTRIBUTORS|CONTRIBUTING|CODE_OF_CONDUCT|SECURITY|CODEOWNERS)(?:[-_][\w-]+)?(?:\.(?:md|markdown|txt|rst|adoc))?$/i;
const INERT_EXT = /\.(?:md|markdown|rst|adoc|asciidoc|png|jpe?g|gif|ico|webp|avif|bmp|svg)$/i;
const INERT_FILES = new Set(['.gitignore', '.gitattributes', '.editorconfig', '.mailmap']);

/** Whether a changed file cannot affect any test: docs, images, LICENSE, CHANGELOG — never under a test folder, where it may be a fixture. */
export function cannotAffectTests(path: string): boolean {
  if (TEST_DIR.test(path)) return false;
  const name = posix.basename(path);
  return INERT_NAME.test(name) || INERT_EXT.test(name) || INERT_FILES.has(name) || path.startsWith('.github/');
}

const MANIFESTS = ['package.json', 'pyproject.toml', 'setup.py', 'go.mod'];

/**
 * The package a path belongs to: its nearest enclosing folder below the workspace root with its own
 * package.json, pyproject.toml, setup.py or go.mod; null at the root. A manifest inside a test folder is a
 * fixture project, not a package.
 */
function packageOf(files: ReadonlySet<string>, path: string): string | null {
  for (let dir = posix.dirname(path); dir !== '.' && dir !== '/'; dir = posix.dirname(dir)) {
    if (TEST_DIR.test(`${dir}/`)) continue;
    if (MANIFESTS.some((m) => files.has(`${dir}/${m}`))) return dir;
  }
  return null;
}

/** What a run widens to: the test files it adds and the changed files that asked for them, or why everything runs. */
export type Widening = { tests: string[]; widened: string[] } | { reason: string };

const quote = (paths: string[]) =>
  paths
    .slice(0, 3)
    .map((p) => `\`${p}\``)
    .join(', ') + (paths.length > 3 ? ', …' : '');

/**
 * Widens a run for changed files no test reaches: each adds the tests of its package; one with no package,
 * or whose package has no tests the command runs, runs everything.
 */
export function widenForUntested(opts: {
  /** Every file in the workspace tree. */
  files: ReadonlySet<string>;
  /** Every test file the command runs. */
  tests: string[];
  /** Changed paths no test imports, directly or through other modules (changed tests excluded). */
  untested: string[];
  /** Whether a path is a test file (to tell test support from source). */
  isTest: (path: string) => boolean;
  /** Overrides which files cannot affect tests (pytest collecting doctests from docs). */
  isInert?: (path: string) => boolean;
}): Widening {
  const widening = opts.untested.filter((p) => !(opts.isInert ?? cannotAffectTests)(p));
  const byPackage = new Map<string, string[]>();
  for (const test of opts.tests) {
    const pkg = packageOf(opts.files, test);
    if (pkg !== null) byPackage.set(pkg, [...(byPackage.get(pkg) ?? []), test]);
  }
  const tests = new Set<string>();
  const everything: string[] = [];
  for (const path of widening) {
    const pkg = packageOf(opts.files, path);
    const own = pkg === null ? [] : (byPackage.get(pkg) ?? []);
    if (own.length === 0) everything.push(path);
    for (const test of own) tests.add(test);
  }
  if (everything.length > 0) return { reason: whyEverythingRuns(everything, opts.isTest) };
  return { tests: [...tests].sort(), widened: widening };
}

function whyEverythingRuns(paths: string[], isTest: (path: string) => boolean): string {
  const support = paths.filter((p) => TEST_DIR.test(p) && !isTest(p));
  if (support.length > 0)
    return `${quote(support)} is test support that no test imports (read at run time, a mock, data): running everything`;
  return `${quote(paths)} changed and no test imports ${paths.length === 1 ? 'it' : 'them'}: running everything`;
}
