import { randomBytes } from 'node:crypto';
import { linkSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GafferError } from '../domain/errors.js';
import { PRIVATE_FILE_MODE } from '../platform/files/data-dir.js';

/** The data dir's secret file: the local user's credential for the server (issue 11). */
export const SECRET_FILE = 'secret';

/** 32 random bytes, base64url: 43 characters. */
const SECRET_BYTES = 32;
const SECRET_FORM = /^[A-Za-z0-9_-]{43,}$/;

/** The coordinator's node token when `GAFFER_NODE_TOKEN` gives none (spec 09): its worker nodes' credential, good for the node routes only. */
export const NODE_SECRET_FILE = 'node-secret';

/** Where the data dir keeps its secret (or, named, another secret of its: `node-secret`). */
export function secretPath(dataDir: string, name: string = SECRET_FILE): string {
  return join(dataDir, name);
}

/**
 * The data dir's secret, created (0600) when there is none yet. Written to a temp file and linked
 * into place, so two servers starting at once agree on one secret and no reader sees a half file.
 */
export function ensureSecret(dataDir: string, name: string = SECRET_FILE): string {
  const file = secretPath(dataDir, name);
  const existing = readSecret(dataDir, name);
  if (existing !== null) return existing;
  const temp = `${file}.${process.pid}.tmp`;
  rmSync(temp, { force: true }); // a crashed process with this pid may have left one
  writeFileSync(temp, `${randomBytes(SECRET_BYTES).toString('base64url')}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  try {
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(temp, { force: true });
  }
  const secret = readSecret(dataDir, name);
  if (secret === null) throw new GafferError('internal', `cannot create the secret file ${file}`);
  return secret;
}

/**
 * The data dir's secret, or null when there is none. One that is not a regular file, or does not
 * look like a secret gaffer made, is refused rather than trusted: the fix is to delete it.
 */
export function readSecret(dataDir: string, name: string = SECRET_FILE): string | null {
  const file = secretPath(dataDir, name);
  let isFile: boolean;
  try {
    isFile = lstatSync(file).isFile();
  } catch {
    return null;
  }
  const fix = `delete it and restart \`gaffer serve\`, which makes a new one`;
  if (!isFile) throw new GafferError('internal', `the secret ${file} is not a regular file: ${fix}`);
  const secret = readFileSync(file, 'utf8').trim();
  if (!SECRET_FORM.test(secret))
    throw new GafferError('internal', `the secret ${file} is not one gaffer made (43+ base64url characters): ${fix}`);
  return secret;
}
