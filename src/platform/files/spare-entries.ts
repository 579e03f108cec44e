import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { PRIVATE_DIR_MODE } from './data-dir.js';

/**
 * Folders and files made ahead of need, so that a job's path renames one into place rather than
 * allocating an inode. On ext4 without a journal an inode's allocation skips every inode of its
 * group freed in the last minute, reading the inode table as it goes: 0.3–1.3 ms of the kernel's
 * time for a folder or a file on a machine that deletes much (the one the figures come from),
 * against ~25 µs for a rename. A trivial job makes three: its ref folder, its job folder and its
 * instruction file. Most spares are a pruned job's folder, its files emptied, and its refs' folder,
 * taken back rather than removed (`recycleFolder`): past `retention.jobs`, a job neither allocates
 * nor frees an inode for them. The rest are made on libuv's thread pool, off the engine's thread and
 * off the job's path. They are kept in `<dataDir>/spare/` (0700) for the next engine.
 *
 * A spare is checked once it is in place, before anything is written into it: a folder must be
 * an empty folder, a file a regular file with one link (emptied), opened without following a link
 * or blocking. Anything else there (planted by a process with the owner's rights) is removed and the
 * entry made the ordinary way. Paths outside a data dir whose engine keeps spares are made the
 * ordinary way.
 */

/** Spares of each kind made ahead when fewer are at hand, once the first is asked for: a job takes 2 folders and a file. */
const MADE_FOLDERS = 32;
const MADE_FILES = 16;
/** Spares of each kind kept at most, most of them a pruned job's folder and files taken back (`recycleFolder`). */
const KEPT_FOLDERS = 1024;
const KEPT_FILES = 1024;
/** The folder in a data dir that holds its spares. */
export const SPARE_DIR = 'spare';

/** Makes `dest` a folder, as `mkdirSync(dest, { recursive: true })`: a spare renamed into place when one is at hand. */
export function makeFolder(dest: string): void {
  const spares = sparesFor(dest);
  if (spares !== null) {
    // a job's second ask for its folder (its instruction file's, its second ref's): one stat, not three calls
    const found = statSync(dest, { throwIfNoEntry: false });
    if (found?.isDirectory() === true) return;
    if (found === undefined && spares.placeFolder(dest)) return;
  }
  mkdirSync(dest, { recursive: true });
}

/** Writes `data` to the file `dest`, as `writeFileSync(dest, data)`: a new file is a spare renamed into place when one is at hand. */
export function writeNewFile(dest: string, data: string | Uint8Array): void {
  const spares = sparesFor(dest);
  if (spares === null || !spares.placeFile(dest, data)) writeFileSync(dest, data);
}

/**
 * Removes the folder `dir` and what it holds (a pruned job's folder: its logs and instruction
 * files), keeping the folder and its files as spares for the next jobs when this data dir keeps
 * spares: a file is emptied first, and only gaffer's kind is kept (a folder, a regular file with
 * one link); a link in it is removed by name, never followed. What is left is removed on libuv's
 * pool; never rejects.
 */
export async function recycleFolder(dir: string): Promise<void> {
  const spares = sparesFor(dir);
  try {
    if (spares?.recycle(dir) === true) return;
  } catch {
    // left to the removal below
  }
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Keeps spares for the paths under `dataDir` until the returned function is called (an engine
 * holds them while it is open; two engines on one data dir share them). The spares left by an
 * earlier engine are taken on.
 */
export function keepSpares(dataDir: string): () => Promise<void> {
  const root = path.resolve(dataDir);
  let spares = kept.get(root);
  if (spares === undefined) {
    spares = new Spares(root);
    kept.set(root, spares);
  }
  spares.holders++;
  const held = spares;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--held.holders > 0) return;
    kept.delete(root);
    await held.stop();
  };
}

/** The spares at hand for `dataDir` once the ones being made are there; null when none are kept for it. */
export async function sparesAtHand(dataDir: string): Promise<{ folders: number; files: number } | null> {
  const spares = kept.get(path.resolve(dataDir));
  return spares === undefined ? null : spares.atHand();
}

const kept = new Map<string, Spares>();

function sparesFor(dest: string): Spares | null {
  for (const [root, spares] of kept) if (dest.startsWith(root + path.sep)) return spares;
  return null;
}

class Spares {
  holders = 0;
  readonly #dir: string;
  readonly #folders: string[] = [];
  readonly #files: string[] = [];
  readonly #prefix = randomBytes(4).toString('hex');
  #made = 0;
  #refill: Promise<void> | null = null;
  #stopped = false;

