import type { ChangesJson } from './changes.js';
import type { CriteriaCheckJson, VerificationJson, WorktreesJson } from './result.js';

/**
 * A worktree job's answer from its places' (spec 06): every task has its own evidence and
 * verification, and the merged tree its own; the job's `changes` is their union and its
 * verification says each, named — a failure anywhere is the job's failure.
 */

const uniqueSorted = (lists: string[][]): string[] => [...new Set(lists.flat())].sort();

/** The union of the tasks' changes (each named path once; counts recounted). */
export function unionChanges(parts: readonly (ChangesJson | null)[]): ChangesJson | null {
  const known = parts.filter((c): c is ChangesJson => c !== null);
  const first = known[0];
  if (!first) return null;
  if (known.length === 1) return first;
  const added = uniqueSorted(known.map((c) => c.added));
  const modified = uniqueSorted(known.map((c) => c.modified)).filter((p) => !added.includes(p));
  const deleted = uniqueSorted(known.map((c) => c.deleted)).filter((p) => !added.includes(p) && !modified.includes(p));
  const outside = known.map((c) => c.outside_evidence).filter((o) => o !== undefined);
  return {
    source: known.some((c) => c.source === 'mtime') ? 'mtime' : 'checkpoint',
    checkpoint: known.map((c) => c.checkpoint).join(','),
    count: added.length + modified.length + deleted.length,
    added,
    modified,
    deleted,
    truncated: known.some((c) => c.truncated),
    snapshot_truncated: known.some((c) => c.snapshot_truncated),
    skipped: uniqueSorted(known.map((c) => c.skipped)),
    verification_wrote: uniqueSorted(known.map((c) => c.verification_wrote)),
    ...(outside.length > 0
      ? {
          outside_evidence: {
            ...(outside.some((o) => o.git) ? { git: uniqueSorted(outside.map((o) => o.git ?? [])) } : {}),
            ...(outside.some((o) => o.editor) ? { editor: uniqueSorted(outside.map((o) => o.editor ?? [])) } : {}),
            ...(outside.some((o) => o.dependencies)
              ? { dependencies: uniqueSorted(outside.map((o) => o.dependencies ?? [])) }
              : {}),
            ...(outside.some((o) => o.excluded)
              ? {
                  excluded: Object.assign({}, ...outside.map((o) => o.excluded ?? {})) as NonNullable<
                    (typeof outside)[number]['excluded']
                  >,
                }
              : {}),
            count: outside.reduce((n, o) => n + o.count, 0),
            ...(outside.some((o) => o.truncated) ? { truncated: true as const } : {}),
          },
        }
      : {}),
  };
}

/**
 * The job's verification from its places' (`<task>: …`, the merged tree as `merged`): it passed
 * only when each did, blocks when any does, and names every failure with its place.
 */
