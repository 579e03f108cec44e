import { frameworkNamedBy } from './parsers/shared.js';
import type { TestFramework } from './parsers/types.js';

// Issue 33: the runner behind a package's `test` script. A real `npm test` often lints, type-checks and audits
// as well (`"pretest": "npm run lint"`, `"posttest": "aud --production"`): a lint error or an audit that needs
// the network then decides the verification instead of the tests. The script is read into its steps —
// `npm run X` references resolved, with the pre/post scripts npm runs around them — and each step classified.

/** What a step of the test script does besides running tests. */
export type ScriptStepKind = 'lint' | 'type-check' | 'audit' | 'other';

/** One step that runs no test runner gaffer knows. */
export interface ScriptStep {
  /** The step as the script spells it (`eslint .`, `aud --production`). */
  step: string;
  what: ScriptStepKind;
}

/** What a package's test script runs. */
export interface TestScript {
  /** The runner behind the script (the first step naming one); null when no step names one. */
  framework: TestFramework | null;
  /** Steps that run a test runner (coverage wrappers around one included: `nyc tape 'test/**\/*.js'`). */
  runnerSteps: string[];
  /** Every other step, in script order; the lint, type-check and audit ones are left out of `testsOnly`. */
  otherSteps: ScriptStep[];
  /**
   * The script without its lint, type-check and audit steps (build steps, `cd` and anything unknown stay:
   * a test may run what a build wrote), as shell text; null when nothing is left out or no runner step is left.
   */
  testsOnly: string | null;
  /** The steps `testsOnly` leaves out, in words (`lint: eslint .`, `audit: aud --production`). */
  leftOut: string[];
}

/** Steps whose outcome is not the tests': gaffer runs the runner without them. */
const LEFT_OUT_KINDS = new Set<ScriptStepKind>(['lint', 'type-check', 'audit']);
const LINTERS = new Set([
  'eslint',
  'standard',
  'semistandard',
  'ts-standard',
  'xo',
  'prettier',
  'tslint',
  'biome',
  'stylelint',
  'jshint',
  'jscs',
  'oxlint',
  'markdownlint',
  'markdownlint-cli2',
]);
const TYPE_CHECKERS = new Set(['tsd', 'vue-tsc', 'flow']);
const AUDITORS = new Set(['aud', 'audit-ci', 'better-npm-audit', 'npm-audit-resolver', 'check-audit']);
const COVERAGE_WRAPPERS = /^(?:nyc|c8|istanbul\s+cover)\b/;
/** How deep `npm run X` references are followed, and how many steps one script may expand to. */
const MAX_DEPTH = 8;
const MAX_STEPS = 200;

type Operator = '&&' | '||' | ';';
type Scripts = Record<string, string>;

/** A step of a script: a command, or another script it runs (`npm run tests-only`), read into its own steps. */
type Step =
  | { kind: 'command'; text: string }
  | { kind: 'script'; text: string; name: string; body: string; steps: Sequence; wrapped: boolean };
type Sequence = { op: Operator | null; step: Step }[];
interface Budget {
  steps: number;
  exceeded: boolean;
}

/** Reads package.json's `scripts.test` into its steps; null when the text has no test script (or is no JSON object). */
export function readTestScript(packageJsonText: string): TestScript | null {
  const scripts = readScripts(packageJsonText);
  return scripts?.test === undefined ? null : describeScript(scripts, 'test');
}

/**
 * The framework behind a command: for `npm test`, `npm run X`, `npm t`, `pnpm test`, `yarn test`, `bun run X`
 * (optionally with args), the runner of the script it runs (an explicit `--verify "npm test"` is tape when its
 * script runs tape); else the framework the command names, or null.
 */
export function frameworkBehindCommand(command: string, packageJsonText: string | null): TestFramework | null {
  const name = scriptNameRun(command);
  const scripts = name === null || packageJsonText === null ? null : readScripts(packageJsonText);
  if (name !== null && scripts?.[name] !== undefined)
    return describeScript(scripts, name).framework ?? frameworkNamedBy(command);
  return frameworkNamedBy(command);
}

/**
 * The words an inconclusive `npm test` needs when its script runs more than tests: what else it runs and the
 * `verify.command` of `.gaffer/workspace.json` that would verify the tests alone; null when it runs tests only.
 */
