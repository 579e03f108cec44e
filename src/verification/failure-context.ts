// issue 33: every fixer and every rung is told what failed — for each failing test id, the lines of
// the run's output that report it (the assertion, expected/actual, the head of its stack), bounded.
import { toLines } from './parsers/shared.js';

/** One failing test and the lines of the run's output about it. */
export interface FailureExcerpt {
  id: string;
  excerpt: string;
}

/** How much of the output each failure, and all of them, may take. */
export interface ExcerptBounds {
  /** Lines per id (default 12). */
  lines?: number;
  /** Characters per id (default 800). */
  chars?: number;
  /** Ids given an excerpt (default 6); the rest are named by the failure list alone. */
  ids?: number;
  /** Characters over all excerpts (default 3,000). */
  total?: number;
}

const DEFAULTS: Required<ExcerptBounds> = { lines: 12, chars: 800, ids: 6, total: 3_000 };
const LINE_CHARS = 160;
/** How far after a name a report is looked for before the line cap and filters apply. */
const SCAN_LINES = 40;
const STACK_FRAMES_KEPT = 2;

// a line that says what went wrong: the assertion, expected/actual, a panic, a traceback
const MARKER =
  /\b(expect(ed|s)?|actual|received|assert\w*|error|want|got|panick?ed|traceback|not ok|fail(ed|ure|s)?|mismatch|differ\w*|should|left|right)\b|!==?|===|^E\s|^\s*[-+]\s+\S/i;
// a line that starts another report or another section: a block ends before it
const BOUNDARY = [
  /^\s*(⎯{3,}|[_=]{5,}|-{5,}|─{3,})/, // section rules: vitest, pytest, unittest, ava
  /^\s*●\s/, // jest's failure headers
  /^\s*(=== (RUN|PAUSE|CONT)|--- (PASS|FAIL|SKIP):)/, // go
  /^(FAILED|PASSED|ERROR|SKIPPED|XFAIL|XPASS) /, // pytest's short summary
  /^\s*(PASS|FAIL)\s+\S/, // jest and vitest file lines
  /^\s*\d+\) \S/, // mocha and jasmine numbered failures
  /^# \S|^\s*# Subtest: /, // tape's test names, node:test's and tap's subtests
  /^\((pass|fail|skip)\) /, // bun
  /^(running \d+ tests?|failures:|test result:)/, // cargo, deno
  /^(FAIL|PASS|ok)(\s*$|\s+\S+\t)/, // go's package lines
  /^\s*(✔|✘|✓|×|✗|✖|﹣)\s|^\s*- \[skip\]|^\s*─\s*$/, // progress lines: ava, node:test's spec reporter
  /^\s*(Test Suites:|Tests:|Snapshots:|Time:|Ran \d+ tests?|\d+ (pass|fail|skip|error|passing|failing|pending)\b|\d+ tests? (failed|skipped|passed))/, // run summaries
];
// a line of a source excerpt (`16 | test('name', …`, ava's ` 15: `): neither a report nor another test's
const CODE_FRAME = /^\s*>?\s*\d+\s*(\||: )/;
// a report that follows its details (bun prints the assertion, then `(fail) name`)
const TRAILER = /^\(fail\) /;
// framework chatter inside a report that tells nothing about the failure
const NOISE =
  /^\s*(---\s*$|\.\.\.|duration_ms:|failureType:|type: 'suite'|columnNumber:|typeName:|isToplevel:|stack backtrace:|note: Some details are omitted)/;
// a stack frame: only the first few of a run of them are kept
const FRAME = /^\s*(at\s|\d+: \S)|\(\S*:\d+(:\d+)?\)(\s*\(.*\))?\s*$|^\s+at \S+:\d+/;
// the end of a TAP diagnostic block: the report ends with it
const YAML_END = /^\s*\.\.\.\s*$/;

/**
 * For each failing id, the block of the run's output where that test is reported failing: its
 * assertion, expected and actual, the head of its stack — ANSI stripped, blank lines and framework
 * chatter dropped, bounded per id and in total. Ids whose name the output never mentions (and
 * gaffer's own `<…>` markers) get no excerpt.
 */
export function failureExcerpts(output: string, ids: readonly string[], opts: ExcerptBounds = {}): FailureExcerpt[] {
  const bounds = { ...DEFAULTS, ...opts };
  const lines = plainLines(output);
  const named = ids.filter((id) => !id.startsWith('<'));
  const others = named.map((id) => ({ id, needle: wordPattern(lastSegment(id)) }));
  const out: FailureExcerpt[] = [];
  let total = 0;
  for (const id of named.slice(0, bounds.ids)) {
    const rivals = others
      .filter((o) => o.id !== id && !lastSegment(id).includes(lastSegment(o.id)))
      .map((o) => o.needle);
    const block = bestBlock(lines, id, rivals, bounds.lines);
    if (block === null) continue;
    const room = Math.min(bounds.chars, bounds.total - total);
    if (room < 80) break;
    const excerpt = clip(block.join('\n'), room);
    total += excerpt.length;
    out.push({ id, excerpt });
  }
  return out;
}

/** The output as plain lines; `go test -json` events become the test output they carry. */
function plainLines(output: string): string[] {
  const lines: string[] = [];
  for (const line of toLines(output)) {
    if (line.startsWith('{"') && line.includes('"Action"')) {
      const text = goJsonOutput(line);
      if (text !== undefined) {
        if (text !== null) lines.push(...text.split('\n'));
        continue;
      }
    }
    lines.push(line);
  }
  return lines;
}

