// spec 05 "Grounding (queued tasks)": a grounded task is dispatchable only with receipts (evidence
// it is real), done_means (checkable completion criteria) and a known type; otherwise it goes back
// to whoever spawned it with each gap named — never a bare "rejected", never dispatched. A task
// with a hold never dispatches.
import { TASK_TYPES } from './status.js';

/** What a task's brief carries besides its instruction (spec 02/05): the handoff prompt's material. */
export interface TaskBrief {
  /** Evidence the task is real: `file:line`, a log line, an issue link. */
  receipts: string[];
  /** Explicit, checkable completion criteria: the prompt's order of work and done means. */
  done_means: string[];
  /** Stop mid-task and report the partial if any of these holds. */
  abort_criteria: string[];
  /** What to read before starting (else the receipts). */
  read_first: string[];
  /** The task's own context (the job's `context` goes to every task). */
  context: string | null;
  /** The task was asked to be grounded (`grounded: true`, or it came from the queue folder). */
  grounded: boolean;
}

/** A task as grounding reads it: the request's raw fields (the type unchecked yet). */
export interface GroundingInput {
  type?: string | undefined;
  receipts?: readonly string[] | undefined;
  done_means?: readonly string[] | undefined;
  hold?: string | null | undefined;
  grounded?: boolean | undefined;
}

/**
 * The gaps that keep a task from dispatching, in spec 05's words; empty when it may. A hold always
 * is one; receipts, done_means and the type are asked of a grounded task only.
 */
export function groundingGaps(task: GroundingInput, grounded: boolean): string[] {
  const gaps: string[] = [];
  if (task.hold) gaps.push(`held: ${task.hold}`);
  if (!grounded) return gaps;
  if ((task.receipts?.length ?? 0) === 0)
    gaps.push('no receipts (evidence the task is real: a file:line, a log line, an issue link)');
  if ((task.done_means?.length ?? 0) === 0)
    gaps.push('no done_means (explicit, checkable completion criteria: what must be true when it is done)');
  if (task.type === undefined) gaps.push(`no type (known: ${TASK_TYPES.join(', ')})`);
  else if (!isTaskType(task.type)) gaps.push(`unknown type '${task.type}' (known: ${TASK_TYPES.join(', ')})`);
  return gaps;
}

export function isTaskType(type: string): type is (typeof TASK_TYPES)[number] {
  return (TASK_TYPES as readonly string[]).includes(type);
}
