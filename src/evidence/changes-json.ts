import { outsideEvidenceOf } from './outside-changes.js';
import { sortPaths } from './paths.js';
import type { ChangeSet } from './types.js';
import type { Snapshot } from '../domain/snapshot.js';
import type { ChangesJson, GitFacts } from '../domain/changes.js';

/** spec 03: each list in `changes` is capped at 60 (counts stay exact). */
export const CHANGES_LIST_CAP = 60;

/** The checkpoint's short id in `changes`. */
const SHORT_ID_CHARS = 12;

/**
 * The `changes` JSON of spec 03 from the pre-snapshot and the full change set. `after` (the
 * snapshot the changes were taken against) adds its skipped files and truncation, and what
 * changed outside the evidence between the two (`outside_evidence`, when anything did).
 */
export function buildChangesJson(
  before: Snapshot,
  changes: ChangeSet,
  extra: { verificationWrote?: string[]; git?: GitFacts; after?: Snapshot },
): ChangesJson {
  let truncated = false;
  const cap = (list: string[]): string[] => {
    if (list.length <= CHANGES_LIST_CAP) return list;
    truncated = true;
    return list.slice(0, CHANGES_LIST_CAP);
  };
  const skipped = sortPaths(new Set([...before.skipped, ...(extra.after?.skipped ?? [])]));
  const json: ChangesJson = {
    source: before.source,
    checkpoint: before.id.slice(0, SHORT_ID_CHARS),
    count: changes.added.length + changes.modified.length + changes.deleted.length,
    added: cap(sortPaths(changes.added)),
    modified: cap(sortPaths(changes.modified)),
    deleted: cap(sortPaths(changes.deleted)),
    truncated: false,
    snapshot_truncated: before.truncated || extra.after?.truncated === true,
    skipped: cap(skipped),
    verification_wrote: cap(sortPaths(extra.verificationWrote ?? [])),
  };
  json.truncated = truncated;
  if (extra.git !== undefined) json.git = extra.git;
  const changed = new Set([...changes.added, ...changes.modified]);
  const hidden = (extra.after?.hiddenByIgnore ?? []).filter((p) => changed.has(p));
  if (hidden.length > 0) json.hidden_by_ignore = hidden.slice(0, CHANGES_LIST_CAP);
  const outside = extra.after === undefined ? null : outsideEvidenceOf(before, extra.after);
  if (outside !== null) json.outside_evidence = outside;
  return json;
}
