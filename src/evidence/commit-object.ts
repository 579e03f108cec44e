import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';

let written = 0;

/**
 * Writes the parentless commit of `tree` that `git commit-tree <tree> -m <message>` writes with
 * gaffer as author and committer at `atMs` — the same bytes, so the same id — as a loose object of
 * the shadow repository `gitDir` (`<id[0..2]>/<id[2..]>`, zlib, a temp file renamed over it, the
 * way git writes one), without starting a process: a checkpoint's commit is a few hundred bytes,
 * its tree is git's. Null when it cannot (a tree id that is not sha1, a write that fails): the
 * caller then asks git.
 */
export function writeCommitObject(gitDir: string, tree: string, message: string, atMs: number): string | null {
  if (!/^[0-9a-f]{40}$/.test(tree)) return null;
  const who = `gaffer <gaffer@localhost> ${Math.floor(atMs / 1000)} +0000`;
  const body = Buffer.from(`tree ${tree}\nauthor ${who}\ncommitter ${who}\n\n${message}\n`, 'utf8');
  const object = Buffer.concat([Buffer.from(`commit ${body.length}\0`, 'utf8'), body]);
  const id = createHash('sha1').update(object).digest('hex');
  const dir = path.join(gitDir, 'objects', id.slice(0, 2));
  const file = path.join(dir, id.slice(2));
  // the same content under the same name: an object already there is this one
  if (statSync(file, { throwIfNoEntry: false }) !== undefined) return id;
  const tmp = path.join(dir, `tmp_obj_gaffer_${process.pid}_${written++}`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(tmp, deflateSync(object), { mode: 0o444 });
    renameSync(tmp, file);
    return id;
  } catch {
    rmSync(tmp, { force: true });
    return null;
  }
}
