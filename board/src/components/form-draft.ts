// The New job form's draft (spec 08): what the person typed, as strings, and the one function that
// turns it into the spec 02 request. The server judges the request (lint as you type, refusals at
// dispatch); nothing here re-checks its limits.
import type { JobRequestInput, LintReport, TaskType } from '../api.js';

/** One task of the form, as typed. */
export interface TaskDraft {
  /** Stable across add/remove, for keys and element ids. */
  uid: number;
  name: string;
  instruction: string;
  /** '' : the server's default (`implement`). */
  type: TaskType | '';
  /** '' : no runner named (the roster routes it, else the configured default runner). */
  runner: string;
  model: string;
  /** One path a line (commas too). */
  files: string;
  /** One criterion a line. */
  criteria: string;
  /** Shell runner: what to run (else the instruction is run). */
  command: string;
  /** `done_means`: what must be true when it is done, one a line. */
  doneMeans: string;
  /** `receipts`: evidence the task is real (a file:line, a log line, an issue link), one a line. */
  receipts: string;
  /** Gates: shell commands that must pass on the returned work, one a line. */
  gateCommands: string;
  /** A `diff-scope` gate: the paths every change must stay in, one a line or comma-separated ('' : none). */
  gateScope: string;
  /** A `claims` gate: the worker's report checked against what really changed. */
  gateClaims: boolean;
  /** A `done_means` gate: each done_means item confirmed by a check that passed. */
  gateDoneMeans: boolean;
}

/** The whole form, as typed. */
export interface JobDraft {
  workspace: string;
  title: string;
  context: string;
  tasks: TaskDraft[];
  verifyMode: 'auto' | 'none' | 'command';
  verifyCommand: string;
  fixRounds: string;
  parallel: boolean;
  isolation: 'shared' | 'worktree';
  merge: 'none' | 'auto';
  reviewer: boolean;
  approval: 'auto' | 'required' | 'never';
  timeoutS: string;
  /** Job-level criteria, one a line (refused as not_supported with worktree isolation: not sent then). */
  criteria: string;
}

/** Every task type, with what it is for (a Record, so the compiler says when the server adds one). */
export const TASK_TYPE_LABELS: Record<TaskType, string> = {
  design: 'design — plan the change',
  implement: 'implement — write the change',
  fix: 'fix — repair a bug',
  test: 'test — write or change tests',
  verify: 'verify — check the work',
  review: 'review — read and report, change nothing',
  sweep: 'sweep — the same change in many places',
  research: 'research — find out and report',
  judge: 'judge — decide between options',
  triage: 'triage — sort and prioritise',
};

let nextUid = 1;

/** A blank task. */
export function blankTask(): TaskDraft {
  return {
    uid: nextUid++,
    name: '',
    instruction: '',
    type: '',
    runner: '',
    model: '',
    files: '',
    criteria: '',
    command: '',
    doneMeans: '',
    receipts: '',
    gateCommands: '',
    gateScope: '',
    gateClaims: false,
    gateDoneMeans: false,
  };
}

/** A blank form in `workspace`. */
export function blankDraft(workspace = ''): JobDraft {
  return {
    workspace,
    title: '',
    context: '',
    tasks: [blankTask()],
    verifyMode: 'auto',
    verifyCommand: '',
    fixRounds: '',
    parallel: false,
    isolation: 'shared',
    merge: 'none',
    reviewer: false,
    approval: 'auto',
    timeoutS: '',
    criteria: '',
  };
}

const lines = (s: string): string[] =>
  s
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
const paths = (s: string): string[] =>
  s
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean);
// a number when it reads as one; otherwise the text as typed, so the server's refusal names it
const numberOr = (s: string): number | string | undefined =>
  s.trim() === '' ? undefined : Number.isFinite(Number(s)) ? Number(s) : s.trim();

/** The spec 02 request the draft stands for: only what the person set, so the server's defaults apply to the rest. */
export function requestOf(d: JobDraft): JobRequestInput {
  const tasks = d.tasks.map((t) => {
    const files = paths(t.files);
    const criteria = lines(t.criteria);
    const doneMeans = lines(t.doneMeans);
    const receipts = lines(t.receipts);
    const gates = gatesOf(t);
    return {
      instruction: t.instruction,
      ...(t.name.trim() ? { name: t.name.trim() } : {}),
      ...(t.type ? { type: t.type } : {}),
      ...(t.runner ? { runner: t.runner } : {}),
      ...(t.model.trim() ? { model: t.model.trim() } : {}),
      ...(files.length ? { files } : {}),
      ...(criteria.length ? { criteria } : {}),
      ...(t.runner === 'shell' && t.command.trim() ? { command: t.command } : {}),
      ...(doneMeans.length ? { done_means: doneMeans } : {}),
      ...(receipts.length ? { receipts } : {}),
      ...(gates.length ? { gates } : {}),
    };
  });
  const criteria = d.isolation === 'worktree' ? [] : lines(d.criteria);
  const fixRounds = numberOr(d.fixRounds);
  const timeoutS = numberOr(d.timeoutS);
  return {
    workspace: d.workspace.trim(),
    tasks,
    ...(d.title.trim() ? { title: d.title.trim() } : {}),
    ...(d.context.trim() ? { context: d.context } : {}),
    verify: d.verifyMode === 'command' ? d.verifyCommand : d.verifyMode,
    // a value the schema refuses is sent as typed: the refusal names the field and the value
    ...(fixRounds !== undefined ? { fix_rounds: fixRounds as number } : {}),
    ...(timeoutS !== undefined ? { timeout_s: timeoutS as number } : {}),
    ...(d.parallel ? { parallel: true } : {}),
    ...(d.isolation !== 'shared' ? { isolation: d.isolation } : {}),
    ...(d.isolation === 'worktree' && d.merge !== 'none' ? { merge: d.merge } : {}),
    ...(d.reviewer ? { reviewer: true } : {}),
    ...(d.approval !== 'auto' ? { approval: d.approval } : {}),
    ...(criteria.length ? { criteria } : {}),
  };
}

