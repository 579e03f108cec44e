import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageOf } from './parsers/go.js';
import { TEST_FILE } from './parsers/shared.js';
import type { ParsedRun } from './parsers/types.js';

// Builds the command that reruns only some tests (spec 03 "Flaky": reruns of just that test), from the
// ids the parsers produce. Names become anchored, escaped regexes; every argument is shell-quoted.

const SAFE_WORD = /^[\w@%+=:,./-]+$/;

/** Quotes one argument for a POSIX shell. */
export function shellQuote(arg: string): string {
  if (arg !== '' && SAFE_WORD.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** A command that runs only `ids` of the given framework; null when the framework cannot select tests. */
export function buildSelectCommand(
  framework: ParsedRun['framework'],
  baseCommand: string,
  ids: string[],
  opts: { workspace?: string } = {},
): string | null {
  const wanted = [...new Set(ids.map((id) => id.trim()).filter(Boolean))];
  if (wanted.length === 0) return null;
  switch (framework) {
    case 'node-test':
      return selectNodeTest(baseCommand, wanted);
    case 'vitest':
      // flaky means that very id passed on rerun (spec 03): the verbose reporters list passing ids
      return selectByFileAndName('npx vitest run --reporter=verbose', wanted, (files, pattern) => [...files, ...(pattern ? ['-t', pattern] : [])]);
    case 'jest':
      return selectByFileAndName('npx jest --verbose', wanted, (files, pattern) => [...files, ...(pattern ? ['-t', pattern] : [])]);
    case 'mocha':
      return selectByFileAndName('npx mocha', wanted, (files, pattern) => [...files, ...(pattern ? ['--grep', pattern] : [])]);
    case 'pytest':
      return selectPytest(baseCommand, wanted, opts.workspace);
    case 'go':
      return selectGo(wanted);
    case 'cargo':
      return selectCargo(baseCommand, wanted);
    default:
      return null;
  }
}

interface SplitId {
  file: string | null;
  names: string[];
}

/** "test/a.test.ts > suite > test" → file and names; ids without a file are names only. */
function splitId(id: string): SplitId {
  const parts = id.split(' > ');
  const first = parts[0] ?? '';
  if (parts.length >= 1 && TEST_FILE.test(first) && (first.includes('/') || parts.length > 1)) {
    return { file: first, names: parts.slice(1) };
  }
  return { file: null, names: parts };
}

/** An anchored alternation of full names ("suite test"), as vitest `-t`, jest `-t` and mocha `--grep` match. */
function fullNamePattern(names: string[][], optionalAncestors: boolean): string | null {
  const alternatives = names
    .filter((n) => n.length > 0)
    .map((n) => {
      const leaf = nameRegex(n.at(-1) ?? '');
      const ancestors = n.slice(0, -1).map(nameRegex).join(' ');
      if (!ancestors) return leaf;
      // node:test before 22 matches the test's own name, later versions also "ancestors name"
      return optionalAncestors ? `(?:${ancestors} )?${leaf}` : `${ancestors} ${leaf}`;
    });
  if (alternatives.length === 0) return null;
  const body = alternatives.length === 1 ? (alternatives[0] ?? '') : `(?:${alternatives.join('|')})`;
  return `^${body}$`;
}

/** An escaped name; a name cut at 200 chars ("…") matches by its prefix. */
function nameRegex(name: string): string {
  return name.endsWith('…') ? `${escapeRegex(name.slice(0, -1))}.*` : escapeRegex(name);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function selectByFileAndName(runner: string, ids: string[], args: (files: string[], pattern: string | null) => string[]): string {
  const split = ids.map(splitId);
  const files = [...new Set(split.flatMap((s) => (s.file ? [s.file] : [])))];
  const pattern = fullNamePattern(split.map((s) => s.names), false);
  return [runner, ...args(files, pattern).map(shellQuote)].join(' ');
}

function selectNodeTest(baseCommand: string, ids: string[]): string {
  const split = ids.map(splitId);
  const files = [...new Set(split.flatMap((s) => (s.file ? [s.file] : [])))];
  const pattern = fullNamePattern(split.map((s) => s.names), true);
  // keep the project's own `node --test …` (loaders, paths) when that is the command; add the pattern
  const base = /^\s*node\s[^;&|]*--test\b[^;&|]*$/.test(baseCommand) && files.length === 0 ? baseCommand.trim() : 'node --test';
  const args = [...(pattern ? [`--test-name-pattern=${pattern}`] : []), ...files];
  return [base, ...args.map(shellQuote)].join(' ');
}

function selectPytest(baseCommand: string, ids: string[], workspace: string | undefined): string {
  const named = /(?:^|\s)(\S*python[\d.]*)\s+-m\s+pytest\b/.exec(baseCommand)?.[1];
  const venv = workspace && existsSync(join(workspace, '.venv', 'bin', 'python')) ? '.venv/bin/python' : null;
  const python = named ?? venv ?? 'python3';
  // skipped entries are "file:line", not node ids: select the file
  const nodeIds = ids.map((id) => (/^[^:]+\.py:\d+$/.test(id) ? id.replace(/:\d+$/, '') : id));
  return [python, '-m', 'pytest', '-q', '-rA', ...[...new Set(nodeIds)].map(shellQuote)].join(' ');
}

function selectGo(ids: string[]): string {
  const packages = [...new Set(ids.map(packageOf))];
  const tests = ids.filter((id) => packageOf(id) !== id).map((id) => id.slice(packageOf(id).length + 1).split('/'));
  // a package-level failure (build error, TestMain) reruns the whole package
  const wholePackage = tests.length < ids.length;
  const args = ['go', 'test', '-json', '-count=1'];
  if (!wholePackage && tests.length > 0) {
    const depth = Math.min(...tests.map((t) => t.length));
    const levels: string[] = [];
    for (let level = 0; level < depth; level++) {
      const names = [...new Set(tests.map((t) => t[level] ?? ''))];
      levels.push(`^(${names.map(escapeRegex).join('|')})$`);
    }
    args.push('-run', shellQuote(levels.join('/')));
  }
  return [...args, ...packages.map(shellQuote)].join(' ');
}

function selectCargo(baseCommand: string, ids: string[]): string | null {
  // a compile failure ("crate (lib test)") names no test
  if (ids.some((id) => /\s\(/.test(id) || id.endsWith('…'))) return null;
  const base = /^\s*cargo\s+test\b/.test(baseCommand) ? (baseCommand.split(' -- ')[0] ?? '').trim() : 'cargo test';
  if (ids.length === 1) return `${base} ${shellQuote(ids[0] ?? '')} -- --exact`;
  return `${base} -- --exact ${ids.map(shellQuote).join(' ')}`;
}
