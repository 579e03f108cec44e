/** Default tail size: what state detection reads (spec 04). */
export const DEFAULT_TAIL_BYTES = 8 * 1024;

/**
 * The newest `capacity` bytes of a stream, in one fixed buffer: memory stays the same
 * whether the worker prints a line or 100 MB.
 */
export class OutputTail {
  readonly #buffer: Buffer;
  #length = 0;

  constructor(capacity = DEFAULT_TAIL_BYTES) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`tail capacity must be a positive integer, got ${capacity}`);
    this.#buffer = Buffer.alloc(capacity);
  }

  /** Appends a chunk, dropping the oldest bytes beyond the capacity. */
  push(chunk: Buffer): void {
    const capacity = this.#buffer.length;
    if (chunk.length >= capacity) {
      chunk.copy(this.#buffer, 0, chunk.length - capacity);
      this.#length = capacity;
      return;
    }
    const keep = Math.min(this.#length, capacity - chunk.length);
    this.#buffer.copyWithin(0, this.#length - keep, this.#length);
    chunk.copy(this.#buffer, keep);
    this.#length = keep + chunk.length;
  }

  /** Bytes held now. */
  get byteLength(): number {
    return this.#length;
  }

  /** The tail as text, cut at character boundaries (no half UTF-8 sequence at either end). */
  text(): string {
    return decodeUtf8Whole(this.#buffer.subarray(0, this.#length));
  }
}

/** Decodes UTF-8, dropping a sequence cut off at the start or the end of `bytes`. */
export function decodeUtf8Whole(bytes: Buffer): string {
  let start = 0;
  // a tail starts wherever the cut fell: skip continuation bytes (10xxxxxx) of a cut character
  while (start < bytes.length && start < 3 && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  let end = bytes.length;
  // an unfinished sequence at the end: find its lead byte and drop it when incomplete
  for (let back = 1; back <= 3 && end - back >= start; back++) {
    const byte = bytes[end - back] ?? 0;
    if ((byte & 0xc0) === 0x80) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    if (needed > back) end -= back;
    break;
  }
  return bytes.toString('utf8', start, end);
}
