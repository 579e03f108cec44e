import { makeRun } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// libtest prints "test tests::name ... ok|FAILED|ignored" per test (in completion order, which varies
// between runs) and, after a failing binary, a sorted "failures:" list: failures are taken in that order.
// A compile error is "could not compile `crate` (lib test)": the crate and target become the id.

const RUNNING = /^running (\d+) tests?$/;
const RESULT = /^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?|bench:.*)$/;
const TOTALS =
  /^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered out/;
const COMPILE_FAILED = /^error: could not compile `([^`]+)`(?: \(([^)]+)\))?/;

/** Parses `cargo test` (libtest) output. */
export function parseCargoTestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  void hint;
  const recognized = lines.some((l) => RUNNING.test(l) || TOTALS.test(l) || COMPILE_FAILED.test(l));
  if (!recognized) return null;
  const listed: string[] = [];
  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  let counts: TestCounts | null = null;
  const notCompiled: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const result = RESULT.exec(line);
    if (result) {
      const name = result[1] ?? '';
      const outcome = result[2] ?? '';
      if (outcome === 'FAILED') failed.push(name);
      else if (outcome.startsWith('ignored')) skipped.push(name);
      else passed.push(name);
      continue;
    }
    // the closing list: "failures:" then one indented name a line (the first "failures:" holds output blocks)
    if (line === 'failures:' && /^ {4}\S/.test(lines[i + 1] ?? '')) {
      for (i++; i < lines.length && /^ {4}\S+$/.test(lines[i] ?? ''); i++) listed.push((lines[i] ?? '').trim());
      i--;
      continue;
    }
    const totals = TOTALS.exec(line);
    if (totals) {
      counts ??= { passed: 0, failed: 0, skipped: 0 };
      counts.passed += Number(totals[2]);
      counts.failed += Number(totals[3]);
      counts.skipped += Number(totals[4]);
      continue;
    }
    const compile = COMPILE_FAILED.exec(line);
    if (compile) notCompiled.push(compile[2] ? `${compile[1] ?? ''} (${compile[2]})` : (compile[1] ?? ''));
  }
  const executed = counts ? counts.passed + counts.failed : passed.length + failed.length;
  const collectionError = (notCompiled.length > 0 || lines.some((l) => /^error\[E\d+\]/.test(l))) && executed === 0;
  return makeRun('cargo', {
    failed: [...listed, ...failed, ...notCompiled],
    passed,
    skipped,
    counts,
    ranSignal: executed > 0,
    noTestsRan: !collectionError && executed === 0 && lines.some((l) => RUNNING.test(l)),
    collectionError,
  });
}
