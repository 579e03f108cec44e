import { posix } from 'node:path';
import { shellQuote } from '../select.js';
import { all, list, listFiles, readAll, readText, related, TOO_BIG, walkBack } from './shared.js';
import type { RelatedResult } from './types.js';
import { widenForUntested } from './widen.js';

// `go test ./...` takes packages: gaffer reads the module's import graph between package folders and runs
// the packages whose code or tests reach a changed file.

/** Go's `./...` skips vendor, testdata, `_`/`.` folders and nested modules. */
const isNotPackageTree = (name: string, entries: string[]) =>
  name === 'vendor' || name === 'testdata' || name.startsWith('_') || entries.includes('go.mod');

/** The related run for `go test … ./...`: the affected packages instead of `./...`. */
export async function selectGo(workspace: string, command: string, changed: string[]): Promise<RelatedResult> {
  const words = command.trim().split(/\s+/);
  if (words[0] !== 'go' || words[1] !== 'test' || !words.includes('./...'))
    return all(`\`${command}\` is not \`go test … ./...\`; related scope runs it as given`);
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
  for (const [pkg, deps] of codeImports)
    for (const dep of deps) importers.set(dep, [...(importers.get(dep) ?? []), pkg]);
  const importersOf = (dir: string) => importers.get(dir) ?? [];
  const affected = walkBack([...changedCode], importersOf).reached;
  const selected = new Set([...affected, ...changedTests]);
  for (const [pkg, deps] of testImports) if ([...deps].some((d) => affected.has(d))) selected.add(pkg);
  // a changed file whose package, and every package importing it, has no tests: nothing related tests it
  const isTested = (dir: string) => {
    const reach = walkBack([dir], importersOf).reached;
    return (
      [...reach].some((d) => hasTests.has(d)) ||
      [...testImports.values()].some((deps) => [...deps].some((d) => reach.has(d)))
    );
  };
  const untested = changed.filter((p) => !isGoTestSupport(p) && !(isGoCode(p) && isTested(dirOf(p))));
  // a go package's own tests run whenever it has some: an untested one widens to everything
  const widening = widenForUntested({ files: tree.files, tests: [], untested, isTest: isGoTestSupport });
  if ('reason' in widening) return all(widening.reason);
  const run = [...selected].filter((p) => packages.has(p)).sort();
  if (!run.some((p) => hasTests.has(p)))
    return all(`no related tests: no Go package with tests is affected by ${list(changed)}`);
  const files = goFiles.filter((p) => p.endsWith('_test.go') && selected.has(dirOf(p)));
  const args = run.map((p) => (p === '.' ? '.' : `./${p}`));
  return related(
    [...base, ...args].map(shellQuote).join(' '),
    files,
    [],
    goFiles.filter((p) => p.endsWith('_test.go')),
  );
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
