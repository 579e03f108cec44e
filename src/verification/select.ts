import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { packageOf } from './parsers/go.js';
import { TEST_FILE } from './parsers/shared.js';
import type { ParsedRun } from './parsers/types.js';
import { readWorkspaceText } from '../platform/files/bounded-read.js';

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
      return selectByFileAndName('npx vitest run --reporter=verbose', wanted, (files, pattern) => [
        ...files,
        ...(pattern ? ['-t', pattern] : []),
      ]);
    case 'jest':
      return selectByFileAndName('npx jest --verbose', wanted, (files, pattern) => [
        ...files,
        ...(pattern ? ['-t', pattern] : []),
      ]);
    case 'mocha':
      return selectMocha(baseCommand, wanted);
    case 'bun':
      return selectByFileAndName(
        /^\s*bun\s+test\b/.test(baseCommand) ? 'bun test' : 'npx bun test',
        wanted,
        (files, pattern) => [...files, ...(pattern ? ['-t', pattern] : [])],
      );
    case 'tape':
      return selectTape(wanted, opts.workspace);
    case 'tap':
      return selectTap(wanted);
    case 'ava':
      return selectAva(wanted);
    case 'jasmine':
      return selectJasmine(wanted);
    case 'deno':
      return selectDeno(baseCommand, wanted, opts.workspace);
    case 'unittest':
      return selectUnittest(baseCommand, wanted, opts.workspace);
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

function selectByFileAndName(
  runner: string,
  ids: string[],
  args: (files: string[], pattern: string | null) => string[],
): string {
  const split = ids.map(splitId);
  const files = [...new Set(split.flatMap((s) => (s.file ? [s.file] : [])))];
  const pattern = fullNamePattern(
    split.map((s) => s.names),
    false,
  );
  return [runner, ...args(files, pattern).map(shellQuote)].join(' ');
}

/**
 * mocha's flags live in the project's script (`mocha -u tdd test/`, a `--require`): through `npm test --`
 * the rerun keeps them and only adds `--grep`; without the script, `npx mocha` with the files.
 */
function selectMocha(baseCommand: string, ids: string[]): string {
  const split = ids.map(splitId);
  const pattern = fullNamePattern(
    split.map((s) => s.names),
    false,
  );
  if (/^\s*npm\s+(?:run\s+)?test\s*$/.test(baseCommand) && split.every((s) => s.file === null) && pattern !== null) {
    return `npm test -- --grep ${shellQuote(pattern)}`;
  }
  return selectByFileAndName('npx mocha', ids, (files, p) => [...files, ...(p ? ['--grep', p] : [])]);
}

function selectNodeTest(baseCommand: string, ids: string[]): string {
  const split = ids.map(splitId);
  const files = [...new Set(split.flatMap((s) => (s.file ? [s.file] : [])))];
  const pattern = fullNamePattern(
    split.map((s) => s.names),
    true,
  );
  // keep the project's own `node --test …` (loaders, paths) when that is the command; add the pattern
  const base =
    /^\s*node\s[^;&|]*--test\b[^;&|]*$/.test(baseCommand) && files.length === 0 ? baseCommand.trim() : 'node --test';
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

// tape cannot select by name: rerun the files that define the tests, found by their names in quotes
const TAPE_SCAN_DIRS = ['test', 'tests', 'spec', '__tests__'];
const TAPE_SCAN_FILES = 2_000;
const SOURCE = /\.(?:[cm]?js|[cm]?ts|jsx|tsx)$/;

function selectTape(names: string[], workspace: string | undefined): string | null {
  if (!workspace) return null;
  // a name cut at 200 chars ("…") is found by its quoted prefix
  const literals = names.flatMap((name) =>
    ["'", '"', '`'].map((quote) => (name.endsWith('…') ? `${quote}${name.slice(0, -1)}` : `${quote}${name}${quote}`)),
  );
  const files = testSources(workspace).filter((file) => {
    const text = readWorkspaceText(workspace, file);
    return text !== null && literals.some((literal) => text.includes(literal));
  });
  return files.length === 0 ? null : ['npx tape', ...files.map(shellQuote)].join(' ');
}

/** Source files at the workspace's top level and under its usual test folders (3 levels down), sorted; bounded. */
function testSources(workspace: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, levels: number, atTop: boolean) => {
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const entry of entries) {
      if (found.length >= TAPE_SCAN_FILES) return;
      if (entry.startsWith('.') || entry === 'node_modules') continue;
      const path = join(dir, entry);
      let isDir = false;
      try {
        isDir = statSync(path).isDirectory();
      } catch {
        continue;
      }
      if (!isDir) {
        if (SOURCE.test(entry)) found.push(relative(workspace, path));
      } else if (atTop ? TAPE_SCAN_DIRS.includes(entry) : levels > 0) walk(path, levels - 1, false);
    }
  };
  walk(workspace, 3, true);
  return found;
}

/**
 * node-tap: the files, and `--grep` per level (a subtest matching level k has its subtests filtered by level
 * k+1). A shallower id loses only subtests of its own, which were not asked for: its failure is its own.
 */
function selectTap(ids: string[]): string {
  const split = ids.map((id) => {
    const parts = id.split(' > ');
    const first = parts[0] ?? '';
    return TEST_FILE.test(first) && first.includes('/')
      ? { file: first, names: parts.slice(1) }
      : { file: null, names: parts };
  });
  const files = [...new Set(split.flatMap((s) => (s.file ? [s.file] : [])))];
  const args = [...files];
  // a file-level failure reruns its whole file
  if (split.every((s) => s.names.length > 0)) {
    const depth = Math.max(...split.map((s) => s.names.length));
    for (let level = 0; level < depth; level++) {
      const names = [
        ...new Set(split.flatMap((s) => (level < s.names.length ? [nameRegex(s.names[level] ?? '')] : []))),
      ];
      args.push(`--grep=^${names.length === 1 ? (names[0] ?? '') : `(?:${names.join('|')})`}$`);
    }
  }
  return ['npx tap', ...args.map(shellQuote)].join(' ');
}

