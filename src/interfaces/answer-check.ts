import type { z } from 'zod';
import { GafferError } from '../domain/errors.js';

/** Issues named in the message; the rest are counted (one bad field often trips several checks). */
const ISSUES_NAMED = 3;

/**
 * Checks what a door is about to send (or, on the CLI's HTTP client, what it received) against the
 * answer's schema (domain/answer-schema.ts) and gives the same value back, typed. An answer that
 * does not fit is gaffer's own fault: an `internal` error naming the door and the field, never a
 * silently different answer. The value itself is returned, not zod's copy, so the key order the
 * engine chose is what goes on the wire.
 */
export function checkAnswer<S extends z.ZodType>(schema: S, value: unknown, door: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return value as z.output<S>;
  const issues = parsed.error.issues.map(describeIssue);
  const first = issues[0] ?? { field: '', message: 'does not match' };
  const more = issues.length > ISSUES_NAMED ? ` (+${issues.length - ISSUES_NAMED} more)` : '';
  const named = issues
    .slice(0, ISSUES_NAMED)
    .map((i) => `${i.field || '(the answer)'}: ${i.message}`)
    .join('; ');
  throw new GafferError(
    'internal',
    `the answer of ${door} does not match its schema: ${named}${more}`,
    first.field || undefined,
  );
}

/** An issue as `field: message`, the field a path like `result.workers[0].status`. */
function describeIssue(issue: z.core.$ZodIssue): { field: string; message: string } {
  // a field the schema does not know is reported on its parent: name the field itself
  if (issue.code === 'unrecognized_keys') {
    return {
      field: pathOf([...issue.path, issue.keys[0] ?? '?']),
      message: `not a field of the answer${issue.keys.length > 1 ? ` (nor ${issue.keys.slice(1).join(', ')})` : ''}`,
    };
  }
  return { field: pathOf(issue.path), message: issue.message };
}

function pathOf(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}
