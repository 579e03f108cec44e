import type { CompactJob } from '../api.js';

/** The job's changes: a diff per file against the checkpoint, with review comments that go back as a follow-up. */
export function Changes(_props: { job: CompactJob }) {
  return null;
}