/** AVA: `--match` per title (its last id part: the rest is the file prefix); `*` is AVA's only wildcard. */
function selectAva(ids: string[]): string {
  const titles = ids
    .filter((id) => !(TEST_FILE.test(id) && id.includes('/')))
    .map((id) => id.split(' > ').at(-1) ?? id);
  if (titles.length === 0) return ['npx ava', ...ids.map(shellQuote)].join(' ');
  const patterns = [
    ...new Set(titles.map((t) => (t.endsWith('…') ? `${t.slice(0, -1)}*` : t.startsWith('!') ? `*${t}` : t))),
  ];
  return ['npx ava', ...patterns.flatMap((p) => ['--match', shellQuote(p)])].join(' ');
}

/** Jasmine: `--filter` is a regex over the spec's full name, which is the id. */
function selectJasmine(ids: string[]): string {
  const names = ids.map(nameRegex);
  return `npx jasmine ${shellQuote(`--filter=^${names.length === 1 ? (names[0] ?? '') : `(?:${names.join('|')})`}$`)}`;
}

// deno options that take their value as the next word; --filter and --reporter are the rerun's own
const DENO_VALUE_OPTIONS = new Set([
  '--config',
  '-c',
  '--import-map',
  '--location',
  '--seed',
  '--lock',
  '--cert',
  '--filter',
  '--reporter',
  '--junit-path',
]);
const DENO_DROPPED = new Set(['--filter', '--reporter', '--junit-path', '--watch', '--parallel', '--fail-fast']);

/** deno: the permission and config flags of the project's `deno test`, the files, `--filter` over top-level names (steps cannot be selected). */
function selectDeno(baseCommand: string, ids: string[], workspace: string | undefined): string {
  const flags =
    denoTestFlags(baseCommand) ??
    (isPackageTestScript(baseCommand) ? denoTestFlags(packageTestScript(workspace) ?? '') : null) ??
    [];
  const split = ids.map(splitId);
  const files = [...new Set(split.flatMap((s) => (s.file ? [s.file] : [])))];
  const tops = [...new Set(split.flatMap((s) => (s.names[0] ? [nameRegex(s.names[0])] : [])))];
  const filter =
    split.every((s) => s.names.length > 0) && tops.length > 0
      ? ['--filter', `/^${tops.length === 1 ? (tops[0] ?? '') : `(?:${tops.join('|')})`}$/`]
      : [];
  const runner = /^\s*deno\s/.test(baseCommand) ? 'deno test' : 'npx deno test';
  return [runner, ...[...flags, ...files, ...filter].map(shellQuote)].join(' ');
}

function denoTestFlags(command: string): string[] | null {
  const m = /^\s*(?:npx\s+)?deno\s+test(?=\s|$)(.*)$/.exec(command);
  const rest = m?.[1] ?? '';
  if (!m || /[;&|<>`$()'"\\]/.test(rest)) return null;
  const tokens = rest.trim().split(/\s+/).filter(Boolean);
  const flags: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] ?? '';
    if (token === '--') break;
    // a bare word is a path: the rerun names its own files
    if (!token.startsWith('-')) continue;
    const name = token.split('=')[0] ?? '';
    const value = !token.includes('=') && DENO_VALUE_OPTIONS.has(name) ? tokens[++i] : undefined;
    if (DENO_DROPPED.has(name)) continue;
    flags.push(token, ...(value !== undefined ? [value] : []));
  }
  return flags;
}

function isPackageTestScript(command: string): boolean {
  return /^\s*(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test\s*$/.test(command);
}

function packageTestScript(workspace: string | undefined): string | null {
  if (!workspace) return null;
  try {
    const test = (JSON.parse(readWorkspaceText(workspace, 'package.json') ?? '') as { scripts?: { test?: unknown } })
      .scripts?.test;
    return typeof test === 'string' ? test : null;
  } catch {
    return null;
  }
}

/** unittest: the dotted ids with `-v` (so the rerun names what passed), from the discovery top when it is not the cwd. */
function selectUnittest(baseCommand: string, ids: string[], workspace: string | undefined): string | null {
  const dotted = ids.filter((id) => /^[A-Za-z_][\w.]*$/.test(id));
  if (dotted.length === 0) return null;
  const named = /(?:^|\s)(\S*python[\d.]*)\s+-m\s+unittest\b/.exec(baseCommand)?.[1];
  const venv = workspace && existsSync(join(workspace, '.venv', 'bin', 'python')) ? '.venv/bin/python' : null;
  const python = named ?? venv ?? 'python3';
  // `discover -s tests` imports test modules from tests/ (or from -t): ids are relative to it
  const top =
    /\bdiscover\b.*?(?:-t|--top-level-directory)[ =](\S+)/.exec(baseCommand)?.[1] ??
    /\bdiscover\b.*?(?:-s|--start-directory)[ =](\S+)/.exec(baseCommand)?.[1];
  const env = top && top !== '.' && top !== './' ? `PYTHONPATH=${shellQuote(top)} ` : '';
  return `${env}${python} -m unittest -v ${dotted.map(shellQuote).join(' ')}`;
}
