import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readTextOrNull } from './read-text.js';

/** Byte-exact storage: no eol, filter, ident or encoding rule of the workspace applies (spec 03). */
const ATTRIBUTES = '* -text -eol -filter -ident -working-tree-encoding -export-subst\n';

/** Config of every shadow repository: nothing runs, nothing rewrites content, no gc during a job. */
const CONFIG: ReadonlyArray<[string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.autocrlf', 'false'],
  ['core.safecrlf', 'false'],
  ['core.symlinks', 'true'],
  ['core.fileMode', 'true'],
  ['core.quotePath', 'false'],
  ['core.logAllRefUpdates', 'false'],
  ['core.fsmonitor', 'false'],
  // `keep`: the status look makes the index's untracked cache (status-look.ts) and every other
  // command leaves it as it is (`false` would drop it at each index write)
  ['core.untrackedCache', 'keep'],
  // re-checkpoints rewrite only a small delta of the index, not all 50,000 entries, twice
  ['core.splitIndex', 'true'],
  // only gaffer-index uses the shared index files: an old one is garbage at once
  ['splitIndex.sharedIndexExpire', 'now'],
  // paths prefix-compressed: a 50,000-file index is 15% smaller, read and written faster
  ['index.version', '4'],
  ['gc.auto', '0'],
  ['gc.autoDetach', 'false'],
  ['maintenance.auto', 'false'],
];

/** CONFIG in git's config-file syntax, one section per key (a later entry overrides `init`'s). */
const CONFIG_BLOCK = CONFIG.map(([key, value]) => {
  const dot = key.indexOf('.');
  return `[${key.slice(0, dot)}]\n\t${key.slice(dot + 1)} = ${value}\n`;
}).join('');

/** Marker written once the repository is fully configured (a crash mid-setup redoes it). */
const READY = 'gaffer-ready';
/** Bumped whenever CONFIG changes, so existing shadow repositories are configured again. */
const CONFIG_VERSION = '4';

/** The per-workspace index file kept between jobs (its stat cache makes re-checkpoints incremental). */
export function shadowIndexFile(gitDir: string): string {
  return path.join(gitDir, 'gaffer-index');
}

/** An index path that never exists: listing with it makes every non-ignored file "untracked". */
export function emptyIndexFile(gitDir: string): string {
  return path.join(gitDir, 'gaffer-empty-index');
}

/** Shadow repositories this process found ready, by the identity of their folder (a pruned and recreated one is another). */
const readyHere = new Map<string, string>();

function folderIdentity(dir: string): string | null {
  const st = statSync(dir, { throwIfNoEntry: false });
  return st === undefined ? null : `${st.dev}:${st.ino}`;
}

/**
 * Creates and configures the bare shadow repository when it is not ready yet. Small synchronous
 * calls: a worktree fan-out makes one per task, and ten round trips through libuv's pool cost the
 * engine's thread more than the ten system calls.
 */
export function ensureShadowRepo(gitDir: string): void {
  const identity = folderIdentity(gitDir);
  if (identity !== null && readyHere.get(gitDir) === identity) return;
  const ready = readTextOrNull(path.join(gitDir, READY));
  if (ready === CONFIG_VERSION) {
    writeAttributes(gitDir);
    if (identity !== null) readyHere.set(gitDir, identity);
    return;
  }
  // the layout `git init --bare --template=` makes (gitrepository-layout), written here: no git
  // process for it, nor one `git config` per key — a new workspace, and every task of a worktree
  // fan-out, starts a shadow repository
  for (const dir of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags'])
    mkdirSync(path.join(gitDir, dir), { recursive: true });
  if (ready === null) writeFileSync(path.join(gitDir, 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(path.join(gitDir, 'config'), `[core]\n\trepositoryformatversion = 0\n\tbare = true\n${CONFIG_BLOCK}`);
  writeAttributes(gitDir);
  writeFileSync(path.join(gitDir, READY), CONFIG_VERSION);
}

function writeAttributes(gitDir: string): void {
  const file = path.join(gitDir, 'info', 'attributes');
  if (readTextOrNull(file) === ATTRIBUTES) return;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, ATTRIBUTES);
}
