import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { emptyRun, makeRun } from './shared.js';
import type { ParsedRun } from './types.js';
import { readBoundedText } from '../../platform/files/bounded-read.js';

// A test case's id is "<classname> > <name>", or the name alone when the classname repeats it (jest-junit
// writes the full title into both). Counts come from the test cases, not the suites' attributes, which
// reporters fill in differently (mocha's xunit counts failures as errors).

const TESTCASE = /<testcase\b((?:[^>"']|"[^"]*"|'[^']*')*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
const ATTRIBUTE = /([\w:.-]+)\s*=\s*("([^"]*)"|'([^']*)')/g;

/** Parses a JUnit XML report (surefire, jest-junit, mocha xunit, pytest --junitxml, go-junit-report). */
export function parseJUnitXml(xml: string): ParsedRun {
  if (!/<testsuites?\b/.test(xml)) return emptyRun();
  const failed: string[] = [];
  const passed: string[] = [];
  const skipped: string[] = [];
  for (const m of xml.matchAll(TESTCASE)) {
    const attrs = readAttributes(m[1] ?? '');
    const name = (attrs.get('name') ?? '').trim();
    const classname = (attrs.get('classname') ?? attrs.get('class') ?? '').trim();
    const id =
      !classname || classname === name || classname.endsWith(` ${name}`) || name.startsWith(classname)
        ? name || classname
        : `${classname} > ${name}`;
    const body = m[3] ?? '';
    if (/<(?:failure|error)\b/.test(body)) failed.push(id);
    else if (/<skipped\b/.test(body)) skipped.push(id);
    else passed.push(id);
  }
  const executed = passed.length + failed.length;
  return makeRun('junit', {
    failed,
    passed,
    skipped,
    counts: { passed: passed.length, failed: failed.length, skipped: skipped.length },
    ranSignal: executed > 0,
    noTestsRan: executed === 0,
  });
}

function readAttributes(text: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const m of text.matchAll(ATTRIBUTE)) attrs.set(m[1] ?? '', decodeEntities(m[3] ?? m[4] ?? ''));
  return attrs;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|lt|gt|amp|quot|apos);/gi, (_, entity: string) => {
    const e = entity.toLowerCase();
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(Number(e.slice(1)));
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[e] ?? '';
  });
}

// where test runners write JUnit reports by convention: [directory, how deep to look]
const REPORT_DIRS: [string, number][] = [
  ['reports', 3],
  ['test-results', 4],
  ['test-reports', 3],
  ['junit', 2],
  ['target/surefire-reports', 1],
  ['target/failsafe-reports', 1],
  ['target/nextest', 3],
  ['build/test-results', 3],
];
const ROOT_REPORT = /(?:^|[-_.])(?:junit|xunit|test-results?|TEST-.*)(?:[-_.].*)?\.xml$/i;

/** JUnit XML files in the workspace's usual report places that were written after `sinceMs`. */
export function findJUnitReports(workspace: string, sinceMs: number): string[] {
  const found: string[] = [];
  const consider = (path: string) => {
    try {
      if (statSync(path).mtimeMs <= sinceMs) return;
      // a FIFO or a link to /dev/zero named like a report is not one (issue 32)
      const head = readBoundedText(path, { maxBytes: 64 << 20, within: workspace })?.slice(0, 4096);
      if (head !== undefined && /<testsuites?\b/.test(head)) found.push(path);
    } catch {
      // vanished or unreadable: not a report of this run
    }
  };
  for (const name of safeList(workspace)) if (ROOT_REPORT.test(name)) consider(join(workspace, name));
  for (const [dir, depth] of REPORT_DIRS) walk(join(workspace, dir), depth, consider);
  return [...new Set(found)].sort();
}

function walk(dir: string, depth: number, visit: (path: string) => void): void {
  for (const name of safeList(dir)) {
    const path = join(dir, name);
    if (name.endsWith('.xml')) visit(path);
    else if (depth > 1 && name !== 'node_modules' && !name.startsWith('.')) {
      try {
        if (statSync(path).isDirectory()) walk(path, depth - 1, visit);
      } catch {
        // a dangling link: nothing to read
      }
    }
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
