import type { TaskSpec } from '../domain/request.js';
import type { VerificationJson } from '../domain/result.js';
import { describeFailures } from './describe-failures.js';

/** The fixer's instruction (spec 03 "Fix rounds"): the failure, the original tasks, the changed files, the ask. */
export function buildFixerInstruction(v: VerificationJson, tasks: TaskSpec[], changedFiles: string[]): string {
  return [
    'The verification of this work failed.',
    // issue 33: the same account of what failed as a climbing rung's autopsy gives
    describeFailures(v),
    '',
    'The original tasks:',
    ...tasks.map((t, i) => `${i + 1}. [${t.name}] ${t.instruction}`),
    '',
    `Files the workers changed: ${changedFiles.length ? changedFiles.join(', ') : '(none)'}`,
    '',
    'Find and fix the cause (not the test, unless the test is wrong per the task). ' +
      'Rerun the command yourself until it passes. Report in two sentences.',
  ].join('\n');
}
