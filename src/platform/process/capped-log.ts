import { closeSync, mkdirSync, openSync, readSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Log caps (spec 04): the first 64 KiB and the newest 10 MiB are kept. */
export interface CappedLogOptions {
  /** Bytes kept from the start (default 64 KiB). */
  headBytes?: number;
  /** Newest bytes kept (default 10 MiB). */
  tailBytes?: number;
}

/** What a closed log holds. */
export interface CappedLogSummary {
  /** Bytes the worker printed. */
  totalBytes: number;
  /** Bytes left out between the head and the tail (0 when all were kept). */
  droppedBytes: number;
  /** Why the log could not be written (disk full, …); the worker's run is not affected. */
  error: string | null;
}

export const DEFAULT_LOG_HEAD_BYTES = 64 * 1024;
export const DEFAULT_LOG_TAIL_BYTES = 10 * 1024 * 1024;
const COPY_CHUNK_BYTES = 64 * 1024;

/** The line written where bytes were dropped. */
export function formatDroppedLine(droppedBytes: number): string {
  return `[gaffer: ${droppedBytes} bytes of output dropped here]\n`;
}

/**
 * A worker's output log with bounded disk and memory use. The file is made at the first byte of
 * output (a log already at the path is removed at once): a worker that prints nothing leaves no
 * file, and its readers read none as empty. Output goes straight to the file
 * until it holds head + tail bytes — the usual case, readable live and complete. Beyond that,
 * newer bytes go round a ring file of `tailBytes` (positional writes, nothing buffered), and
 * `close()` rewrites the log as head + a dropped-bytes line + the newest `tailBytes`.
 * Writes are synchronous so a flooding worker cannot pile up buffers behind a slow disk.
 */
export class CappedLog {
  readonly #path: string;
  readonly #headBytes: number;
  readonly #tailBytes: number;
  /** The log file once output came; null before, and after a failure. */
  #fd: number | null = null;
  #ringFd: number | null = null;
  /** Bytes in the main file (≤ head + tail). */
  #mainBytes = 0;
  /** Bytes sent round the ring (beyond head + tail). */
  #ringBytes = 0;
  #totalBytes = 0;
  #error: string | null = null;
  #closed: CappedLogSummary | null = null;

  constructor(path: string, opts: CappedLogOptions = {}) {
    this.#path = path;
    this.#headBytes = opts.headBytes ?? DEFAULT_LOG_HEAD_BYTES;
    this.#tailBytes = opts.tailBytes ?? DEFAULT_LOG_TAIL_BYTES;
    if (!Number.isInteger(this.#headBytes) || this.#headBytes < 0)
      throw new RangeError(`headBytes must be an integer >= 0, got ${this.#headBytes}`);
    if (!Number.isInteger(this.#tailBytes) || this.#tailBytes < 1)
      throw new RangeError(`tailBytes must be an integer >= 1, got ${this.#tailBytes}`);
    try {
      // a log of an earlier run at this path would otherwise read as this run's when it prints nothing
      unlinkSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.#fail(err);
    }
  }

  /** The log file, made at the first output (a new file costs the disk more than a check of this field). */
  #main(): number {
    if (this.#fd === null) {
      mkdirSync(dirname(this.#path), { recursive: true });
      this.#fd = openSync(this.#path, 'w+'); // w+: close() reads the head back
    }
    return this.#fd;
  }

  get #ringPath(): string {
    return `${this.#path}.ring`;
  }

  /** Appends a chunk of output. Never throws: a write failure is kept in `error`. */
  write(chunk: Buffer): void {
    if (this.#closed !== null) return;
    this.#totalBytes += chunk.length;
    if (this.#error !== null || chunk.length === 0) return;
    try {
      const room = this.#headBytes + this.#tailBytes - this.#mainBytes;
      if (room > 0) {
        const part = chunk.subarray(0, room);
        writeAll(this.#main(), part, null);
        this.#mainBytes += part.length;
        chunk = chunk.subarray(part.length);
      }
      if (chunk.length > 0) this.#writeRing(chunk);
    } catch (err) {
      this.#fail(err);
    }
  }

  #writeRing(chunk: Buffer): void {
    this.#ringFd ??= openSync(this.#ringPath, 'w+');
    let start = this.#ringBytes;
    this.#ringBytes += chunk.length;
    if (chunk.length > this.#tailBytes) {
      // only its newest tailBytes can survive
      start += chunk.length - this.#tailBytes;
      chunk = chunk.subarray(chunk.length - this.#tailBytes);
    }
    while (chunk.length > 0) {
      const position = start % this.#tailBytes;
      const piece = chunk.subarray(0, this.#tailBytes - position);
      writeAll(this.#ringFd, piece, position);
      start += piece.length;
      chunk = chunk.subarray(piece.length);
    }
  }

  /** Finalizes the file (head + dropped line + newest tail) and closes it; idempotent. */
  close(): CappedLogSummary {
    if (this.#closed !== null) return this.#closed;
    const droppedBytes = this.#ringBytes;
    if (this.#error === null && this.#fd !== null && droppedBytes > 0) {
      try {
        this.#finalizeDropped(this.#fd, droppedBytes);
      } catch (err) {
        this.#fail(err);
      }
    }
    for (const fd of [this.#fd, this.#ringFd]) {
      if (fd !== null) {
        try {
          closeSync(fd);
        } catch {
          // already closed after a failure
        }
      }
    }
    this.#fd = null;
    this.#ringFd = null;
    try {
      rmSync(this.#ringPath, { force: true });
      rmSync(`${this.#path}.tmp`, { force: true });
    } catch (err) {
      this.#fail(err);
    }
    this.#closed = {
      totalBytes: this.#totalBytes,
      droppedBytes: this.#error === null ? droppedBytes : 0,
      error: this.#error,
    };
    return this.#closed;
  }

  #finalizeDropped(mainFd: number, ringLength: number): void {
    const ringFd = this.#ringFd;
    if (ringFd === null) throw new Error('ring file missing');
    const head = this.#headBytes;
    const tail = this.#tailBytes;
    const out = openSync(`${this.#path}.tmp`, 'w');
    try {
      copyRange(mainFd, 0, head, out);
      const headEndsWithNewline = head === 0 || readByte(mainFd, head - 1) === 0x0a;
      writeAll(out, Buffer.from((headEndsWithNewline ? '' : '\n') + formatDroppedLine(ringLength)), null);
      if (ringLength < tail) {
        // the newest tail = the main file's last (tail - ringLength) bytes, then the whole ring
        copyRange(mainFd, head + ringLength, head + tail, out);
        copyRange(ringFd, 0, ringLength, out);
      } else {
        const oldest = ringLength % tail;
        copyRange(ringFd, oldest, tail, out);
        copyRange(ringFd, 0, oldest, out);
      }
    } finally {
      closeSync(out);
    }
    renameSync(`${this.#path}.tmp`, this.#path);
  }

  #fail(err: unknown): void {
    this.#error ??= `log ${this.#path}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function writeAll(fd: number, bytes: Buffer, position: number | null): void {
  let done = 0;
  while (done < bytes.length) {
    const n = writeSync(fd, bytes, done, bytes.length - done, position === null ? null : position + done);
    done += n;
  }
}

function readByte(fd: number, position: number): number | undefined {
  const one = Buffer.alloc(1);
  return readSync(fd, one, 0, 1, position) === 1 ? one[0] : undefined;
}

function copyRange(from: number, start: number, end: number, to: number): void {
  const buffer = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
  for (let at = start; at < end;) {
    const n = readSync(from, buffer, 0, Math.min(COPY_CHUNK_BYTES, end - at), at);
    if (n === 0) throw new Error(`log copy ended early at byte ${at} of ${end}`);
    writeAll(to, buffer.subarray(0, n), null);
    at += n;
  }
}
