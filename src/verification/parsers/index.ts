import { parseAvaOutput } from './ava.js';
import { parseBunOutput } from './bun.js';
import { parseCargoTestOutput } from './cargo.js';
import { parseDenoOutput } from './deno.js';
import { packageOf, parseGoTestOutput } from './go.js';
import { parseJasmineOutput } from './jasmine.js';
import { parseJestOutput } from './jest.js';
import { findJUnitReports, parseJUnitXml } from './junit.js';
import { parseMochaOutput } from './mocha.js';
import { parseNodeTestOutput } from './node-test.js';
import { parsePytestOutput } from './pytest.js';
import { capId, emptyRun, MAX_ID_CHARS, stripAnsi, toLines } from './shared.js';
import { parseTapOutput } from './tap.js';
import { parseTapeOutput } from './tape.js';
import type { OutputParser, ParsedRun, ParseHint, TestCounts, TestFramework } from './types.js';
import { parseUnittestOutput } from './unittest.js';
import { parseVitestOutput } from './vitest.js';

export type { OutputParser, ParsedRun, ParseHint, TestCounts, TestFramework };
export {
  capId,
  findJUnitReports,
  MAX_ID_CHARS,
  packageOf,
  parseAvaOutput,
  parseBunOutput,
  parseCargoTestOutput,
  parseDenoOutput,
  parseGoTestOutput,
  parseJasmineOutput,
  parseJestOutput,
  parseJUnitXml,
  parseMochaOutput,
  parseNodeTestOutput,
  parsePytestOutput,
  parseTapeOutput,
  parseTapOutput,
  parseUnittestOutput,
  parseVitestOutput,
  stripAnsi,
};

// Most specific signature first: a vitest run can print TAP-looking lines, plain go output is the vaguest.
// The three TAP readers each claim only their own dialect (node:test's, tape's, everything else).
const PARSERS: [Exclude<TestFramework, 'junit'>, OutputParser][] = [
  ['go', goJsonOnly],
  ['cargo', parseCargoTestOutput],
  ['pytest', parsePytestOutput],
  ['unittest', parseUnittestOutput],
  ['vitest', parseVitestOutput],
  ['jest', parseJestOutput],
  ['bun', parseBunOutput],
  ['deno', parseDenoOutput],
  ['jasmine', parseJasmineOutput],
  ['ava', parseAvaOutput],
  ['node-test', parseNodeTestOutput],
  ['tape', parseTapeOutput],
  ['tap', parseTapOutput],
  ['mocha', parseMochaOutput],
];

const KIND_FRAMEWORKS: Record<string, TestFramework[]> = {
  node: ['vitest', 'jest', 'mocha', 'node-test', 'tape', 'tap', 'ava', 'jasmine', 'bun', 'deno'],
  pytest: ['pytest', 'unittest'],
  go: ['go'],
  cargo: ['cargo'],
};

// a runner named as a word of the command (`npx tap`, not `--test-reporter=tap`)
const word = (name: string) => new RegExp(`(?:^|[\\s;&|(/])${name}(?=$|[\\s;&|)])`);
const COMMAND_FRAMEWORKS: [RegExp, TestFramework][] = [
  [/\bvitest\b/, 'vitest'],
  [/\bjest\b/, 'jest'],
  [/\bmocha\b/, 'mocha'],
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

/**
 * Reads a test run's console output into failing/passing ids, counts and run signals (spec 03 "Failures").
 * The hint's framework is tried first; the first parser that recognizes the output wins.
 */
export function parseTestOutput(output: string, hint: ParseHint = {}): ParsedRun {
  const lines = toLines(output);
  const preferred = new Set<TestFramework>();
  const command = hint.command ?? '';
  for (const [re, framework] of COMMAND_FRAMEWORKS) if (re.test(command)) preferred.add(framework);
  for (const framework of KIND_FRAMEWORKS[hint.kind ?? ''] ?? []) preferred.add(framework);
  const ordered = [
    ...PARSERS.filter(([name]) => preferred.has(name)).sort(([a], [b]) => order(preferred, a) - order(preferred, b)),
    ...PARSERS.filter(([name]) => !preferred.has(name)),
  ];
  for (const [, parse] of ordered) {
    const run = parse(lines, hint);
    if (run) return run;
  }
  // plain `go test` (no -json) has the vaguest signature: only when nothing else matched
  return parseGoTestOutput(lines, hint) ?? emptyRun();
}

/** "1 failed, 41 passed" (", 2 skipped" when any); null when the run printed no counts. */
export function summarizeCounts(run: ParsedRun): string | null {
  if (!run.counts) return null;
  const { passed, failed, skipped } = run.counts;
  const parts = [...(failed > 0 ? [`${failed} failed`] : []), `${passed} passed`, ...(skipped > 0 ? [`${skipped} skipped`] : [])];
  return parts.join(', ');
}

function order(preferred: Set<TestFramework>, framework: TestFramework): number {
  return [...preferred].indexOf(framework);
}

function goJsonOnly(lines: string[], hint: ParseHint): ParsedRun | null {
  return lines.some((l) => l.startsWith('{"') && l.includes('"Action"')) ? parseGoTestOutput(lines, hint) : null;
}
