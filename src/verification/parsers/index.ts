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
import { capId, COMMAND_FRAMEWORKS, emptyRun, frameworkNamedBy, MAX_ID_CHARS, stripAnsi, toLines } from './shared.js';
import { parseTapOutput } from './tap.js';
import { parseTapeOutput } from './tape.js';
import type { OutputParser, ParsedRun, ParseHint, TestCounts, TestFramework } from './types.js';
import { parseUnittestOutput } from './unittest.js';
import { parseVitestOutput } from './vitest.js';

export type { OutputParser, ParsedRun, ParseHint, TestCounts, TestFramework };
export {
  capId,
  findJUnitReports,
  frameworkNamedBy,
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

/**
 * Reads a test run's console output into failing/passing ids, counts and run signals (spec 03 "Failures").
 * The hint's framework is tried first; the first parser that recognizes the output wins.
 */
export function parseTestOutput(output: string, hint: ParseHint = {}): ParsedRun {
  const lines = toLines(output);
  const preferred = new Set<TestFramework>();
  const command = hint.command ?? '';
  if (hint.framework) preferred.add(hint.framework);
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
  const go = parseGoTestOutput(lines, hint);
  if (go) return go;
  // issue 33: the known runner printed nothing of its own (it crashed, or the code under test ended the
  // process as it loaded): its run, which did not reach its end
  const known = hint.framework ?? frameworkNamedBy(command);
  return known && known !== 'junit' ? { ...emptyRun(known), incomplete: NO_END[known] } : emptyRun();
}

/** What each runner prints at its end, for output in which it is missing. */
const NO_END: Record<Exclude<TestFramework, 'junit'>, string> = {
  'node-test': "node --test printed no TAP plan line (1..N) nor its 'tests N' summary",
  vitest: "vitest printed no 'Tests' summary",
  jest: "jest printed no 'Tests:' summary",
  mocha: "mocha printed no 'N passing' summary",
  tap: 'tap printed no TAP plan line (1..N)',
  tape: 'tape printed no TAP plan line (1..N)',
  ava: "ava printed no 'N tests passed' summary",
  jasmine: "jasmine printed no 'N specs' summary",
  bun: "bun test printed no 'Ran N tests' summary",
  deno: "deno test printed no 'ok | N passed' summary",
  pytest: 'pytest printed no final summary line',
  unittest: "unittest printed no 'Ran N tests' line",
  go: 'go test printed no ok or FAIL line',
  cargo: "cargo test printed no 'test result:' line",
};

/** "1 failed, 41 passed" (", 2 skipped" when any); null when the run printed no counts. */
export function summarizeCounts(run: ParsedRun): string | null {
  if (!run.counts) return null;
  const { passed, failed, skipped } = run.counts;
  const parts = [
    ...(failed > 0 ? [`${failed} failed`] : []),
    `${passed} passed`,
    ...(skipped > 0 ? [`${skipped} skipped`] : []),
  ];
  return parts.join(', ');
}

function order(preferred: Set<TestFramework>, framework: TestFramework): number {
  return [...preferred].indexOf(framework);
}

function goJsonOnly(lines: string[], hint: ParseHint): ParsedRun | null {
  return lines.some((l) => l.startsWith('{"') && l.includes('"Action"')) ? parseGoTestOutput(lines, hint) : null;
}
