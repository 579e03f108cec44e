import { readBoundedText } from '../platform/files/bounded-read.js';

/** Past this a git admin file (packed-refs is the big one) is left to git itself. */
const TEXT_MAX_BYTES = 64 << 20;

/**
 * A small file's text (utf8), or null when it cannot be read (gone, a folder, no permission) — or
 * is not a regular file, is a link, or is bigger than 64 MiB: a worker may have left a FIFO or a
 * link to `/dev/zero` where a git file was (issue 32), and every caller has a way on without it.
 */
export function readTextOrNull(file: string): string | null {
  return readBoundedText(file, { maxBytes: TEXT_MAX_BYTES });
}
