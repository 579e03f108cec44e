// issue 33: one account of what a verification found failing, in the same words for a fix round's
// fixer and for the next rung of a climb (its autopsy): the command, the result, each failing test
// with the lines of output that report it, the tests that stopped running, the checkpoint's tests,
// and the output's tail.
import type { VerificationJson } from '../domain/result.js';

/** How much of the output's tail the account keeps. */
export const FAILURES_TAIL_CHARS = 2_000;

/** What failed, in words: the block a fixer and a climbing rung both read. */
export function describeFailures(v: VerificationJson): string {
  const preExisting = new Set(v.pre_existing);
  const known = new Set(v.known_failures ?? []);
  const flaky = new Set(v.flaky);
  const details = new Map((v.failure_details ?? []).map((d) => [d.id, d.excerpt]));
  const label = (id: string): string =>
    flaky.has(id)
      ? ' (flaky: it passed on a rerun)'
      : known.has(id)
        ? " (declared a known failure: not this job's)"
        : preExisting.has(id)
          ? " (failed at the checkpoint too — still this job's to fix)"
          : '';
  const failing = v.failures.length
    ? v.failures.flatMap((id) => [`- ${id}${label(id)}`, ...indent(details.get(id))])
    : ['- (no test ids could be parsed; see the output below)'];
  const missing = v.missing_tests ?? [];
  const original = v.original_tests;
  return [
    `Command: ${v.command ?? '(none)'}`,
    `Result: ${v.summary}`,
    '',
    'Failing tests:',
    ...failing,
    ...(missing.length > 0
      ? ['', `Tests that ran at the checkpoint and did not run now (${missing.length}): ${missing.join(', ')}`]
      : []),
    // spec 03: the checkpoint's tests judge the work; a fixer that edits them again is judged the same way
    ...(original?.blocking
      ? [
          '',
          `The tests as they were before the work were run against the new code and fail${original.failures.length > 0 ? ` (${original.failures.join(', ')})` : ''}. Test files changed: ${original.changed.join(', ')}. ` +
            'Put those test files back as they were and fix the code instead; changed tests do not count as a fix.',
        ]
      : []),
    '',
    'Output (tail):',
    v.output_tail.slice(-FAILURES_TAIL_CHARS),
  ].join('\n');
}

function indent(excerpt: string | undefined): string[] {
  return excerpt ? excerpt.split('\n').map((l) => `    ${l}`) : [];
}
