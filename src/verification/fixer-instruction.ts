import type { TaskSpec } from '../domain/request.js';
import type { VerificationJson } from '../domain/result.js';

export const FIXER_TAIL_CHARS = 2_000;

/** The fixer's instruction (spec 03 "Fix rounds"): the failure, the original tasks, the changed files, the ask. */
export function buildFixerInstruction(v: VerificationJson, tasks: TaskSpec[], changedFiles: string[]): string {
  const preExisting = new Set(v.pre_existing);
  const failures = v.failures.length
    ? v.failures.map((f) => `- ${f}${preExisting.has(f) ? ' (already failed before the workers\' change)' : ''}`).join('\n')
    : '- (no test ids could be parsed; see the output below)';
  return [
    `The verification of this work failed. Command: ${v.command ?? '(none)'}`,
    `Result: ${v.summary}`,
    '',
    'Failures:',
    failures,
    '',
    'Output (tail):',
    v.output_tail.slice(-FIXER_TAIL_CHARS),
    '',
    'The original tasks:',
    ...tasks.map((t, i) => `${i + 1}. [${t.name}] ${t.instruction}`),
    '',
    `Files the workers changed: ${changedFiles.length ? changedFiles.join(', ') : '(none)'}`,
    '',
    // spec 03: the checkpoint's tests judge the work; a fixer that edits them again is judged the same way
    ...(v.original_tests?.blocking
      ? [
          `The tests as they were before the work were run against the new code and fail. Test files changed: ${v.original_tests.changed.join(', ')}. ` +
            'Put those test files back as they were and fix the code instead; changed tests do not count as a fix.',
          '',
        ]
      : []),
    'Find and fix the cause (not the test, unless the test is wrong per the task). ' +
      'Rerun the command yourself until it passes. Report in two sentences.',
  ].join('\n');
}
