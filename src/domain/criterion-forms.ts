/**
 * The criterion forms gaffer can check mechanically (spec 03 "Job criteria"). A criterion is read
 * whole (case-insensitive, one trailing period allowed); anything that is not one of these forms
 * is `unchecked` — never met because a word in it matched:
 *
 * - a command: "`npm run lint` passes", "`node scripts/check.js` exits 0", "command: make check",
 *   or unquoted when it starts with a known tool ("npm run lint passes") — met iff it exits 0
 * - "PATH must change", "PATH changes", "PATH is updated", "update PATH"
 * - "PATH must not change", "PATH unchanged", "do not touch PATH", "keep PATH unchanged"
 * - "PATH contains `TEXT`", "PATH mentions \"TEXT\"", "PATH does not contain `TEXT`" (TEXT quoted,
 *   or one code-like token such as `API_KEY` or `parseDate`)
 * - "PATH exists", "PATH is created", "PATH does not exist", "PATH is deleted"
 * - "PATH is valid JSON|YAML|TOML", "PATH parses" (by its extension)
 * - "tests pass", "all tests pass", "the test suite passes": the verification passed
 *
 * PATH is relative to the workspace root (a folder, "docs/", names everything under it); a bare
 * file name ("api.ts") stands for the one file of that name, when there is one. Several paths may
 * be joined by "," or "and" where the form allows a list.
 */

/** What a criterion asks, as far as gaffer can check it. */
export type CriterionForm =
  | { kind: 'command'; command: string }
  | { kind: 'changes'; paths: string[] }
  | { kind: 'unchanged'; paths: string[] }
  | { kind: 'contains'; path: string; text: string; negated: boolean }
  | { kind: 'exists'; paths: string[]; created: boolean }
  | { kind: 'absent'; paths: string[] }
  | { kind: 'parses'; path: string; format: ParseFormat | null }
  | { kind: 'tests_pass' };

export type CriterionKind = CriterionForm['kind'];

/** Formats a file is parsed as (by extension unless a criterion names one). */
export type ParseFormat = 'json' | 'yaml' | 'toml';

/** A few criteria of each form, for messages that say what gaffer checks. */
export const CHECKED_FORMS_HINT =
  '"`npm run lint` passes", "src/api.ts must not change", "docs/api.md is updated", "README.md contains `--json`", "out/report.json exists", "tests pass"';

// tools a command criterion may start with unquoted; anything else needs backticks or "command:"
const TOOLS = 'npm|npx|pnpm|yarn|bun|node|deno|make|pytest|python3?|go|cargo|tsc|eslint|prettier|ruff|mypy|sh|bash';
const SUCCEEDS = String.raw`(?:must\s+|should\s+)?(?:pass(?:es)?|succeeds?|exits?\s+(?:with\s+)?(?:code\s+|status\s+)?0|returns?\s+0|is\s+green|runs\s+clean(?:ly)?)`;
// unquoted, "pass" is left out: "go tests pass" is prose about tests, not the command `go tests`
const SUCCEEDS_UNQUOTED = String.raw`(?:must\s+|should\s+)?(?:passes|succeeds|exits\s+(?:with\s+)?(?:code\s+)?0|returns\s+0)`;
const MUST = String.raw`(?:must|should|shall|will|needs?\s+to|has\s+to|have\s+to)`;
const IS = String.raw`(?:is|are|gets?|was|were|has\s+been|have\s+been)`;
const NOT = String.raw`(?:must\s*not|mustn't|should\s*not|shouldn't|shall\s*not|will\s*not|won't|may\s*not|can\s*not|cannot|can't|does\s*not|doesn't|do\s*not|don't|is\s+not\s+to)`;
const CHANGED = String.raw`(?:change[sd]?|update[sd]?|modified|edited|rewritten)`;
const TOUCHED = String.raw`(?:change[sd]?|modif(?:y|ied)|touch(?:ed)?|edit(?:ed)?|update[sd]?|alter(?:ed)?)`;
const CONTAIN = String.raw`(?:contains?|mentions?|includes?)`;

type Rule = { re: RegExp; build: (m: RegExpExecArray) => CriterionForm | null };