export function conclusiveAdvice(packageJsonText: string, manager = 'npm'): string | null {
  const script = readTestScript(packageJsonText);
  if (script === null || script.leftOut.length === 0) return null;
  const kept = script.testsOnly ?? keptSteps(script);
  if (kept === null) return null;
  const hint = JSON.stringify({ verify: { command: testsOnlyCommand(kept) } });
  const also = script.leftOut.map((words) => words.replace(/^([\w-]+): (.*)$/, '$1 ($2)'));
  return `\`${manager} test\` also runs ${listed(also)}: put ${hint} in .gaffer/workspace.json to verify the tests alone`;
}

/**
 * The advice for an inconclusive run of `command`: only when it runs the package's `test` script
 * (`npm test`, `pnpm test`, `yarn test`, `bun run test`, `npm run test`); null for any other command.
 */
export function adviceForCommand(command: string, packageJsonText: string): string | null {
  if (scriptNameRun(command) !== 'test') return null;
  const manager = /^\s*(pnpm|yarn|bun)\b/.exec(command)?.[1] ?? 'npm';
  return conclusiveAdvice(packageJsonText, manager);
}

/**
 * The shell command that runs `steps` with the project's `node_modules/.bin` on PATH, as `npm test` would,
 * never fetching a package (`npm exec --offline -c`).
 */
export function testsOnlyCommand(steps: string): string {
  return `npm exec --offline -c ${quoteForShell(steps)}`;
}

function describeScript(scripts: Scripts, name: string): TestScript {
  const budget: Budget = { steps: MAX_STEPS, exceeded: false };
  const root = expandScript(scripts, name, '', [name], budget);
  const runnerSteps: string[] = [];
  const otherSteps: ScriptStep[] = [];
  let framework: TestFramework | null = null;
  const visit = (sequence: Sequence) => {
    for (const { step } of sequence) {
      const named = kindByName(step);
      if (named !== null) {
        otherSteps.push({ step: step.kind === 'script' ? step.body : step.text, what: named });
        continue;
      }
      if (step.kind === 'script' && !step.wrapped) {
        visit(step.steps);
        continue;
      }
      const what = classify(step);
      if (typeof what === 'string') otherSteps.push({ step: step.text, what });
      else {
        runnerSteps.push(step.text);
        framework ??= what.framework;
      }
    }
  };
  visit(root);
  const leftOut = otherSteps.filter((s) => LEFT_OUT_KINDS.has(s.what)).map((s) => `${s.what}: ${s.step}`);
  // a script too big to read whole is run as it is: a step cut off the reading must not be cut off the run
  const kept = leftOut.length > 0 && runnerSteps.length > 0 && !budget.exceeded ? render(root) : null;
  return { framework, runnerSteps, otherSteps, testsOnly: kept === '' ? null : kept, leftOut };
}

/** The steps left once lint, type-check and audit are out, whether or not a runner is among them. */
function keptSteps(script: TestScript): string | null {
  const kept = script.otherSteps.filter((s) => !LEFT_OUT_KINDS.has(s.what)).map((s) => s.step);
  return kept.length > 0 ? kept.join(' && ') : null;
}

/** A script's steps with npm's pre/post scripts around it; references to other scripts are read in turn. */
function expandScript(scripts: Scripts, name: string, args: string, stack: string[], budget: Budget): Sequence {
  const body = parseSequence(`${scripts[name] ?? ''}${args}`, scripts, stack, budget);
  const hook = (hookName: string): Sequence => {
    const text = scripts[hookName];
    if (text === undefined || stack.includes(hookName)) return [];
    const steps = parseSequence(text, scripts, [...stack, hookName], budget);
    return [
      {
        op: null,
        step: { kind: 'script', text: `npm run ${hookName}`, name: hookName, body: text, steps, wrapped: false },
      },
    ];
  };
  const pre = hook(`pre${name}`);
  const post = hook(`post${name}`);
  // npm runs them one after another and stops at the first that fails: `pre && body && post`
  const joined = [...pre, ...body, ...post];
  return joined.map((entry, i) => ({ ...entry, op: i === 0 ? null : (entry.op ?? '&&') }));
}

function parseSequence(text: string, scripts: Scripts, stack: string[], budget: Budget): Sequence {
  const sequence: Sequence = [];
  for (const { op, text: stepText } of splitSteps(text)) {
    if (--budget.steps < 0) {
      budget.exceeded = true;
      break;
    }
    sequence.push({ op: sequence.length === 0 ? null : op, step: readStep(stepText, scripts, stack, budget) });
  }
  return sequence;
}

