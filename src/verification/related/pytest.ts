import { posix } from 'node:path';
import { shellQuote } from '../select.js';
import { all, isPythonEnv, listFiles, readAll, readText, related, TOO_BIG, walkBack, withWidening } from './shared.js';
import type { RelatedResult } from './types.js';
import { widenForUntested } from './widen.js';

// pytest takes test files as arguments: gaffer reads the Python import graph (absolute and relative imports)
// and names tests after changed modules (`api.py` → `test_api.py`), then runs the selected files.

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
      const dirs = posix
        .dirname(path)
        .split('/')
        .filter((d) => d !== '.');
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

/** The related run for pytest: the selected test files as its arguments. */
export async function selectPytest(workspace: string, command: string, changed: string[]): Promise<RelatedResult> {
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
  const importersOf = (p: string) =>
    p.endsWith('.py')
      ? moduleNames(p)
          .flatMap((n) => [...(byName.get(n) ?? [])])
          .filter((f) => f !== p)
      : [];
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
  const untested = changed.filter(
    (p) => !isTest(p) && !isNamedTest(p) && ![...walkBack([p], importersOf).reached].some(isRealTest),
  );
  // `--doctest-glob` collects tests from docs: then no doc is inert
  const docsAreTests = (await Promise.all(PYTEST_CONFIGS.map((f) => readText(workspace, f)))).some((t) =>
    t.includes('doctest-glob'),
  );
  const widening = widenForUntested({
    files: tree.files,
    tests,
    untested,
    isTest,
    ...(docsAreTests ? { isInert: () => false } : {}),
  });
  const run = withWidening([...selected], widening, changed, 'imports or is named after');
  if ('reason' in run) return all(run.reason);
  return related(
    `${command.trim()} ${run.tests.map(shellQuote).join(' ')}`,
    run.tests,
    run.widened,
    tests.filter(isRealTest),
  );
}

const PYTEST_CONFIGS = ['pytest.ini', 'pyproject.toml', 'setup.cfg', 'tox.ini'];
