/** The test frameworks whose output gaffer reads (spec 03 "Failures"). */
export type TestFramework =
  | 'node-test'
  | 'vitest'
  | 'jest'
  | 'mocha'
  | 'tap'
  | 'tape'
  | 'ava'
  | 'jasmine'
  | 'bun'
  | 'deno'
  | 'pytest'
  | 'unittest'
  | 'go'
  | 'cargo'
  | 'junit';

/** Counts from a framework's own summary line. */
export interface TestCounts {
  /** Tests that passed. */
  passed: number;
  /** Tests that failed, errored or were cancelled. */
  failed: number;
  /** Tests skipped, ignored, pending or todo. */
  skipped: number;
}

/** What a test run's output says about which tests passed and failed. */
export interface ParsedRun {
  /** The parser that recognized the output; null when none did. */
  framework: TestFramework | null;
  /** Failing test ids, deduplicated, in output order (each at most 200 chars). */
  failed: string[];
  /** Passing ids when the output lists every one of them; [] when it does not. */
  passed: string[];
  /** Skipped, ignored or todo ids when the output lists them. */
  skipped: string[];
  /**
   * From the framework's summary line; null when none was printed. Counted from the listed tests where the
   * summary counts something else or nothing: go `-json`, JUnit, tape (its summary counts assertions), deno
   * (its summary counts a test with steps and each step), AVA (no passed count next to failures).
   */
  counts: TestCounts | null;
  /** The output shows that tests executed ("# pass 3", "Tests: 1 failed, 2 passed", "3 passing", "test result: ok."). */
  ranSignal: boolean;
  /** The output says the suite completed with nothing executed (no test files, 0 tests, everything skipped). */
  noTestsRan: boolean;
  /** Collection, import or build errors stopped the suite before any test ran. */
  collectionError: boolean;
  /**
   * Issue 33: null when the output shows the runner reached its end (its plan, its closing summary); else in
   * words why not ("TAP output has no plan line (1..N)"). Null too where the format has no such end to look for.
   */
  incomplete: string | null;
}

/** What the caller knows about the run; every field helps, none is needed. */
export interface ParseHint {
  /** The detected kind (`node`, `pytest`, `go`, `cargo`, …): its parsers are tried first. */
  kind?: string | null;
  /** The command that ran: a framework it names is tried first. */
  command?: string | null;
  /**
   * The runner behind the command when the caller knows it (`npm test` whose script runs tape): tried first,
   * and output of it cut short before its summary is read as that runner's, incomplete (issue 33).
   */
  framework?: TestFramework | null;
  /** The directory the command ran in: absolute test paths in the output are made relative to it. */
  workspace?: string | null;
}

/** A parser for one framework's console output: null when the output is not that framework's. */
export type OutputParser = (lines: string[], hint: ParseHint) => ParsedRun | null;
