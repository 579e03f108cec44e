/**
 * Shortening of the free text in the compact answer (spec 03: a 4-worker job with a failed
 * verification stays under ~1,500 tokens). Each step keeps what a coordinator acts on and says
 * where something was left out; `?full=1` bypasses all of it.
 */

const ELLIPSIS = '…';

/** Folds each run of identical consecutive lines into one line marked ` [×N]` (progress noise, repeated logs); blank runs into one blank line. */
export function collapseRepeats(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    let j = i + 1;
    while (j < lines.length && lines[j] === line) j++;
    out.push(j - i > 1 && line.trim() !== '' ? `${line} [×${j - i}]` : line);
    i = j;
  }
  return out.join('\n');
}

// a stack frame whose location is inside the runtime or a dependency: `    at x (node:internal/…:1:2)`,
// `    Test.run (node:internal/test_runner/test:796:25)`, `    node:internal/process/task_queues:140:7`
const RUNTIME_FRAME = /^\s+(?:at\s+)?(?:\S[^(]*\s\()?(?:node:|[^\s()]*\/node_modules\/)[^\s()]+:\d+(?::\d+)?\)?\s*$/;

/** Replaces each run of stack frames inside the runtime or `node_modules` by one line saying how many were left out. */
export function dropRuntimeFrames(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (!RUNTIME_FRAME.test(line)) {
      out.push(line);
      i++;
      continue;
    }
    let j = i + 1;
    while (j < lines.length && RUNTIME_FRAME.test(lines[j] ?? '')) j++;
    const indent = /^\s*/.exec(line)?.[0] ?? '';
    out.push(j - i > 1 ? `${indent}${ELLIPSIS} ${j - i} runtime frames` : line);
    i = j;
  }
  return out.join('\n');
}

/** A command longer than this has its trailing path arguments counted instead of spelled out. */
const COMMAND_CUT = 120;

// a shell word: bare, '…' or "…" parts glued together (the way gaffer quotes paths it adds)
const SHELL_WORD = /(?:[^\s'"]+|'[^']*'|"(?:\\.|[^"\\])*")+/g;
const unquote = (word: string) =>
  word.replace(
    /'([^']*)'|"((?:\\.|[^"\\])*)"/g,
    (_m, single: string | undefined, double: string | undefined) => single ?? double ?? '',
  );
const isPathWord = (word: string) =>
  !word.startsWith('-') && !word.includes('=') && (word === '.' || word.includes('/') || /\.\w+$/.test(word));

/**
 * A long command with the paths at its end (the files or packages a related run selected) counted:
 * `python3 -m pytest -q -rA … (15 related files)`. `relatedFiles` names them "related files" when
 * they are exactly those; a short command, or one with a single path, is kept as it is.
 */
export function cutPathArguments(command: string, relatedFiles: readonly string[]): string {
  if (command.length <= COMMAND_CUT) return command;
  const words = [...command.matchAll(SHELL_WORD)];
  let first = words.length;
  while (first > 1 && isPathWord(unquote(words[first - 1]?.[0] ?? ''))) first--;
  const paths = words.slice(first).map((w) => unquote(w[0]));
  const start = words[first]?.index;
  if (paths.length < 2 || start === undefined) return command;
  const related = new Set(relatedFiles);
  const what =
    paths.every((p) => related.has(p)) && paths.length === related.size
      ? 'related files'
      : paths.every((p) => p === '.' || p.startsWith('./'))
        ? 'packages'
        : 'paths';
  return `${command.slice(0, start).trimEnd()} ${ELLIPSIS} (${paths.length} ${what})`;
}

/** Makes paths under the workspace relative (`file:///ws/test/a.js:5` → `test/a.js:5`): the answer names the workspace once. */
export function relativizePaths(text: string, workspace: string): string {
  const root = workspace.replace(/\/+$/, '');
  if (root.length < 2) return text;
  const escaped = root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // only where a path starts, so /w does not eat the middle of /home/x/w/…
  return text.replace(new RegExp(`(^|[\\s'"(\`=:])(?:file://)?${escaped}/`, 'gm'), '$1');
}

/** The end of `text` in at most `max` chars, marked `…`; starts on a line when a line boundary is near. */
export function keepTail(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = text.slice(text.length - (max - ELLIPSIS.length));
  const newline = tail.indexOf('\n');
  const fromLine = newline >= 0 && newline < tail.length / 4 ? tail.slice(newline + 1) : tail;
  return `${ELLIPSIS}${fromLine}`;
}

