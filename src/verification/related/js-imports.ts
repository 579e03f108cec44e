import { posix } from 'node:path';
import { readAll, type Tree, walkBack } from './shared.js';

// The JavaScript/TypeScript import graph by relative specifiers, read from the files themselves: vitest, jest
// and node --test selections all ask it which tests import a changed file.

/** A JavaScript or TypeScript source file. */
export const JS_CODE = /\.(?:[cm]?[jt]sx?)$/;
// static `import … from`, `export … from`, bare `import '…'`, `import(…)`, `require(…)`
const JS_IMPORT =
  /\b(?:import|export)\s[^'"`;]*?\bfrom\s*(['"])([^\n]+?)\1|\bimport\s*(['"])([^\n]+?)\3|\b(?:import|require)\s*\(\s*(['"])([^\n]+?)\5\s*\)/g;
const RESOLVE_EXTS = ['.js', '.ts', '.mjs', '.mts', '.cjs', '.cts', '.jsx', '.tsx', '.json'];
const TS_FOR_JS: Record<string, string[]> = {
  '.js': ['.ts', '.tsx'],
  '.mjs': ['.mts'],
  '.cjs': ['.cts'],
  '.jsx': ['.tsx'],
};

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
export async function findImporters(
  workspace: string,
  tree: Tree,
  tests: string[],
  changed: string[],
): Promise<{ tests: string[]; orphans: string[] }> {
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
