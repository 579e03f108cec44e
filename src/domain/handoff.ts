// spec 05 "The handoff prompt": what every agent worker is told, built by gaffer from the task in
// fixed sections. The standing rules are data (config `handoff.rules`); the sections and the
// decision and abort protocols are the shape of the handoff itself.
import { gateLabel } from './gates.js';
import type { TaskSpec } from './request.js';
import type { Route } from './route.js';
import { CHANGING_TASK_TYPES } from './status.js';

/** What the prompt is built from besides the task. */
export interface HandoffInput {
  task: TaskSpec;
  route: Route;
  /** The job's `context`, given to every task. */
  jobContext: string | null;
  /** How the verification will run, in words (`npm test`, `auto-detected`, `none`). */
  verify: string;
  /** Config `handoff.rules`: rules every worker is held to. */
  rules: readonly string[];
  /** Where the task came from (`gaffer job 3f2a…`, a queue file), for the footer. */
  source: string;
}

/** Lines of the instruction that forbid something: the task's own hard rules. */
const DO_NOT = /^\s*[-*]?\s*(do not|don't|never|must not)\b/i;

/**
 * The handoff prompt (spec 05), every section in order: role, task, context, read first, order of
 * work, hard rules, done means, gates, decisions, abort criteria, footer. A section with nothing to
 * say is left out, except the ones every worker needs (role, task, hard rules, done means, gates,
 * decisions, abort criteria).
 */
export function buildHandoff(input: HandoffInput): string {
  const { task, route } = input;
  const brief = task.brief;
  const doneMeans = brief?.done_means.length ? brief.done_means : task.criteria;
  const sections: [string, string[]][] = [
    [
      'Role',
      [
        `You are ${route.model ?? 'the default model'} on ${route.runner}${route.entry ? ` (roster entry ${route.entry})` : ''}, dispatched by gaffer for a ${task.type} task.`,
      ],
    ],
    ['Task', [task.instruction]],
    ['Context', [input.jobContext, brief?.context].filter((c): c is string => Boolean(c))],
    ['Read first', readFirst(task)],
    ['Order of work', doneMeans.length > 0 ? doneMeans.map((d, i) => `${i + 1}. ${d}`) : []],
    ['Hard rules', hardRules(task, input.rules)],
    ['Done means', doneMeansLines(doneMeans)],
    ['Gates', gates(task, input.verify)],
    [
      'Decisions',
      [
        'A decision this brief does not cover: state it decision-grade — the question, the options with what each costs, your recommendation — and stop there. Do not guess and go on.',
      ],
    ],
    ['Abort criteria', abortLines(task)],
  ];
  const body = sections
    .filter(([, lines]) => lines.length > 0)
    .map(([title, lines]) => `## ${title}\n${lines.join('\n')}`);
  return [...body, `---\nsource: ${input.source} · task: ${task.name}`].join('\n\n');
}

function readFirst(task: TaskSpec): string[] {
  const brief = task.brief;
  if (brief?.read_first.length) return brief.read_first.map((r) => `- ${r}`);
  if (brief?.receipts.length)
    return ['The evidence this task is real — read it before you start:', ...brief.receipts.map((r) => `- ${r}`)];
  return [];
}

function hardRules(task: TaskSpec, rules: readonly string[]): string[] {
  const lines = rules.map((r) => `- ${r}`);
  if (task.files.length > 0)
    lines.push(
      `- Write only these paths: ${task.files.join(', ')}${task.outputs.length > 0 ? `, and your outputs ${task.outputs.join(', ')}` : ''}.`,
    );
  else if (task.outputs.length > 0) lines.push(`- Write your outputs: ${task.outputs.join(', ')}.`);
  for (const line of task.instruction.split('\n'))
    if (DO_NOT.test(line)) lines.push(`- ${line.trim().replace(/^[-*]\s*/, '')}`);
  return lines;
}

function doneMeansLines(doneMeans: readonly string[]): string[] {
  const items = doneMeans.length > 0 ? doneMeans : ['the task above is carried out as written'];
  return [
    'In your final report, confirm or fail each of these explicitly ("confirmed: …" or "failed: …, because …"):',
    ...items.map((d) => `- ${d}`),
  ];
}

function gates(task: TaskSpec, verify: string): string[] {
  const lines = [
    verify === 'none'
      ? '- No verification runs: your report and the diff are all there is to judge.'
      : testsLine(task, verify),
    '- gaffer diffs what really changed in the workspace: a change your report does not mention, or a claim the diff does not show, counts against the work.',
    `- Writes outside ${task.files.length > 0 ? 'the paths named above' : 'the workspace'} are a write-policy violation.`,
  ];
  for (const g of task.gates ?? [])
    lines.push(
      `- gate: ${gateLabel(g)}${g.kind === 'done_means' ? ' (each done_means item backed by a check that passed)' : g.kind === 'claims' ? ' (every claim in your report is checked against the workspace)' : ''}`,
    );
  for (const c of task.criteria) lines.push(`- criterion: ${c}`);
  for (const o of task.outputs) lines.push(`- ${o} must exist when you finish.`);
  return lines;
}

/**
 * What the project's tests mean for this task. issue 33: for a task that changes code, a test that
 * failed before the work and still fails is the job's to fix unless it is declared known; a task that
 * changes nothing (review, research) answers only for the failures it brings.
 */
function testsLine(task: TaskSpec, verify: string): string {
  if (!CHANGING_TASK_TYPES.has(task.type))
    return `- gaffer runs the project's tests itself (${verify}); a new failure is yours, a failure that was there before is not.`;
  return (
    `- gaffer runs the project's tests itself (${verify}), before your work and after it: every test that fails after it is yours to fix, ` +
    'a test that already failed before you started included, unless it is declared a known failure (`verify.known_failures`).'
  );
}

function abortLines(task: TaskSpec): string[] {
  const own = task.brief?.abort_criteria ?? [];
  return [
    'Stop mid-task and report the partial work, naming the sticking point, if:',
    ...own.map((a) => `- ${a}`),
    ...(task.files.length > 0 ? ['- the task cannot be done without changing paths it does not name'] : []),
    '- the task turns out to be beyond this brief (say so on a line of its own, "ESCALATE: <why>": escalating is not failing)',
  ];
}