function readStep(text: string, scripts: Scripts, stack: string[], budget: Budget): Step {
  const command: Step = { kind: 'command', text };
  if (stack.length >= MAX_DEPTH) return command;
  const bare = withoutPrefixes(text);
  const wrapped = COVERAGE_WRAPPERS.test(bare);
  const reference = findReference(
    wrapped ? bare.replace(COVERAGE_WRAPPERS, '') : bare,
    scripts,
    wrapped ? 'anywhere' : 'start',
  );
  if (reference === null || stack.includes(reference.name)) return command;
  const steps = expandScript(scripts, reference.name, reference.args, [...stack, reference.name], budget);
  return { kind: 'script', text, name: reference.name, body: scripts[reference.name] ?? '', steps, wrapped };
}

/** `npm run X`, `npm run-script X -- args`, `pnpm X`, `yarn run X`, `bun run X` naming one of the scripts. */
function findReference(
  text: string,
  scripts: Scripts,
  where: 'start' | 'anywhere',
): { name: string; args: string } | null {
  const runs = String.raw`(?:npm\s+(?:run|run-script)|pnpm(?:\s+run)?|yarn(?:\s+run)?|bun\s+run)((?:\s+-[-\w]+)*)\s+([^\s;&|'"]+)(.*)$`;
  const m = new RegExp(`${where === 'start' ? '^' : '(?:^|\\s)'}${runs}`).exec(text.trim());
  if (m === null) return null;
  const name = m[2] ?? '';
  if (scripts[name] === undefined) return null;
  // npm passes what follows `--` to the script; pnpm and yarn pass what follows the name
  const args = (m[3] ?? '').replace(/^\s+--(?=\s|$)/, '');
  return { name, args: args.trim() === '' ? '' : ` ${args.trim()}` };
}