/**
 * `text` in at most `max` chars: its start (where a worker says what it did) and its end (its last
 * words: a runner keeps the tail of the output) with ` … ` between them.
 */
export function elideMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const gap = ` ${ELLIPSIS} `;
  const room = max - gap.length;
  if (room < 2) return text.slice(0, max);
  const headLen = Math.floor(room / 3);
  const head = text.slice(0, headLen).trimEnd();
  const tail = text.slice(text.length - (room - headLen)).trimStart();
  return `${head}${gap}${tail}`;
}

/**
 * Splits `budget` chars between texts of the given lengths: one that needs less than its share
 * takes only what it needs and the rest is shared again (water-filling by `weights`); every share is
 * at least `floor` (so many workers can overrun the budget a little) and at most `cap`.
 */
export function shareBudget(
  lengths: number[],
  weights: number[],
  opts: { budget: number; floor: number; cap: number },
): number[] {
  const shares = lengths.map(() => 0);
  let open = lengths.map((_, i) => i);
  let left = opts.budget;
  while (open.length > 0) {
    const weight = open.reduce((sum, i) => sum + (weights[i] ?? 1), 0);
    const fits = open.filter((i) => (lengths[i] ?? 0) <= Math.max(opts.floor, (left * (weights[i] ?? 1)) / weight));
    if (fits.length === 0) {
      for (const i of open)
        shares[i] = Math.min(opts.cap, Math.max(opts.floor, Math.floor((left * (weights[i] ?? 1)) / weight)));
      break;
    }
    for (const i of fits) {
      shares[i] = Math.min(opts.cap, lengths[i] ?? 0);
      left -= shares[i] ?? 0;
    }
    open = open.filter((i) => !fits.includes(i));
  }
  return shares;
}

// a line that only says one test passed: TAP `ok 3 - adds` (not `not ok`), mocha/jest/node:test
// `✓ adds` / `✔ adds (0.4ms)`, jest `PASS test/a.test.js`, pytest `PASSED tests/x.py::t` (-rA) or
// `tests/x.py::t PASSED [ 50%]` (-v), go `--- PASS: TestX (0.00s)` and `ok  	pkg	0.01s`,
// cargo `test x ... ok`, unittest `test_x (m.C) ... ok`
const PASSING_LINE = [
  /^\s*ok \d+(?:\s|$)/,
  /^\s*[✓✔√]\s/,
  /^\s*PASS\s+\S/,
  /^\s*PASSED\s+\S/,
  /\sPASSED(?:\s+\[\s*\d+%\])?\s*$/,
  /^\s*--- PASS: /,
  /^ok\s+\S+\s+(?:\(cached\)|[\d.]+s)/,
  /\s\.\.\. ok$/,
];
const isPassingLine = (line: string) => PASSING_LINE.some((re) => re.test(line));
// node:test's TAP names each test before its `ok` line and follows it with a YAML block
const SUBTEST = /^\s*# Subtest: /;
const YAML_START = /^\s+---\s*$/;
const YAML_END = /^\s+\.\.\.\s*$/;

/**
 * Leaves out the lines that only say a test passed (issue 33: a tail of `ok` lines beside the
 * failing ids says nothing the summary's count does not), with node:test's `# Subtest:` line and
 * YAML block of each passing test; each run left out becomes one line `… N passing`.
 */
export function dropPassingLines(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let dropped = 0;
  const flush = () => {
    if (dropped > 0) out.push(`${ELLIPSIS} ${dropped} passing`);
    dropped = 0;
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (!isPassingLine(line)) {
      // a `# Subtest:` line belongs to the test whose result follows it
      if (SUBTEST.test(line) && isPassingLine(lines[i + 1] ?? '')) {
        i++;
        continue;
      }
      flush();
      out.push(line);
      i++;
      continue;
    }
    dropped++;
    i++;
    if (YAML_START.test(lines[i] ?? '')) {
      let end = i + 1;
      while (end < lines.length && !YAML_END.test(lines[end] ?? '')) end++;
      if (end < lines.length) i = end + 1;
    }
  }
  flush();
  return out.join('\n');
}
