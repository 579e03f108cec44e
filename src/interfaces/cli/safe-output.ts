/**
 * The CLI's stdout and stderr when their reader goes away (`gaffer dispatch … 2>&1 | head -2`): a
 * write to a closed pipe fails with EPIPE, emitted as an `error` event that, unheard, kills the
 * process — and with it a job this process runs, which the next gaffer then reads as interrupted by
 * a restart. Printing is the least of what the CLI does: a failed write ends the printing, never
 * the job.
 */

const guarded = new WeakSet<NodeJS.WritableStream>();

/** Makes an error on each stream (EPIPE and the like) stop further writes to it instead of ending the process. */
export function guardOutput(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  for (const stream of streams) {
    if (guarded.has(stream)) continue;
    guarded.add(stream);
    // the stream is destroyed by its error; isWritable() says so from then on
    stream.on('error', () => undefined);
  }
}

/** True while a write to `stream` can still reach a reader. */
export function isWritable(stream: NodeJS.WriteStream): boolean {
  return !stream.destroyed && stream.writable;
}

/** Writes `text` unless the stream's reader is gone. */
export function writeTo(stream: NodeJS.WriteStream, text: string): void {
  if (isWritable(stream)) stream.write(text);
}