/** The step without environment assignments, `cross-env`, `npx` and a `node_modules/.bin/` path. */
function withoutPrefixes(text: string): string {
  let rest = text.trim();
  for (let previous = ''; previous !== rest;) {
    previous = rest;
    rest = rest
      .replace(/^\w+=(?:"[^"]*"|'[^']*'|\S*)\s+/, '')
      .replace(
        /^(?:cross-env(?:-shell)?|npx(?:\s+--?[\w-]+)*|pnpm\s+exec|yarn\s+exec|npm\s+exec(?:\s+--?[\w-]+)*\s+--)\s+/,
        '',
      )
      .replace(/^(?:\.\/)?node_modules\/\.bin\//, '');
  }
  return rest;
}

/** What a step does: a runner (its framework) or another kind. */
function classify(step: Step): ScriptStepKind | { framework: TestFramework } {
  if (step.kind === 'script') {
    // a coverage wrapper around a script that runs tests: the step runs them, lint and all
    const inner = firstFramework(step.steps);
    return inner === null ? 'other' : { framework: inner };
  }
  const bare = withoutPrefixes(step.text);
  const [command = '', sub = ''] = bare.split(/\s+/);
  if (AUDITORS.has(command) || (/^(?:npm|pnpm|yarn|bun)$/.test(command) && sub === 'audit')) return 'audit';
  if (LINTERS.has(command) || (command === 'dprint' && sub === 'check')) return 'lint';
  // `tsc` that writes its output is a build a test may run; with --noEmit it only checks
  if (TYPE_CHECKERS.has(command) || (command === 'tsc' && /(?:^|\s)--?noEmit\b(?!\s*false)/.test(bare)))
    return 'type-check';
  const framework = frameworkNamedBy(bare);
  return framework === null ? 'other' : { framework };
}

/**
 * A script named for a lint, type-check or audit (`npm run lint` running `node scripts/lint.js`) is one, whatever
 * it runs, unless it runs tests as well; null for any other step.
 */
function kindByName(step: Step): ScriptStepKind | null {
  if (step.kind !== 'script' || step.wrapped) return null;
  const base = step.name.replace(/^(?:pre|post)(?=lint|audit|type)/, '');
  const what = /^(?:lint|eslint|prettier|format:check|style)(?::|$)/.test(base)
    ? 'lint'
    : /^(?:type-?check|types|check-types|tsc|tsd)(?::|$)/.test(base)
      ? 'type-check'
      : /^(?:audit|security)(?::|$)/.test(base)
        ? 'audit'
        : null;
  return what !== null && firstFramework(step.steps) === null ? what : null;
}

function firstFramework(sequence: Sequence): TestFramework | null {
  for (const { step } of sequence) {
    if (step.kind === 'script' && !step.wrapped) {
      const inner = firstFramework(step.steps);
      if (inner !== null) return inner;
      continue;
    }
    const what = classify(step);
    if (typeof what !== 'string') return what.framework;
  }
  return null;
}

/** The sequence as shell text without its lint, type-check and audit steps; '' when nothing is left. */
function render(sequence: Sequence): string {
  const parts: string[] = [];
  for (const { op, step } of sequence) {
    let text: string;
    if (kindByName(step) !== null) text = '';
    else if (step.kind === 'script' && !step.wrapped) {
      const inner = render(step.steps);
      // a script runs in a shell of its own: its `||` and `cd` stay inside it
      text = /&&|\|\||;/.test(stripQuoted(inner)) ? `( ${inner} )` : inner;
    } else {
      const what = classify(step);
      text = typeof what === 'string' && LEFT_OUT_KINDS.has(what) ? '' : step.text;
    }
    if (text === '') continue;
    // a step keeps the operator before it; the first one left needs none
    const before = op ?? '&&';
    parts.push(parts.length === 0 ? text : `${before === ';' ? ';' : ` ${before}`} ${text}`);
  }
  return parts.join('');
}

/** Splits shell text into steps at `&&`, `||`, `;` and newlines outside quotes and parentheses. */
function splitSteps(text: string): { op: Operator; text: string }[] {
  const steps: { op: Operator; text: string }[] = [];
  let current = '';
  let op: Operator = '&&';
  let quote: '"' | "'" | null = null;
  let depth = 0;
  const push = (next: Operator) => {
    if (current.trim() !== '') steps.push({ op, text: current.trim() });
    current = '';
    op = next;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    const two = text.slice(i, i + 2);
    if (quote !== null) {
      if (c === '\\' && quote === '"') {
        current += two;
        i++;
      } else {
        if (c === quote) quote = null;
        current += c;
      }
      continue;
    }
    if (c === '\\') {
      current += two;
      i++;
    } else if (c === '"' || c === "'") {
      quote = c;
      current += c;
    } else if (c === '(') {
      depth++;
      current += c;
    } else if (c === ')') {
      depth = Math.max(0, depth - 1);
      current += c;
    } else if (depth === 0 && (two === '&&' || two === '||')) {
      push(two);
      i++;
    } else if (depth === 0 && (c === ';' || c === '\n')) push(';');
    else current += c;
  }
  push(';');
  return steps;
}

function stripQuoted(text: string): string {
  return text.replace(/'[^']*'|"(?:\\.|[^"\\])*"/g, '');
}

/** The script a package-manager command runs (`npm test` → test, `yarn run lint` → lint); null for any other command. */
function scriptNameRun(command: string): string | null {
  const flags = String.raw`(?:\s+--?[\w-]+(?:=\S+)?)*`;
  const m =
    new RegExp(
      String.raw`^\s*npm${flags}\s+(?:(test|t|tst)|(?:run|run-script|rum|urn)${flags}\s+([^\s;&|]+))(?:\s+[^;&|]*)?$`,
    ).exec(command) ??
    new RegExp(String.raw`^\s*(?:pnpm|yarn)${flags}\s+(?:run${flags}\s+)?([^\s;&|-][^\s;&|]*)(?:\s+[^;&|]*)?$`).exec(
      command,
    ) ??
    new RegExp(String.raw`^\s*bun${flags}\s+run${flags}\s+([^\s;&|]+)(?:\s+[^;&|]*)?$`).exec(command);
  if (m === null) return null;
  const name = m[2] ?? m[1] ?? '';
  return name === 't' || name === 'tst' ? 'test' : name;
}

function readScripts(text: string): Scripts | null {
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    return null;
  }
  const scripts = (manifest as { scripts?: unknown } | null)?.scripts;
  if (typeof scripts !== 'object' || scripts === null) return null;
  return Object.fromEntries(
    Object.entries(scripts).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].trim() !== ''),
  );
}

/** Single quotes when the text has none, double quotes when nothing in it expands there, else escaped single quotes. */
function quoteForShell(text: string): string {
  if (!text.includes("'")) return `'${text}'`;
  if (!/["$`\\!]/.test(text)) return `"${text}"`;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function listed(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`;
}
