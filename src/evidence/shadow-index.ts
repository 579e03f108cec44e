import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describeGitFailure, forEachNulPath, runGit, splitNul, type GitCallOptions } from './git.js';
import { removeFile } from './remove-file.js';

/** What the per-workspace shadow index holds, against the disk. */
export interface IndexState {
  /** Every path in the shadow index (null: not read, the caller knows it). */
  cached: Set<string> | null;
  /** Paths whose stat no longer matches the index (modified, type or mode changed, deleted). */
  dirty: Set<string>;
}

/** One `ls-files -t -c -m -d` over the shadow index: git's stat comparison in C, as `git status` does it. */
export async function readIndexState(base: string[], opts: GitCallOptions): Promise<IndexState> {
  const out = await runIndexGit([...base, 'ls-files', '-z', '-t', '-c', '-m', '-d'], opts);
  const cached = new Set<string>();
  const dirty = new Set<string>();
  forEachNulPath(
    out,
    () => 2,
    (p, start) => {
      // "H path" cached, "C path" modified, "R path" deleted (a dirty path also appears as H)
      const tag = out[start];
      if (tag === 67 || tag === 82) dirty.add(p);
      else cached.add(p);
    },
  );
  return { cached, dirty };
}

/**
 * Paths whose stat no longer matches the shadow index, when the caller already knows what the
 * index holds: `diff-files` prints only those (with threaded lstat), not every indexed path.
 */
export async function readDirtyPaths(base: string[], opts: GitCallOptions): Promise<Set<string>> {
  return new Set(splitNul(await runIndexGit([...base, 'diff-files', '-z', '--name-only'], opts)));
}

/** The shadow index could not be updated or written as a tree. */
export class ShadowIndexError extends Error {
  override readonly name = 'ShadowIndexError';
}

/**
 * Hashes paths into the shadow index with one `update-index --stdin`, streamed while the caller
 * still classifies paths (lstat in JS overlaps with hashing in git); not started at all when the
 * stream is empty. A path git cannot process (unreadable, or turned into a FIFO after we looked)
 * makes update-index die: it is dropped and the rest retried, so readability costs nothing up
 * front. Returns the dropped paths. A failing stream (the listing failed) is rethrown as is.
 *
 * `packed` (settled by the time the stream yields) says to write the objects into packs of
 * `gitDir`, git's bulk checkin, instead of a loose file each: for a new index of many files,
 * where creating 250,000 object files is most of the cost. Since git 2.37 `update-index` runs one
 * transaction, one pack, for all it reads (before, each file would be a pack of its own:
 * `isGitAtLeast`). The paths go in batches, a process and a pack each (`packedCheckinBatch`).
 */
