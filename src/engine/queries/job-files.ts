import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** Default and most bytes of a worker log returned at once. */
export const LOG_TAIL_DEFAULT = 64 * 1024;
export const LOG_TAIL_MAX = 10 * 1024 * 1024;

/** The newest `bytes` of a file ('' when it does not exist yet). */
export function readTail(file: string, bytes: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, Math.max(0, bytes));
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}
