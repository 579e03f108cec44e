import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';

/** What one bounded read found: the bytes, or why they were not read (`missing`: nothing there, which is no refusal). */
export type BoundedRead = { ok: true; bytes: Buffer } | { ok: false; missing: boolean; why: string };

export interface BoundedReadOptions {
  /** Bytes read at most: a bigger file is refused, not cut. */
  maxBytes: number;
  /**
   * The folder the file must resolve inside (a workspace, a git dir): a link, in the file's name
   * or any folder above it, that leads out of it is refused. Without it, a link at the file itself
   * is refused and the folders above it are taken as they are.
   */
  within?: string;
}

/** The cap on a manifest, lockfile, hints or test file gaffer reads to decide something (4 MiB). */
export const MANIFEST_MAX_BYTES = 4 << 20;

/**
 * Reads a file a worker may have planted (issue 32): never a hang, never a swell. Only a regular
 * file is read — a FIFO, socket or device is refused before it is opened (a FIFO's open blocks
 * until a writer comes; `/dev/zero` never ends) — opened without following a link and without
 * blocking, checked again on the open descriptor (the name may have been swapped in between), and
 * read up to `maxBytes`. Synchronous: a regular file's bytes are on disk, so the read is bounded.
 */
export function readBounded(file: string, opts: BoundedReadOptions): BoundedRead {
  let target = file;
  let st: Stats | undefined;
  try {
    st = lstatSync(file, { throwIfNoEntry: false });
    if (st === undefined) return { ok: false, missing: true, why: 'not there' };
    if (opts.within !== undefined) {
      target = realpathSync.native(file);
      const root = realpathSync.native(opts.within);
      if (target !== root && !target.startsWith(root.endsWith(path.sep) ? root : root + path.sep))
        return { ok: false, missing: false, why: `a link out of ${opts.within} (to ${target}): not followed` };
      st = lstatSync(target);
    } else if (st.isSymbolicLink()) {
      return { ok: false, missing: false, why: 'a symbolic link: not followed' };
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? { ok: false, missing: true, why: 'a dangling link' }
      : { ok: false, missing: false, why: `cannot be read (${code ?? String(err)})` };
  }
  const kind = notRegular(st);
  if (kind !== null) return { ok: false, missing: false, why: `${kind}, not a regular file: not read` };
  if (st.size > opts.maxBytes)
    return { ok: false, missing: false, why: `${st.size} bytes, over the ${opts.maxBytes}-byte cap: not read` };

  let fd: number;
  try {
    fd = openSync(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, missing: true, why: 'not there' };
    return {
      ok: false,
      missing: false,
      why: code === 'ELOOP' ? 'a symbolic link: not followed' : `cannot be read (${code ?? String(err)})`,
    };
  }
  try {
    const now = fstatSync(fd);
    const swapped = notRegular(now);
    if (swapped !== null) return { ok: false, missing: false, why: `${swapped}, not a regular file: not read` };
    // the size again on the descriptor, then at most one byte past the cap: a file that grew is refused, never followed
    const buffer = Buffer.alloc(Math.min(now.size, opts.maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, length);
      if (n === 0) break;
      length += n;
    }
    if (length > opts.maxBytes)
      return { ok: false, missing: false, why: `over the ${opts.maxBytes}-byte cap: not read` };
    return { ok: true, bytes: buffer.subarray(0, length) };
  } catch (err) {
    return { ok: false, missing: false, why: `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})` };
  } finally {
    closeSync(fd);
  }
}

/** The file's text (utf8) from a bounded read, or null when there is none or it was refused. */
export function readBoundedText(file: string, opts: BoundedReadOptions): string | null {
  const read = readBounded(file, opts);
  return read.ok ? read.bytes.toString('utf8') : null;
}

/** A workspace file's text (`rel` below `workspace`, no link out of it), or null: none there, or refused. */
export function readWorkspaceText(workspace: string, rel: string, maxBytes = MANIFEST_MAX_BYTES): string | null {
  return readBoundedText(path.join(workspace, rel), { maxBytes, within: workspace });
}

function notRegular(st: Stats): string | null {
  if (st.isFile()) return null;
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isDirectory()) return 'a folder';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a file';
}