export async function addToIndex(
  base: string[],
  opts: GitCallOptions,
  stream: AsyncIterable<string>,
  all: () => string[],
  packed: { gitDir: string; when: Promise<boolean> } | null = null,
): Promise<Set<string>> {
  const dropped = new Set<string>();
  const iterator = stream[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done === true) return dropped;
  if (packed !== null && (await packed.when)) {
    // every file of more than a byte goes through the bulk checkin (the content hashed is the same: git's conversions are off here)
    const args = [...base, '-c', 'core.bigFileThreshold=1', ...UPDATE_INDEX];
    let batches = 0;
    for (let batch = await takeBatch(iterator, first.value); batch !== ''; batches++) {
      // the next batch is classified while git hashes this one
      const next = takeBatch(iterator, '');
      next.catch(() => undefined);
      const paths = batch.split('\0').slice(0, -1);
      // a transaction git died in leaves its unfinished pack behind
      await runDropping(
        args,
        opts,
        batch,
        () => paths,
        dropped,
        () => removeUnfinishedPacks(packed.gitDir),
      );
      batch = await next;
    }
    // each batch after the first went into the split index's own part, which every later git call
    // reads and writes again (880 KB against 190 KB at 50,000 files: ~10 ms a checkpoint): one
    // shared index of them all is written now
    if (batches > 1) await runIndexGit([...base, 'update-index', '--split-index'], opts);
    return dropped;
  }
  async function* whole(): AsyncIterable<string> {
    yield first.value;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  await runDropping([...base, ...UPDATE_INDEX], opts, whole(), all, dropped, () => undefined);
  return dropped;
}

const UPDATE_INDEX = ['update-index', '-z', '--add', '--remove', '--replace', '--stdin'];

/**
 * Paths per `update-index` of a packed checkin. git's bulk checkin compares each new object with
 * every one its pack already holds (`already_written`, a list): 250,000 files in one pack took
 * ~60 s against ~40 s loose. A batch of 10,000 costs ~1/25 of that, and a process that reads and
 * writes the index.
 */
export const packedCheckinBatch = { paths: 10_000 };

/** The stream's next paths, `start` first, until a batch is full or the stream ends: '' when there are none. */
async function takeBatch(iterator: AsyncIterator<string>, start: string): Promise<string> {
  const parts = [start];
  let count = countNul(start);
  while (count < packedCheckinBatch.paths) {
    const next = await iterator.next();
    if (next.done === true) break;
    parts.push(next.value);
    count += countNul(next.value);
  }
  return parts.join('');
}

function countNul(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\0'); at >= 0; at = text.indexOf('\0', at + 1)) count++;
  return count;
}

/**
 * Runs an `update-index --stdin` of `input`; a path git cannot process is dropped (into `dropped`)
 * and the rest of `known()` given again, up to five times. `afterFailure` runs after each failed run.
 */
async function runDropping(
  args: string[],
  opts: GitCallOptions,
  input: string | AsyncIterable<string>,
  known: () => string[],
  dropped: Set<string>,
  afterFailure: () => void,
): Promise<void> {
  let result = await runGit(args, { ...opts, input });
  if (result.inputError !== undefined) throw result.inputError;
  for (let attempt = 0; result.exitCode !== 0; attempt++) {
    afterFailure();
    const paths = new Set(known());
    const bad = [...result.stderr.matchAll(/Unable to process path (.+)$/gm)]
      .map((m) => m[1] as string)
      .filter((p) => paths.has(p) && !dropped.has(p));
    if (bad.length === 0 || attempt >= 5) throw new ShadowIndexError(describeGitFailure(args, result));
    for (const p of bad) dropped.add(p);
    const remaining = [...paths].filter((p) => !dropped.has(p));
    result = await runGit(args, { ...opts, input: joinNul(remaining) });
  }
}

/** The `tmp_pack_*` and `tmp_idx_*` files of a shadow repository (its lock is held: no git writes there now). */
function removeUnfinishedPacks(gitDir: string): void {
  const packs = path.join(gitDir, 'objects', 'pack');
  let names: string[] = [];
  try {
    names = readdirSync(packs);
  } catch {
    return;
  }
  for (const name of names) if (/^tmp_(pack|idx)_/.test(name)) removeFile(path.join(packs, name));
}

/** Runs a git command on the shadow index; a failure means the index is unusable. */
async function runIndexGit(args: string[], opts: GitCallOptions): Promise<Buffer> {
  const result = await runGit(args, opts);
  if (result.exitCode !== 0) throw new ShadowIndexError(describeGitFailure(args, result));
  return result.stdout;
}

/** Removes paths from the shadow index whether or not they exist on disk. */
export async function removeFromIndex(base: string[], opts: GitCallOptions, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  const args = [...base, 'update-index', '-z', '--force-remove', '--stdin'];
  const result = await runGit(args, { ...opts, input: joinNul(paths) });
  if (result.exitCode !== 0) throw new ShadowIndexError(describeGitFailure(args, result));
}

/** NUL-terminated paths, the form `--stdin -z` reads. */
export function joinNul(paths: string[]): string {
  return paths.length === 0 ? '' : `${paths.join('\0')}\0`;
}
