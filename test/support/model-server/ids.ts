import { randomBytes } from 'node:crypto';

/** Makes ids unique across server runs: a random run prefix plus a counter (claude corrupts a resumed session when a new run reuses ids). */
export function createIdFactory(): (prefix: string) => string {
  const run = randomBytes(8).toString('hex');
  let counter = 0;
  return (prefix) => {
    counter += 1;
    // alphanumerics only: Anthropic requires tool-use ids to match ^[a-zA-Z0-9_-]+$
    return `${prefix}${run}${counter.toString(36).padStart(4, '0')}`;
  };
}
