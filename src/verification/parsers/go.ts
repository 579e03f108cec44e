import { makeRun } from './shared.js';
import type { ParsedRun, ParseHint } from './types.js';

// Ids are "<import path>.<TestName>", subtests "<import path>.<TestName>/<sub>". `go test -json` lists every
// test, so counts are counted from it; plain `go test` names only failures ("--- FAIL: TestX") and prints
// no totals. A package that fails with no failing test (build error, panic in TestMain, timeout) is an id too.

interface GoEvent {
  Action?: string;
  Package?: string;
  Test?: string;
  Output?: string;
  FailedBuild?: string;
  ImportPath?: string;
}

const PKG_LINE = /^(ok|FAIL|\?)\s+(\S+)(?:\s+(\[[^\]]+\]|[\d.]+s|\(cached\)))?(?:\s+(.*))?$/;
const TEST_LINE = /^(\s*)--- (FAIL|PASS|SKIP): (\S+)/;

class GoRun {
  readonly failed: string[] = [];
  readonly passed: string[] = [];
  readonly skipped: string[] = [];
  readonly failedPackages = new Set<string>();
  readonly brokenPackages = new Set<string>();
  readonly packages = new Map<string, 'ok' | 'fail' | 'none'>();
  testsSeen = 0;
  sawRunMarker = false;

  addPackageLine(m: RegExpExecArray): void {
    const [, status, pkg = '', detail = '', rest = ''] = m;
    const note = `${detail} ${rest}`;
    if (status === '?' || /\[no test files\]/.test(note)) this.packages.set(pkg, 'none');
    else if (status === 'ok') this.packages.set(pkg, /\[no tests to run\]/.test(note) ? 'none' : 'ok');
    else {
      this.packages.set(pkg, 'fail');
      this.failedPackages.add(pkg);
      if (/\[(?:build|setup) failed\]/.test(note)) this.brokenPackages.add(pkg);
    }
    this.sawRunMarker = true;
  }
}

/** Parses `go test -json` and plain `go test` output. */
export function parseGoTestOutput(lines: string[], hint: ParseHint = {}): ParsedRun | null {
  void hint;
  const run = new GoRun();
  let jsonEvents = 0;
  // plain mode: "--- FAIL" lines come before the package's own "FAIL\t<pkg>" line
  let pending: { outcome: string; name: string }[] = [];
  for (const line of lines) {
    if (line.startsWith('{')) {
      const event = parseEvent(line);
      if (event) {
        jsonEvents++;
        readEvent(run, event);
        continue;
      }
    }
    if (jsonEvents > 0) {
      // between JSON events: build errors and "FAIL <pkg> [build failed]" from older toolchains
      const m = PKG_LINE.exec(line);
      if (m && m[1] === 'FAIL') run.addPackageLine(m);
      continue;
    }
    const test = TEST_LINE.exec(line);
    if (test) {
      pending.push({ outcome: test[2] ?? '', name: test[3] ?? '' });
      continue;
    }
    const m = PKG_LINE.exec(line);
    if (m && (m[3] !== undefined || m[1] === '?')) {
      const pkg = m[2] ?? '';
      run.addPackageLine(m);
      for (const t of pending) {
        const id = `${pkg}.${t.name}`;
        run.testsSeen++;
        if (t.outcome === 'FAIL') run.failed.push(id);
        else if (t.outcome === 'PASS') run.passed.push(id);
        else run.skipped.push(id);
      }
      pending = [];
    }
  }
  if (jsonEvents === 0 && !run.sawRunMarker) return null;

  // a parent fails with its subtests: the subtests are the failures
  const failed = run.failed.filter((id) => !run.failed.some((other) => other.startsWith(`${id}/`)));
  const failedTestPackages = new Set(failed.map((id) => packageOf(id)));
  for (const pkg of run.failedPackages) if (!failedTestPackages.has(pkg)) failed.push(pkg);
  const statuses = [...run.packages.values()];
  const executed = jsonEvents > 0 ? run.passed.length + failed.length : statuses.filter((s) => s !== 'none').length;
  const collectionError =
    run.brokenPackages.size > 0 && run.passed.length + run.failed.length === 0 && !statuses.includes('ok');
  return makeRun('go', {
    failed,
    passed: run.passed,
    skipped: run.skipped,
    counts: jsonEvents > 0 ? { passed: run.passed.length, failed: failed.length, skipped: run.skipped.length } : null,
    ranSignal: !collectionError && (run.testsSeen > 0 || statuses.some((s) => s === 'ok' || s === 'fail')),
    noTestsRan: !collectionError && statuses.length > 0 && statuses.every((s) => s === 'none') && executed === 0,
    collectionError,
  });
}

function readEvent(run: GoRun, event: GoEvent): void {
  const pkg = event.Package ?? '';
  const action = event.Action ?? '';
  if (event.Test) {
    const id = `${pkg}.${event.Test}`;
    if (action === 'pass') run.passed.push(id);
    else if (action === 'fail') run.failed.push(id);
    else if (action === 'skip') run.skipped.push(id);
    if (action === 'pass' || action === 'fail' || action === 'skip') run.testsSeen++;
    return;
  }
  if (action === 'output' && event.Output) {
    const m = PKG_LINE.exec(event.Output.trimEnd());
    if (m && m[2] === pkg) run.addPackageLine(m);
    return;
  }
  if (action === 'build-fail') {
    run.brokenPackages.add(event.ImportPath ?? pkg);
    return;
  }
  if (action === 'fail') {
    run.failedPackages.add(pkg);
    run.packages.set(pkg, 'fail');
    if (event.FailedBuild) run.brokenPackages.add(pkg);
  } else if (action === 'skip' && !run.packages.has(pkg)) run.packages.set(pkg, 'none');
  else if (action === 'pass' && run.packages.get(pkg) !== 'none') run.packages.set(pkg, 'ok');
}

function parseEvent(line: string): GoEvent | null {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null || !('Action' in value)) return null;
    return value as GoEvent;
  } catch {
    return null;
  }
}

/** The import path of a go test id: "example.com/m/calc.TestAdd/sub" → "example.com/m/calc". */
export function packageOf(id: string): string {
  return /^(.*?)\.((?:Test|Example|Fuzz|Benchmark)[^/]*)(?:\/.*)?$/.exec(id)?.[1] ?? id;
}