export function combineVerifications(
  parts: readonly { name: string; v: VerificationJson | null }[],
): VerificationJson | null {
  const known = parts.filter((p): p is { name: string; v: VerificationJson } => p.v !== null);
  const first = known[0];
  if (!first) return null;
  if (known.length === 1 && parts.length === 1) return first.v;
  const named = (pick: (v: VerificationJson) => string[] | undefined) =>
    known.flatMap(({ name, v }) => (pick(v) ?? []).map((x) => `${name}: ${x}`));
  const ran = known.filter((p) => p.v.ran);
  const failing = known.find((p) => p.v.ok === false) ?? known.find((p) => p.v.blocking);
  const ok =
    ran.length === 0
      ? null
      : known.some((p) => p.v.ok === false)
        ? false
        : known.every((p) => p.v.ok === true)
          ? true
          : null;
  const touched = uniqueSorted(known.map((p) => p.v.tests_touched ?? []));
  const weakened = named((v) => v.tests_weakened);
  const refused = uniqueSorted(known.map((p) => p.v.sandbox_refused ?? []));
  const blockingOriginal =
    known.find((p) => p.v.original_tests?.blocking)?.v.original_tests ??
    known.find((p) => p.v.original_tests)?.v.original_tests;
  const limit = known.find((p) => p.v.limit)?.v.limit;
  return {
    mode: first.v.mode,
    ran: ran.length > 0,
    ok,
    inconclusive: known.some((p) => p.v.inconclusive),
    kind: first.v.kind,
    command: first.v.command,
    scope: known.some((p) => p.v.scope === 'related') ? 'related' : first.v.scope,
    exit_code: failing?.v.exit_code ?? first.v.exit_code,
    timed_out: known.some((p) => p.v.timed_out),
    duration_s: Math.round(known.reduce((s, p) => s + p.v.duration_s, 0) * 10) / 10,
    blocking: known.some((p) => p.v.blocking),
    summary: known.map(({ name, v }) => `${name}: ${v.summary}`).join('; '),
    failures: named((v) => v.failures),
    new_failures: named((v) => v.new_failures),
    pre_existing: named((v) => v.pre_existing),
    ...(known.every((p) => p.v.pre_existing_only !== false) && known.some((p) => p.v.pre_existing_only)
      ? { pre_existing_only: true }
      : {}),
    flaky: named((v) => v.flaky),
    ...(known.some((p) => p.v.output_matched === false)
      ? { output_matched: false }
      : known.some((p) => p.v.output_matched)
        ? { output_matched: true }
        : {}),
    output_tail: failing?.v.output_tail ?? '',
    attempts: Math.max(...known.map((p) => p.v.attempts)),
    ...(touched.length > 0 ? { tests_touched: touched } : {}),
    ...(weakened.length > 0 ? { tests_weakened: weakened } : {}),
    ...(blockingOriginal ? { original_tests: blockingOriginal } : {}),
    ...(known.some((p) => p.v.could_not_start) ? { could_not_start: true as const } : {}),
    ...(refused.length > 0 ? { sandbox_refused: refused } : {}),
    ...(limit ? { limit } : {}),
  };
}

/** The tasks' criteria checks together (per-task criteria are already named `task: criterion`). */
export function combineCriteria(parts: readonly (CriteriaCheckJson | null | undefined)[]): CriteriaCheckJson | null {
  const known = parts.filter((c): c is CriteriaCheckJson => c !== null && c !== undefined);
  if (known.length === 0) return null;
  const details = known.flatMap((c) => c.details ?? []);
  return {
    complete: known.every((c) => c.complete),
    met: known.flatMap((c) => c.met),
    unmet: known.flatMap((c) => c.unmet),
    unchecked: known.flatMap((c) => c.unchecked),
    ...(details.length > 0 ? { details } : {}),
  };
}

/** Files two branches both changed: where merging them may conflict (spec 06). */
export function predictConflicts(
  branches: readonly { task: string; files: readonly string[] }[],
): { tasks: string[]; files: string[] }[] {
  const found: { tasks: string[]; files: string[] }[] = [];
  for (const [i, a] of branches.entries()) {
    for (const b of branches.slice(i + 1)) {
      const theirs = new Set(b.files);
      const both = a.files.filter((f) => theirs.has(f));
      if (both.length > 0) found.push({ tasks: [a.task, b.task], files: [...both].sort() });
    }
  }
  return found;
}

/** A worktree job's branches and merge in a few words, for the verdict. */
export function describeWorktrees(w: WorktreesJson): string {
  const kept = w.tasks.filter((t) => t.state !== 'removed').map((t) => t.task);
  const parts = [
    `${w.tasks.length} branch${w.tasks.length === 1 ? '' : 'es'} gaffer/<job>/<task>${kept.length > 0 ? `, worktree kept: ${kept.join(', ')}` : ''}`,
  ];
  const last = w.merges.at(-1);
  if (last) {
    const conflicts = w.tasks.filter((t) => t.merge === 'conflict').map((t) => t.task);
    const merged = `merged ${last.tasks.length}${conflicts.length > 0 ? ` (conflict: ${conflicts.join(', ')})` : ''}`;
    parts.push(
      last.applied ? `${merged}, verified and applied to the workspace` : `${merged}, not applied: ${last.why ?? ''}`,
    );
  } else if (w.merge === 'none') parts.push('not merged (merge: none)');
  return parts.join('; ');
}
