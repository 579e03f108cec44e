import { CHECKED_FORMS_HINT, parseCriterion, type CriterionForm } from './criterion-forms.js';
import type { JobSpec, TaskSpec } from './request.js';

/** Spec-lint modes (spec 07): `off`, `warn` (default: run and carry the report), `enforce` (refuse). */
export type SpecLintMode = 'off' | 'warn' | 'enforce';
export const SPEC_LINT_MODES: readonly SpecLintMode[] = ['off', 'warn', 'enforce'];

export type LintCode =
  'no_scope' | 'no_verify' | 'multiple_outcomes' | 'vague_verb' | 'public_api_unguarded' | 'too_long' | 'too_short';

/** One gap a coordinator tends to leave out, per task. */
export interface LintFinding {
  task: string;
  code: LintCode;
  message: string;
  fix: string;
}

/** The lint report: what the job carries as `spec_lint` and what `gaffer lint` prints. */
export interface LintReport {
  mode: SpecLintMode;
  ok: boolean;
  needs_detail: LintFinding[];
  codes: LintCode[];
  /** `gaffer lint`'s answer only: where each task would run if dispatched now, as admission routes it. */
  routes?: TaskRoutePreview[];
}

/** Where a task would run: its runner and model, the roster entry and who pays, and why (the roster's, the learner's, a named runner). */
export interface TaskRoutePreview {
  task: string;
  runner: string;
  model: string | null;
  entry: string | null;
  billing: string;
  why: string | null;
}

export const INSTRUCTION_MIN_WORDS = 4;
export const INSTRUCTION_MAX_CHARS = 6_000;

const VAGUE = /\b(improve|clean ?up|refactor|optimi[sz]e|tidy|polish|modernize|enhance)\b/i;
const PATHLIKE =
  /(?:^|[\s"'`(])(?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,8}\b|(?:[\w.-]+\/)+[\w.-]*|`[^`]+`|\b[a-z]+[A-Z]\w*\(|\b\w+\(\)/;
const PUBLIC_API = /\b(public api|exports?|exported|endpoint|route|interface|signature|schema|cli flag|sdk)\b/i;
const GUARD =
  /\b(do not|don't|must not|never|keep)\b[^.]*\b(change|break|rename|remove|touch|alter|signature|compatible|api|exports?)\b/i;
const VERIFY_HINT =
  /\b(npm (run )?test|pytest|go test|cargo test|make test|vitest|jest|mocha|node --test|run the tests?|tests? (must |should )?pass)\b/i;
const OUTCOME_SPLIT =
  /\b(?:and also|also|additionally|as well as|plus)\b|;\s*(?:and\s+)?(?:then\s+)?(?:add|fix|write|create|update|remove|rename|implement|refactor|delete)\b|\n\s*(?:[-*]|\d+[.)])\s+/gi;

/** Lints a request (spec 07 "Spec lint"): per task, what it leaves out and how to add it. */
export function lintJob(spec: Pick<JobSpec, 'tasks' | 'verify' | 'criteria'>, mode: SpecLintMode): LintReport {
  const findings: LintFinding[] = [];
  const jobVerifies = spec.verify.mode === 'command';
  for (const task of spec.tasks) findings.push(...lintTask(task, jobVerifies));
  const codes = [...new Set(findings.map((f) => f.code))];
  return { mode, ok: findings.length === 0, needs_detail: findings, codes };
}

function lintTask(task: TaskSpec, jobVerifies: boolean): LintFinding[] {
  const text = task.instruction;
  const out: LintFinding[] = [];
  const add = (code: LintCode, message: string, fix: string) => out.push({ task: task.name, code, message, fix });
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  if (words < INSTRUCTION_MIN_WORDS)
    add('too_short', `the instruction has ${words} word(s)`, 'say what to change, where, and what done looks like');
  if (text.length > INSTRUCTION_MAX_CHARS)
    add(
      'too_long',
      `the instruction is ${text.length} characters`,
      `split it into tasks of one outcome each, under ${INSTRUCTION_MAX_CHARS} characters`,
    );
  if (task.files.length === 0 && task.outputs.length === 0 && !PATHLIKE.test(text)) {
    add('no_scope', 'no file, folder or symbol is named', 'name the files (`files`) or the symbols the task is about');
  }
  // only criteria gaffer checks count (criterion-forms.ts); a "must not change" guard proves nothing about the work itself
  const checked = task.criteria.map(parseCriterion).filter((f): f is CriterionForm => f !== null);
  const someUnchecked = task.criteria.length > checked.length;
  const taskVerifies = VERIFY_HINT.test(text) || checked.some((f) => f.kind !== 'unchanged');
  if (!jobVerifies && !taskVerifies) {
    add(
      'no_verify',
      `neither the job nor the task gives a command that proves it${task.criteria.length > 0 ? ' (none of its criteria is a check gaffer runs that shows the work done)' : ''}`,
      `set \`verify\` to the command that proves the task (e.g. "npm test -- api"), or give the task criteria gaffer checks: ${CHECKED_FORMS_HINT}`,
    );
  }
  const outcomes = text.split(OUTCOME_SPLIT).filter((part) => part && part.trim().split(/\s+/).length >= 3).length;
  if (outcomes > 2)
    add(
      'multiple_outcomes',
      `the instruction asks for ${outcomes} separate things`,
      'give each deliverable its own task',
    );
  if (VAGUE.test(text) && checked.length === 0) {
    const verb = (VAGUE.exec(text)?.[1] ?? '').toLowerCase();
    add(
      'vague_verb',
      `"${verb}" with no criteria${someUnchecked ? ' gaffer can check' : ''}`,
      `say what "${verb}" means here as criteria gaffer checks (what must be true when done): ${CHECKED_FORMS_HINT}`,
    );
  }
  if (PUBLIC_API.test(text) && !GUARD.test(text) && !checked.some((f) => f.kind === 'unchanged'))
    add(
      'public_api_unguarded',
      'it touches a public API with no "do not change" line',
      'add what must not change (e.g. "do not change the exported signatures")',
    );
  return out;
}