/** A task's gates as the request takes them: its commands, then the diff scope, claims and done_means checks it ticked. */
function gatesOf(
  t: TaskDraft,
): (string | { kind: 'diff-scope'; paths: string[] } | { kind: 'claims' } | { kind: 'done_means' })[] {
  const scope = paths(t.gateScope);
  return [
    ...lines(t.gateCommands),
    ...(scope.length ? [{ kind: 'diff-scope' as const, paths: scope }] : []),
    ...(t.gateClaims ? [{ kind: 'claims' as const }] : []),
    ...(t.gateDoneMeans ? [{ kind: 'done_means' as const }] : []),
  ];
}

const isBlank = (t: TaskDraft): boolean =>
  [
    t.name,
    t.instruction,
    t.model,
    t.files,
    t.criteria,
    t.command,
    t.doneMeans,
    t.receipts,
    t.gateCommands,
    t.gateScope,
  ].every((v) => v.trim() === '') &&
  t.type === '' &&
  t.runner === '' &&
  !t.gateClaims &&
  !t.gateDoneMeans;

/**
 * The draft as linted while it is typed: tasks left blank at the end (just added) are not sent yet,
 * so a task being added does not turn the whole lint into a refusal; their numbers are returned.
 * Dispatch sends every task.
 */
export function lintedDraft(d: JobDraft): { draft: JobDraft; blank: number[] } {
  let end = d.tasks.length;
  while (end > 1 && isBlank(d.tasks[end - 1] as TaskDraft)) end--;
  return { draft: { ...d, tasks: d.tasks.slice(0, end) }, blank: d.tasks.slice(end).map((_, i) => end + i + 1) };
}

/** True when there is something to lint: an instruction typed. */
export function isLintable(d: JobDraft): boolean {
  return d.tasks.some((t) => t.instruction.trim() !== '');
}

/**
 * The name the server gives each task (spec 02: its own, else worker-N, skipping names taken), so a
 * lint finding, which names its task, is shown on that task's fields.
 */
export function taskNames(d: JobDraft): string[] {
  const taken = new Set<string>();
  return d.tasks.map((t, i) => {
    let name = t.name.trim();
    if (!name) {
      let n = i + 1;
      while (taken.has(`worker-${n}`)) n++;
      name = `worker-${n}`;
    }
    taken.add(name);
    return name;
  });
}

/** What the server said about a field: a refusal (the request would not be dispatched) or a lint finding (it would, with a gap). */
export interface FieldNote {
  kind: 'refused' | 'lint';
  text: string;
  /** Lint: how to add what is missing. */
  fix?: string;
}

/** The form's key of a server `field` (`tasks[1].files[0]` → `tasks.1.files`, `fix_rounds` → `fix_rounds`). */
export function keyOfField(field: string | undefined): string {
  if (!field) return '';
  const task = /^tasks\[(\d+)\](?:\.([a-z_]+))?/.exec(field);
  if (task) return task[2] ? `tasks.${task[1]}.${task[2]}` : `tasks.${task[1]}`;
  return field.split(/[.[]/)[0] ?? '';
}

/** Where each lint code is shown: the task field it is about, or the job's verify. */
function keyOfFinding(code: string, index: number): string {
  if (code === 'no_scope') return `tasks.${index}.files`;
  if (code === 'no_verify') return 'verify';
  return `tasks.${index}.instruction`;
}

/** The lint report's findings by form key; a finding whose task is not in the form goes under ''. */
export function lintNotes(report: LintReport, draft: JobDraft): Map<string, FieldNote[]> {
  const names = taskNames(draft);
  const notes = new Map<string, FieldNote[]>();
  for (const f of report.needs_detail) {
    const index = names.indexOf(f.task);
    const key = index < 0 ? '' : keyOfFinding(f.code, index);
    const text = f.code === 'no_verify' ? `${f.task}: ${f.message}` : f.message;
    notes.set(key, [...(notes.get(key) ?? []), { kind: 'lint', text, fix: f.fix }]);
  }
  return notes;
}

const STORE_KEY = 'gaffer.board.new-job';

/** The draft kept in this tab's session, so leaving the page loses nothing; null when none. */
export function loadDraft(): JobDraft | null {
  try {
    const raw = sessionStorage.getItem(STORE_KEY);
    if (!raw) return null;
    const d = JSON.parse(raw) as JobDraft;
    if (!Array.isArray(d.tasks) || d.tasks.length === 0) return null;
    // fresh uids: the counter starts again with the page
    return { ...blankDraft(), ...d, tasks: d.tasks.map((t) => ({ ...blankTask(), ...t, uid: nextUid++ })) };
  } catch {
    return null;
  }
}

export function saveDraft(d: JobDraft | null): void {
  try {
    if (d === null) sessionStorage.removeItem(STORE_KEY);
    else sessionStorage.setItem(STORE_KEY, JSON.stringify(d));
  } catch {
    // storage full or off: the draft lives only on the page
  }
}

/** The value a server `field` (`tasks[1].files[0]`, `workspace`) names in a request; the whole request for ''. */
export function valueAt(request: unknown, field: string | undefined): unknown {
  let value = request;
  for (const part of (field ?? '').split(/[.[\]]/).filter(Boolean)) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
