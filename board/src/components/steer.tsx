import type { CompactJob } from '../api.js';

/** A message to a live worker of `task`: delivered at its next turn, or queued as its next follow-up. */
export function Steer(_props: { job: CompactJob; task: string }) {
  return null;
}
