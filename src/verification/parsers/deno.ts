import { makeRun, relativeTestPath } from './shared.js';
import type { ParsedRun, ParseHint, TestCounts } from './types.js';

// `deno test` prints "running 3 tests from ./test/a.test.js", then "name ... ok (1ms)"; a test with steps
// opens with "name ..." and closes with "name ... ok" after its steps (two more spaces a level). Ids are
// "<file> > test > step". The closing "ok | 2 passed (2 steps) | …" counts a test with steps and each of
// its steps, so counts are counted from the lines. A module that fails to load or type-check stops the
// run before it starts: the file named by the error is the failure.

const RUNNING = /^running (\d+) tests? from (\S+)$/;
const RESULT =
  /^( *)(.+?) \.\.\. (ok|FAILED|ignored)((?: \(due to \d+ failed steps?\))?)(?: \([\d.]+(?:ms|µs|ns|s|m)\))?$/;
const OPEN = /^( *)(.+?) \.\.\.$/;
const SUMMARY = /^(ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \(\d+ steps?\))?/;
const UNCAUGHT = /^Uncaught error from (\S+) FAILED$/;
const OUTPUT_START = /^-+ (?:pre-test |post-test )?output -+$/;
const OUTPUT_END = /^-+ (?:pre-test |post-test )?output end -+$/;
const NO_MODULES = /^error: No test modules found$/;
// "error: Module not found …" or "TS2307 [ERROR]: …", then "    at file:///…/test/a.test.js:1:24"
const LOAD_ERROR = /^(?:error: (?:Module not found|Relative import path|Import .* failed)|TS\d+ \[ERROR\]:)/;
const AT_FILE = /^\s+at (file:\/\/\S+?):\d+:\d+$/;

interface Frame {
  name: string;
  hasSteps: boolean;
}

/** Parses `deno test` output. */
export function parseDenoOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  const noModules = lines.some((l) => NO_MODULES.test(l));
  const typeCheckFailed = lines.some((l) => /^error: Type checking failed\.$/.test(l));
  const recognized = noModules || typeCheckFailed || lines.some((l) => RUNNING.test(l) || SUMMARY.test(l));
  if (!recognized) return null;
  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  let file = '';
  let stack: Frame[] = [];
  let inOutput = false;
  let fileFailures = 0;
  let summary = false;
  let started = false;
  let loadFailures = 0;
  for (const [i, line] of lines.entries()) {
    // a test's console output sits between markers: anything may be in it
    if (OUTPUT_START.test(line)) inOutput = true;
    if (inOutput) {
      if (OUTPUT_END.test(line)) inOutput = false;
      continue;
    }
    // the ERRORS and FAILURES recaps repeat what the tree said
    if (/^ (?:ERRORS|FAILURES) $/.test(line)) file = '';
    const running = RUNNING.exec(line);
    if (running) {
      file = relativeTestPath(running[2] ?? '', hint.workspace);
      stack = [];
      started = true;
      continue;
    }
    summary ||= SUMMARY.test(line);
    const uncaught = UNCAUGHT.exec(line);
    if (uncaught) {
      failed.push(relativeTestPath(uncaught[1] ?? '', hint.workspace));
      fileFailures++;
      continue;
    }
    if (!started && LOAD_ERROR.test(line)) {
      const at = lines
        .slice(i + 1, i + 6)
        .map((l) => AT_FILE.exec(l)?.[1])
        .find((f) => f !== undefined);
      if (at) {
        failed.push(relativeTestPath(at, hint.workspace));
        loadFailures++;
      }
      continue;
    }
    if (!file) continue;
    const open = OPEN.exec(line);
    if (open) {
      const depth = Math.floor((open[1] ?? '').length / 2);
      stack.length = depth;
      const parent = stack[depth - 1];
      if (parent) parent.hasSteps = true;
      stack[depth] = { name: open[2] ?? '', hasSteps: false };
      continue;
    }
    const result = RESULT.exec(line);
    if (!result) continue;
    const depth = Math.floor((result[1] ?? '').length / 2);
    const name = result[2] ?? '';
    const frame = stack[depth]?.name === name ? stack[depth] : undefined;
    const parent = stack[depth - 1];
    if (parent) parent.hasSteps = true;
    const id = [file, ...stack.slice(0, depth).map((f) => f.name), name].join(' > ');
    const outcome = result[3];
    stack.length = depth;
    if (frame?.hasSteps) {
      // a test with steps fails through them; "FAILED" without "(due to N failed steps)" is its own failure
      if (outcome === 'FAILED' && !result[4]) failed.push(id);
      continue;
    }
    if (outcome === 'ok') passed.push(id);
    else if (outcome === 'FAILED') failed.push(id);
    else skipped.push(id);
  }
  const executed = passed.length + failed.length - fileFailures - loadFailures;
  const counts: TestCounts | null =
    started || summary ? { passed: passed.length, failed: failed.length, skipped: skipped.length } : null;
  // a module that did not load or type-check, or failed outside its tests, with no test run
  const collectionError = executed === 0 && (typeCheckFailed || loadFailures + fileFailures > 0);
  return makeRun('deno', {
    failed,
    passed,
    skipped,
    counts,
    ranSignal: executed > 0,
    // only the closing summary or "No test modules found" say so: output cut short (a crash) is not that
    noTestsRan: !collectionError && executed === 0 && failed.length === 0 && (noModules || summary),
    collectionError,
  });
}
