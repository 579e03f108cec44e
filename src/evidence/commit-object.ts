import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';

let written = 0;

/**
 * Writes the parentless commit of `tree` that `git commit-tree <tree> -m <message>` writes with
 * gaffer as author and committer at `atMs` — the same bytes, so the same id — as a loose object of
 * the shadow repository `gitDir`, without starting a process: a checkpoint's commit is a few
 * hundred bytes, its tree is git's. Null when it cannot (a tree id that is not sha1, a write that
 * fails): the caller then asks git.
 */
export function writeCommitObject(gitDir: string, tree: string, message: string, atMs: number): string | null {
  if (!/^[0-9a-f]{40}$/.test(tree)) return null;
  const who = `gaffer <gaffer@localhost> ${Math.floor(atMs / 1000)} +0000`;
  return writeLooseObject(
    path.join(gitDir, 'objects'),
    'commit',
    Buffer.from(`tree ${tree}\nauthor ${who}\ncommitter ${who}\n\n${message}\n`, 'utf8'),
  );
}

/**
 * Writes a sha1 object into an objects folder the way git writes a loose one — `<id[0..2]>/<id[2..]>`,
 * zlib, a temp file renamed over it, read-only — and returns its id; an object already there, or
 * loose in one of the `alsoIn` folders, is this one (the same content under the same name). Null
 * when the write fails.
 */
export function writeLooseObject(
  objectsDir: string,
  type: 'blob' | 'tree' | 'commit',
  body: Buffer,
  alsoIn: readonly string[] = [],
): string | null {
  const object = Buffer.concat([Buffer.from(`${type} ${body.length}\0`, 'utf8'), body]);
  const id = createHash('sha1').update(object).digest('hex');
  const dir = path.join(objectsDir, id.slice(0, 2));
  const file = path.join(dir, id.slice(2));
  if (statSync(file, { throwIfNoEntry: false }) !== undefined) return id;
  // a repository this one borrows objects from (its alternates) holds it already
  if (
    alsoIn.some(
      (other) => statSync(path.join(other, id.slice(0, 2), id.slice(2)), { throwIfNoEntry: false }) !== undefined,
    )
  )
    return id;
  const tmp = path.join(dir, `tmp_obj_gaffer_${process.pid}_${written++}`);
  try {
    mkdirSync(dir, { recursive: true });
    // git's own level for loose objects (core.looseCompression defaults to best speed)
    writeFileSync(tmp, deflateSync(object, { level: 1 }), { mode: 0o444 });
    renameSync(tmp, file);
    return id;
  } catch {
    rmSync(tmp, { force: true });
    return null;
  }
}

/** The id git gives an object of this type and content (sha1), nothing written. */
export function objectId(type: 'blob' | 'tree' | 'commit', body: Buffer): string {
  return createHash('sha1').update(`${type} ${body.length}\0`).update(body).digest('hex');
}
