import type { ParsedRun, ParseHint, TestCounts, TestFramework } from './types.js';

/** Spec 03: each failure is at most 200 chars. */
export const MAX_ID_CHARS = 200;

// CSI (colors, cursor moves), OSC (hyperlinks, titles) and the two-byte escapes
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/** Removes terminal escapes: colors, cursor moves, hyperlinks. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** Output as plain lines: escapes stripped, CRLF and progress-bar carriage returns split. */
export function toLines(output: string): string[] {
  return stripAnsi(output)
    .replace(/\r\n/g, '\n')
    .split(/[\r\n]/);
}

/** Caps an id at 200 chars, marking the cut with an ellipsis. */
export function capId(id: string): string {
  const trimmed = id.trim();
  return trimmed.length <= MAX_ID_CHARS ? trimmed : `${trimmed.slice(0, MAX_ID_CHARS - 1)}…`;
}

/** An empty result: nothing recognized. */
export function emptyRun(framework: TestFramework | null = null): ParsedRun {
  return {
    framework,
    failed: [],
    passed: [],
    skipped: [],
    counts: null,
    ranSignal: false,
    noTestsRan: false,
    collectionError: false,
    incomplete: null,
  };
}

/**
 * Builds a ParsedRun: ids capped and deduplicated in first-seen order. An id that also failed is not passed
 * (two tests of one name, one failing): a rerun that lists it as passed must not excuse the failure.
 */
export function makeRun(
  framework: TestFramework,
  parts: {
    failed?: Iterable<string>;
    passed?: Iterable<string>;
    skipped?: Iterable<string>;
    counts?: TestCounts | null;
    ranSignal?: boolean;
    noTestsRan?: boolean;
    collectionError?: boolean;
    incomplete?: string | null;
  },
): ParsedRun {
  const failed = uniqueIds(parts.failed ?? []);
  const failedSet = new Set(failed);
  return {
    framework,
    failed,
    passed: uniqueIds(parts.passed ?? []).filter((id) => !failedSet.has(id)),
    skipped: uniqueIds(parts.skipped ?? []),
    counts: parts.counts ?? null,
    ranSignal: parts.ranSignal ?? false,
    noTestsRan: parts.noTestsRan ?? false,
    collectionError: parts.collectionError ?? false,
    incomplete: parts.incomplete ?? null,
  };
}

function uniqueIds(ids: Iterable<string>): string[] {
  const seen = new Set<string>();
  for (const id of ids) {
    const capped = capId(id);
    if (capped) seen.add(capped);
  }
  return [...seen];
}

// the directories a test path usually starts at, relative to the project
const TEST_ROOTS = new Set(['test', 'tests', 'spec', 'specs', '__tests__', 'src', 'lib']);

/**
 * A test file's path as an id part: relative to the workspace when it is known; else an absolute path is
 * cut at its last `test/`, `tests/`, `src/`, … segment, so the same file in a baseline copy gets the same id.
 */
export function relativeTestPath(path: string, workspace?: string | null): string {
  let p = path.trim().replace(/^file:\/\//, '');
  if (!p.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(p)) return p.replace(/^\.\//, '');
  p = p.replace(/\\/g, '/');
  if (workspace) {
    const root = workspace.replace(/\\/g, '/').replace(/\/+$/, '');
    if (p.startsWith(`${root}/`)) return p.slice(root.length + 1);
  }
  const parts = p.split('/');
  for (let i = parts.length - 2; i >= 0; i--) {
    if (TEST_ROOTS.has(parts[i] ?? '')) return parts.slice(i).join('/');
  }
  return parts.at(-1) ?? p;
}

/** A test file path as test runners print it (no spaces: a test name with spaces is not a path). */
export const TEST_FILE = /^(?:file:\/\/)?\.{0,2}\/?[\w@.\-/\\[\]()+]*\.(?:[cm]?[jt]sx?|py|go|rs)$/;

/** Reads `N word` pairs ("2 failed", "3 passed") from a summary line. */
export function readTally(line: string): Map<string, number> {
  const tally = new Map<string, number>();
  for (const m of line.matchAll(/(\d+)\s+([a-z]+)/gi)) {
    const word = (m[2] ?? '').toLowerCase();
    tally.set(word, (tally.get(word) ?? 0) + Number(m[1]));
  }
  return tally;
}

/** Sums the tally's entries for the given words. */
export function sumOf(tally: Map<string, number>, ...words: string[]): number {
  return words.reduce((sum, word) => sum + (tally.get(word) ?? 0), 0);
}

// a runner named as a word of the command (`npx tap`, `-c 'tape test/*.js'`; not `--test-reporter=tap`)
const word = (name: string) => new RegExp(`(?:^|[\\s;&|(/'"])${name}(?=$|[\\s;&|)'"])`);
export const COMMAND_FRAMEWORKS: [RegExp, TestFramework][] = [
  [/\bvitest\b/, 'vitest'],
  [/\bjest\b/, 'jest'],
  // `_mocha`: the bin istanbul and nyc wrappers of old called
  [/\b_?mocha\b/, 'mocha'],
  [/\bnode\b.*\s--test\b/, 'node-test'],
  [word('tape'), 'tape'],
  [word('tap'), 'tap'],
  [word('ava'), 'ava'],
  [word('jasmine'), 'jasmine'],
  [/\bbun\s+test\b/, 'bun'],
  [/\bdeno\s+test\b/, 'deno'],
  [/\bpytest\b/, 'pytest'],
  [/\bunittest\b/, 'unittest'],
  [/\bgo\s+test\b/, 'go'],
  [/\bcargo\s+(?:test|nextest)\b/, 'cargo'],
];

/** The test framework a command names (`npx tape test/*.js` → tape), or null: its silence then means "did not run". */
export function frameworkNamedBy(command: string): TestFramework | null {
  return COMMAND_FRAMEWORKS.find(([re]) => re.test(command))?.[1] ?? null;
}

/** The hint says the output is `framework`'s: the caller knows the runner, or the command names it. */
export function hintNames(hint: ParseHint, framework: TestFramework): boolean {
  return hint.framework === framework || (hint.framework == null && frameworkNamedBy(hint.command ?? '') === framework);
}