const r = (source: string) => new RegExp(`^${source}$`, 'i');
const list = (kind: 'changes' | 'unchanged' | 'absent') => (m: RegExpExecArray) => {
  const paths = pathList(m[1] as string);
  return paths ? { kind, paths } : null;
};
const exists = (created: boolean) => (m: RegExpExecArray) => {
  const paths = pathList(m[1] as string);
  return paths ? { kind: 'exists' as const, paths, created } : null;
};
const contains = (negated: boolean) => (m: RegExpExecArray) => {
  const path = onePath(m[1] as string);
  const text = literal(m[2] as string);
  return path !== null && text !== null ? { kind: 'contains' as const, path, text, negated } : null;
};
const parses = (m: RegExpExecArray) => {
  const path = onePath(m[1] as string);
  return path === null ? null : { kind: 'parses' as const, path, format: toFormat(m[2]) };
};

// order matters: the negated forms come before the ones they would otherwise be read as
const RULES: Rule[] = [
  {
    re: r(String.raw`(?:(?:the\s+)?command\s+|running\s+|run\s+)?` + '`([^`]+)`' + String.raw`\s+${SUCCEEDS}`),
    build: (m) => command(m[1] as string),
  },
  {
    re: r(String.raw`(?:command|cmd|run)\s*:\s*(.+)`),
    build: (m) => command((m[1] as string).replace(/^`(.*)`$/, '$1')),
  },
  {
    re: r(String.raw`((?:${TOOLS}|\./[\w./-]+)(?:\s+[^\s\`]+)*?)\s+${SUCCEEDS_UNQUOTED}`),
    build: (m) => (/^make\s+sure\b/i.test(m[1] as string) ? null : command(m[1] as string)),
  },
  {
    re: r(
      String.raw`(?:(?:all|the|all\s+the)\s+)?(?:existing\s+)?(?:tests?|test\s+suite|suite|specs?|verification)\s+(?:(?:still|must|should|will)\s+)*(?:pass(?:es)?|succeeds?|is\s+green|are\s+green|is\s+passing|are\s+passing)`,
    ),
    build: () => ({ kind: 'tests_pass' }),
  },
  { re: r(String.raw`(.+?)\s+${NOT}\s+(?:be\s+)?${TOUCHED}`), build: list('unchanged') },
  {
    re: r(
      String.raw`(.+?)\s+(?:(?:is|are|stays?|remains?|(?:must|should)\s+(?:stay|remain|be)|(?:is|are)\s+left)\s+)?(?:unchanged|untouched|unmodified)`,
    ),
    build: list('unchanged'),
  },
  { re: r(String.raw`(?:do\s*not|don't|dont|never|must\s+not)\s+${TOUCHED}\s+(.+)`), build: list('unchanged') },
  { re: r(String.raw`(?:leave|keep)\s+(.+?)\s+(?:alone|unchanged|untouched|as\s+is)`), build: list('unchanged') },
  { re: r(String.raw`no\s+changes?\s+(?:to|in)\s+(.+)`), build: list('unchanged') },
  { re: r(String.raw`(.+?)\s+(?:${MUST}\s+(?:be\s+)?|${IS}\s+)?${CHANGED}`), build: list('changes') },
  { re: r(String.raw`(?:change|update|modify|edit)\s+(.+)`), build: list('changes') },
  {
    re: r(
      String.raw`(.+?)\s+(?:does\s*not|doesn't|must\s*not|mustn't|should\s*not|shouldn't|no\s+longer)\s+${CONTAIN}\s+(.+)`,
    ),
    build: contains(true),
  },
  { re: r(String.raw`(.+?)\s+(?:must\s+|should\s+|still\s+)?${CONTAIN}\s+(.+)`), build: contains(false) },
  {
    re: r(String.raw`(.+?)\s+(?:does\s*not|doesn't|must\s*not|mustn't|should\s*not|shouldn't|no\s+longer)\s+exists?`),
    build: list('absent'),
  },
  { re: r(String.raw`(.+?)\s+(?:${IS}|must\s+be|should\s+be)\s+(?:deleted|removed|gone)`), build: list('absent') },
  { re: r(String.raw`(?:delete|remove)\s+(.+)`), build: list('absent') },
  { re: r(String.raw`(.+?)\s+(?:must\s+|should\s+)?exists?`), build: exists(false) },
  { re: r(String.raw`(.+?)\s+(?:is|are)\s+present`), build: exists(false) },
  { re: r(String.raw`(.+?)\s+(?:${IS}|must\s+be|should\s+be)\s+(?:created|added|written)`), build: exists(true) },
  { re: r(String.raw`(?:create|add|write)\s+(.+)`), build: exists(true) },
  {
    re: r(String.raw`(.+?)\s+(?:is|must\s+be|should\s+be)\s+(?:an?\s+)?valid\s+(json|yaml|yml|toml)(?:\s+file)?`),
    build: parses,
  },
  { re: r(String.raw`(.+?)\s+(?:parses|must\s+parse|should\s+parse)(?:\s+as\s+(json|yaml|yml|toml))?`), build: parses },
];

