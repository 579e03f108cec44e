import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GafferError } from '../domain/errors.js';
import { makePrivateDataDir, PRIVATE_FILE_MODE } from '../platform/files/data-dir.js';

/** The coordinator's file of node credentials (digests only), in its data dir. */
export const NODE_CREDENTIALS_FILE = 'node-credentials.json';

/** A node's name as a credential names it: what `gaffer node --name` must be. */
export const NODE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** A node credential: `<name>.<secret>`, the secret 32 random bytes in base64url. */
const CREDENTIAL = /^([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})$/;

/** One issued credential as the coordinator keeps it: never the credential itself. */
export interface IssuedCredential {
  /** The node's name. */
  name: string;
  /** SHA-256 of the whole credential, hex. */
  digest: string;
  /** When it was issued (ISO). */
  issued: string;
  /** When it was revoked (ISO); null while it holds. */
  revoked: string | null;
}

interface CredentialFile {
  v: 1;
  nodes: IssuedCredential[];
}

/** SHA-256 of a credential, hex: what the coordinator keeps, and the key an entry for the node is signed with. */
export const credentialDigest = (credential: string): string =>
  createHash('sha256').update(credential, 'utf8').digest('hex');

/** The node a credential names, or null when it is not one (the shared node token of old has no name). */
export function credentialName(credential: string): string | null {
  return CREDENTIAL.exec(credential)?.[1] ?? null;
}

const fileOf = (dataDir: string): string => join(dataDir, NODE_CREDENTIALS_FILE);

/** Every credential issued in this data dir (revoked ones too), oldest first. */
export function listNodeCredentials(dataDir: string): IssuedCredential[] {
  let text: string;
  try {
    text = readFileSync(fileOf(dataDir), 'utf8');
  } catch {
    return [];
  }
  const parsed = JSON.parse(text) as Partial<CredentialFile> | null;
  if (!parsed || parsed.v !== 1 || !Array.isArray(parsed.nodes))
    throw new GafferError(
      'internal',
      `${NODE_CREDENTIALS_FILE} in the data dir is not gaffer's: remove it and issue each node's credential again (gaffer nodes issue NAME)`,
    );
  return parsed.nodes;
}

function write(dataDir: string, nodes: IssuedCredential[]): void {
  makePrivateDataDir(dataDir);
  const file = fileOf(dataDir);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ v: 1, nodes } satisfies CredentialFile, null, 2)}\n`, {
    mode: PRIVATE_FILE_MODE,
  });
  renameSync(temp, file);
}

/**
 * Issues node `name` a new credential (`<name>.<secret>`), returned once and kept only as its
 * digest; a credential the name had before is revoked by it.
 */
export function issueNodeCredential(dataDir: string, name: string): string {
  if (!NODE_NAME.test(name))
    throw new GafferError(
      'invalid_request',
      `a node's name must be 1..64 of A-Z a-z 0-9 _ - (it names the node's queue), got ${JSON.stringify(name)}`,
      'name',
    );
  const credential = `${name}.${randomBytes(32).toString('base64url')}`;
  const now = new Date().toISOString();
  const nodes = listNodeCredentials(dataDir).map((c) =>
    c.name === name && c.revoked === null ? { ...c, revoked: now } : c,
  );
  nodes.push({ name, digest: credentialDigest(credential), issued: now, revoked: null });
  write(dataDir, nodes);
  return credential;
}

/** Revokes node `name`'s credential: the coordinator refuses it from its next request on. False when it had none. */
export function revokeNodeCredential(dataDir: string, name: string): boolean {
  const now = new Date().toISOString();
  let found = false;
  const nodes = listNodeCredentials(dataDir).map((c) => {
    if (c.name !== name || c.revoked !== null) return c;
    found = true;
    return { ...c, revoked: now };
  });
  if (found) write(dataDir, nodes);
  return found;
}

/**
 * The coordinator's view of its node credentials: the file read again whenever it changed, so a
 * credential issued or revoked with `gaffer nodes issue|revoke` holds from the next request on.
 */
export class NodeCredentials {
  readonly #dataDir: string;
  #stamp = '';
  #live = new Map<string, Buffer>();

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  /** The node a credential authenticates (its name), or null: unknown, revoked, or not a node credential. */
  authenticate(credential: string): string | null {
    const name = credentialName(credential);
    if (name === null) return null;
    const known = this.#read().get(name);
    const digest = Buffer.from(credentialDigest(credential), 'hex');
    // compared in constant time, and compared whether or not the name is known
    const match = timingSafeEqual(digest, known ?? Buffer.alloc(32));
    return known !== undefined && match ? name : null;
  }

  /** The key entries for node `name` are signed with (its credential's digest), or null when it has no live credential. */
  signingKey(name: string): string | null {
    return this.#read().get(name)?.toString('hex') ?? null;
  }

  #read(): Map<string, Buffer> {
    let stamp: string;
    try {
      const s = statSync(fileOf(this.#dataDir));
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch {
      stamp = 'none';
    }
    if (stamp !== this.#stamp) {
      const live = new Map<string, Buffer>();
      try {
        for (const c of listNodeCredentials(this.#dataDir))
          if (c.revoked === null) live.set(c.name, Buffer.from(c.digest, 'hex'));
      } catch {
        // an unreadable file authenticates no one
      }
      this.#live = live;
      this.#stamp = stamp;
    }
    return this.#live;
  }
}
