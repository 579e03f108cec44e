import envPaths from 'env-paths';
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The data dir: `--data-dir`, else `GAFFER_DATA_DIR`, else the platform's user data dir for gaffer. */
export function resolveDataDir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const chosen = flag ?? env.GAFFER_DATA_DIR;
  return resolve(chosen && chosen.trim() ? chosen : envPaths('gaffer', { suffix: '' }).data);
}

/** Mode of the data dir and every directory in it: the owner's alone. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of every file gaffer keeps in the data dir (the db, server.json, logs, secrets). */
export const PRIVATE_FILE_MODE = 0o600;

/** What gaffer keeps at the top of its data dir: the db (and -wal/-shm), the config, server.json, secrets, the outcome and liveness logs. */
const OWN_FILE = /^(gaffer\.|server\.json|\.?secret|outcomes\.jsonl$|worker_status\.jsonl$)/;
/** Its folders there: job logs and instructions, shadow repositories, outside and mtime evidence, spare entries. */
const OWN_DIRS = new Set(['jobs', 'shadow', 'outside', 'snapshots', 'spare']);

/**
 * Creates the data dir 0700, or tightens an existing one: the dir and gaffer's own entries at its
 * top lose every group and other bit. A directory 0700 shuts out everything under it, so deeper
 * entries need no walk. Only gaffer's names are touched (a data dir pointed at a folder that holds
 * other things leaves those alone); what gaffer cannot chmod (not the owner) stays as it is, and
 * symlinks are not followed.
 */
export function makePrivateDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(dir, PRIVATE_DIR_MODE);
  for (const name of readdirSync(dir)) {
    if (!OWN_FILE.test(name) && !OWN_DIRS.has(name)) continue;
    const path = join(dir, name);
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      continue; // gone meanwhile (another process's temp file)
    }
    if (stat.isDirectory() && OWN_DIRS.has(name)) tighten(path, PRIVATE_DIR_MODE);
    else if (stat.isFile() && OWN_FILE.test(name)) tighten(path, PRIVATE_FILE_MODE);
  }
}

/** Creates `file` empty with mode 0600 when it does not exist (SQLite's -wal and -shm take the db file's mode). */
export function touchPrivateFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  tighten(file, PRIVATE_FILE_MODE);
}

function tighten(path: string, mode: number): void {
  try {
    const current = lstatSync(path).mode & 0o777;
    if ((current & ~mode) !== 0) chmodSync(path, current & mode);
  } catch {
    // not ours to change (another user's file, a read-only mount): left as it is
  }
}