/** Reads a criterion as one of the checked forms, or null when gaffer cannot check it mechanically. */
export function parseCriterion(criterion: string): CriterionForm | null {
  const text = criterion
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!;]$/, '')
    .trim();
  for (const rule of RULES) {
    const m = rule.re.exec(text);
    if (!m) continue;
    const form = rule.build(m);
    if (form) return form;
  }
  return null;
}

/** True when gaffer checks this criterion mechanically (spec lint counts only these). */
export function isCheckableCriterion(criterion: string): boolean {
  return parseCriterion(criterion) !== null;
}

/** The format a path parses as by its extension, or null when it has none gaffer parses. */
export function formatOfPath(path: string): ParseFormat | null {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  return ext === 'json' ? 'json' : ext === 'yaml' || ext === 'yml' ? 'yaml' : ext === 'toml' ? 'toml' : null;
}

function command(text: string): CriterionForm | null {
  const cmd = text.trim();
  return cmd === '' ? null : { kind: 'command', command: cmd };
}

function toFormat(word: string | undefined): ParseFormat | null {
  if (word === undefined) return null;
  const w = word.toLowerCase();
  return w === 'yml' ? 'yaml' : (w as ParseFormat);
}

// known files without an extension; any other bare word ("parser") is prose, not a path
const EXTENSIONLESS =
  /^(?:makefile|dockerfile|containerfile|license|licence|readme|changelog|authors|notice|gemfile|rakefile|procfile|justfile|vagrantfile|brewfile|codeowners)$/i;

/** The paths of a subject such as "src/a.ts, src/b.ts and docs/", or null when any item is not a path. */
function pathList(subject: string): string[] | null {
  const items = subject
    .replace(/^(?:the\s+)?(?:files?|folders?|directory|directories)\s+/i, '')
    .split(/\s*,\s*(?:and\s+)?|\s+and\s+/i)
    .filter((item) => item !== '');
  const paths = items.map(toPath);
  return paths.length > 0 && paths.every((p): p is string => p !== null) ? paths : null;
}

function onePath(subject: string): string | null {
  const paths = pathList(subject);
  return paths?.length === 1 ? (paths[0] as string) : null;
}

/** A workspace-relative path from one subject item (quotes stripped), or null when it is not path-like. */
function toPath(item: string): string | null {
  const quoted = /^([`"'])(.+)\1$/.exec(item);
  const raw = (quoted ? (quoted[2] as string) : item).trim();
  if (
    raw === '' ||
    /\s/.test(raw) ||
    raw.includes('..') ||
    raw.startsWith('/') ||
    raw.startsWith('~') ||
    /^[a-z][a-z+.-]*:/i.test(raw)
  )
    return null;
  if (!/^[\w.@+/-]+$/.test(raw)) return null;
  // a trailing "/" is kept: "docs/" names the folder at the root, never a bare name to look for
  const path = raw.replace(/^(?:\.\/)+/, '').replace(/\/+$/, '/');
  if (path === '' || path === '.' || path === '/') return null;
  const base = path.replace(/\/$/, '').split('/').at(-1) as string;
  const pathLike =
    quoted !== null ||
    raw.includes('/') ||
    /^\.?[\w@+-][\w.@+-]*\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,10}$/.test(base) ||
    /^\.[\w-]+$/.test(base) ||
    EXTENSIONLESS.test(base);
  return pathLike ? path : null;
}

/** The literal TEXT of "contains TEXT": quoted, or one code-like token; null for prose. */
function literal(text: string): string | null {
  const quoted = /^(?:`([^`]+)`|"([^"]+)"|'([^']+)')$/.exec(text.trim());
  if (quoted) return (quoted[1] ?? quoted[2] ?? quoted[3]) as string;
  const token = text.trim();
  if (/\s/.test(token) || token === '') return null;
  // a word of prose ("tests", "gaffer") is not a literal; an identifier, constant or flag is
  const codeLike = /[^A-Za-z]/.test(token) || /[a-z][A-Z]/.test(token) || /^[A-Z]{2,}$/.test(token);
  return codeLike ? token : null;
}