  constructor(root: string) {
    this.#dir = path.join(root, SPARE_DIR);
    try {
      mkdirSync(this.#dir, { recursive: true, mode: PRIVATE_DIR_MODE });
      for (const name of readdirSync(this.#dir)) {
        if (name.startsWith('d.')) this.#folders.push(path.join(this.#dir, name));
        else if (name.startsWith('f.')) this.#files.push(path.join(this.#dir, name));
      }
    } catch {
      this.#stopped = true; // a data dir that cannot hold them: every entry made the ordinary way
    }
  }

  /** Renames a spare folder to `dest` (which does not exist); false when none was at hand or it was not an empty folder. */
  placeFolder(dest: string): boolean {
    const spare = this.#take(this.#folders);
    if (spare === null || !this.#moved(spare, dest, this.#folders)) return false;
    let fit = false;
    try {
      fit = lstatSync(dest).isDirectory() && readdirSync(dest).length === 0;
    } catch {
      // gone meanwhile: made the ordinary way
    }
    if (!fit) rmSync(dest, { recursive: true, force: true });
    return fit;
  }

  /** Writes `data` into a spare file renamed to `dest`; false when `dest` exists, no spare was at hand, or it was not a file of its own. */
  placeFile(dest: string, data: string | Uint8Array): boolean {
    if (lstatSync(dest, { throwIfNoEntry: false }) !== undefined) return false;
    const spare = this.#take(this.#files);
    if (spare === null || !this.#moved(spare, dest, this.#files)) return false;
    const fd = emptiedOwnFile(dest);
    if (fd === null) {
      rmSync(dest, { recursive: true, force: true }); // a link, a hard link, a FIFO, a folder: the name goes
      return false;
    }
    try {
      writeFileSync(fd, data);
    } finally {
      closeSync(fd);
    }
    return true;
  }

  /**
   * Takes `dir`'s files (emptied) and then `dir` itself (once empty) as spares while there is room;
   * true when `dir` went. A folder in it stays for the caller to remove, with `dir`. Synchronous: a job's folder holds a
   * file or two, and a dozen calls cost the engine's thread less than as many round trips through
   * libuv's pool.
   */
  recycle(dir: string): boolean {
    if (this.#stopped || !lstatSync(dir).isDirectory()) return false;
    let left = 0;
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      const fd = this.#files.length < KEPT_FILES ? emptiedOwnFile(file) : null;
      if (fd !== null) {
        closeSync(fd);
        const spare = this.#name('f');
        renameSync(file, spare);
        this.#files.push(spare);
      } else if (lstatSync(file).isDirectory()) left++;
      else rmSync(file, { force: true }); // a link (a ref file shares its inode with the next), a FIFO: the name goes, never what it leads to
    }
    if (left > 0 || this.#folders.length >= KEPT_FOLDERS) return false;
    const spare = this.#name('d');
    renameSync(dir, spare);
    this.#folders.push(spare);
    return true;
  }

  /** How many of each kind are at hand, once the ones being made are there. */
  async atHand(): Promise<{ folders: number; files: number }> {
    while (this.#refill !== null) await this.#refill;
    return { folders: this.#folders.length, files: this.#files.length };
  }

  /** Stops making spares; resolves once the one being made is there. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#refill;
  }

  #take(pool: string[]): string | null {
    const spare = pool.pop() ?? null;
    this.#topUp();
    return spare;
  }

  /** A new spare's path. */
  #name(kind: 'd' | 'f'): string {
    return path.join(this.#dir, `${kind}.${this.#prefix}.${this.#made++}`);
  }

  /** Renames `spare` to `dest`; false when it cannot (the folder above `dest` is missing, another file system), the spare kept if it is still there. */
  #moved(spare: string, dest: string, pool: string[]): boolean {
    try {
      renameSync(spare, dest);
      return true;
    } catch {
      if (existsSync(spare)) pool.push(spare);
      return false;
    }
  }

  #topUp(): void {
    if (this.#refill !== null || this.#stopped) return;
    if (this.#folders.length >= MADE_FOLDERS && this.#files.length >= MADE_FILES) return;
    this.#refill = this.#make().finally(() => {
      this.#refill = null;
    });
  }

  /** Makes spares one at a time, on the thread pool, until both kinds are full; the first failure ends it. */
  async #make(): Promise<void> {
    try {
      while (!this.#stopped) {
        const folder = this.#folders.length < MADE_FOLDERS;
        if (!folder && this.#files.length >= MADE_FILES) return;
        const spare = this.#name(folder ? 'd' : 'f');
        if (folder) await mkdir(spare);
        else await (await open(spare, 'wx')).close();
        (folder ? this.#folders : this.#files).push(spare);
      }
    } catch {
      this.#stopped = true; // the disk is full, the data dir went: entries are made the ordinary way
    }
  }
}

/**
 * Opens `file` for writing and empties it when it is a regular file with no other link; null
 * (nothing changed) for a link, a hard link, a FIFO (not waited for: `O_NONBLOCK`), a folder. The
 * checks are on the descriptor, so a name swapped after a look is never written through.
 */
function emptiedOwnFile(file: string): number | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (st.isFile() && st.nlink === 1) {
      if (st.size > 0) ftruncateSync(fd, 0);
      return fd;
    }
  } catch {
    // fall through: closed below
  }
  closeSync(fd);
  return null;
}
