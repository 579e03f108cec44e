import { unlinkSync } from 'node:fs';

/**
 * Removes one file if it is there (`rm -f` of a file): one synchronous unlink, where `fs.rm`
 * with `force` first lstats it and takes two round trips through libuv's thread pool.
 */
export function removeFile(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