/** A `go test -json` event's output (null: an event without output); undefined when the line is no such event. */
function goJsonOutput(line: string): string | null | undefined {
  try {
    const event = JSON.parse(line) as { Action?: unknown; Output?: unknown };
    if (typeof event.Action !== 'string') return undefined;
    return event.Action === 'output' && typeof event.Output === 'string' ? event.Output.replace(/\n$/, '') : null;
  } catch {
    return undefined;
  }
}

/** The test's own name: the id's last segment (`file > suite > name`, `file.py::name`). */
function lastSegment(id: string): string {
  return (
    id
      .split(/ > | › |::/)
      .at(-1)
      ?.trim() ?? id
  );
}

/**
 * The names the output may report the test by, most specific first: the id, its last segment; then
 * (when neither appears) the part after its last `.` or `/` (`pkg.TestName`, `pkg/TestName`,
 * `module.Class.test_name`), then the last words of a space-joined id (`suite name` in jasmine).
 */
function needles(id: string): { primary: string[]; fallback: string[] } {
  const last = lastSegment(id);
  const primary = [...new Set([id, last])];
  const fallback: string[] = [];
  const isFile = /\.(c|m)?[jt]sx?$|\.py$|\.go$|\.rs$/.test(last);
  for (const sep of ['.', '/']) {
    const tail = last.slice(last.lastIndexOf(sep) + 1);
    if (!isFile && tail !== last && tail.length >= 4 && /^[A-Za-z_]/.test(tail)) fallback.push(tail);
  }
  const words = last.split(' ');
  for (let i = 1; words.length - i >= 2; i++) fallback.push(words.slice(i).join(' '));
  return { primary, fallback: [...new Set(fallback)].filter((n) => !primary.includes(n)) };
}

/** A needle matched as a whole name: not inside a longer word. */
function wordPattern(needle: string): RegExp {
  const escaped = needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`${/^\w/.test(needle) ? '(?<!\\w)' : ''}${escaped}${/\w$/.test(needle) ? '(?!\\w)' : ''}`);
}

/** The lines where the test is reported: of every line naming it, the one whose report says the most. */
function bestBlock(lines: readonly string[], id: string, rivals: readonly RegExp[], maxLines: number): string[] | null {
  const { primary, fallback } = needles(id);
  let hits: number[] = [];
  let own: RegExp[] = [];
  for (const group of [primary, ...fallback.map((n) => [n])]) {
    own = group.map(wordPattern);
    hits = lines.flatMap((line, i) => (!CODE_FRAME.test(line) && own.some((re) => re.test(line)) ? [i] : []));
    if (hits.length > 0) break;
  }
  let best: { block: string[]; score: number } | null = null;
  for (const at of hits) {
    const block = blockAt(lines, at, own, rivals, maxLines);
    // the name line itself (`✘ [fail]: name`) says nothing of why
    const header = lines[at] ?? '';
    const score =
      block.filter((l) => l.trim() !== header.trim() && !CODE_FRAME.test(l) && MARKER.test(l)).length * 10 +
      block.length;
    if (best === null || score > best.score) best = { block, score };
  }
  return best?.block ?? null;
}

/**
 * The report at line `at`: the lines after it until another test's report or a new section (the
 * lines before it, back to the previous report, for a framework that names the test last), filtered
 * and capped.
 */
function blockAt(
  lines: readonly string[],
  at: number,
  own: readonly RegExp[],
  rivals: readonly RegExp[],
  maxLines: number,
): string[] {
  const header = lines[at] ?? '';
  const backward = TRAILER.test(header);
  const raw: string[] = [];
  let content = false;
  for (let n = 1; n <= SCAN_LINES; n++) {
    const i = backward ? at - n : at + n;
    if (i < 0 || i >= lines.length) break;
    const line = lines[i] ?? '';
    if (!CODE_FRAME.test(line)) {
      const mine = own.some((re) => re.test(line));
      if (backward && mine) break;
      if (!mine && rivals.some((re) => re.test(line))) break;
      // a rule right under the header (unittest's `FAIL: …` then `-----`) belongs to it
      if (!mine && BOUNDARY.some((re) => re.test(line))) {
        if (content || backward) break;
        continue;
      }
    }
    raw.push(line);
    if (line.trim() !== '') content = true;
    if (!backward && YAML_END.test(line)) break;
  }
  const ordered = backward ? [...raw.reverse(), header] : [header, ...raw];
  const kept: string[] = [];
  let frames = 0;
  for (const line of ordered) {
    if (line.trim() === '' || NOISE.test(line)) continue;
    frames = FRAME.test(line) ? frames + 1 : 0;
    if (frames > STACK_FRAMES_KEPT) continue;
    kept.push(line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS - 1)}…` : line);
  }
  // named last: its assertion sits just above the name
  return dedent(backward ? kept.slice(-maxLines) : kept.slice(0, maxLines));
}

/** Lines without their shared leading indentation. */
function dedent(lines: string[]): string[] {
  const indent = Math.min(...lines.map((l) => /^\s*/.exec(l)?.[0].length ?? 0));
  return indent > 0 && Number.isFinite(indent) ? lines.map((l) => l.slice(indent)) : lines;
}

function clip(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}
