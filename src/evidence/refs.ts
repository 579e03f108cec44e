import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runGitOk, type GitCallOptions } from './git.js';

/**
 * Points a ref of a shadow repository at an object. With git's `files` ref storage (every shadow
 * repository git ≤ 2.x creates) this writes the loose ref file the way git does — `<ref>.lock`,
 * then a rename over the ref — which saves a git process per checkpoint; git reads it like any
 * loose ref (it wins over a packed one). Any other storage (reftable) goes through `update-ref`.
 * The caller holds the repository lock, so no other writer can race the rename.
 */
export async function writeRef(gitDir: string, ref: string, objectId: string, opts: GitCallOptions): Promise<void> {
  if (!/^refs\/[A-Za-z0-9._/-]+$/.test(ref) || ref.includes('..') || ref.endsWith('.lock')) {
    throw new Error(`invalid ref name ${ref}`);
  }
  if (existsSync(path.join(gitDir, 'reftable'))) {
    await runGitOk([`--git-dir=${gitDir}`, 'update-ref', ref, objectId], opts);
    return;
  }
  // three small synchronous calls cost less than three round trips through libuv's thread pool
  const file = path.join(gitDir, ...ref.split('/'));
  const lock = `${file}.lock`;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(lock, `${objectId}\n`);
  renameSync(lock, file);
}
