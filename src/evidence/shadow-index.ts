import { describeGitFailure, forEachNulPath, runGit, splitNul, type GitCallOptions } from './git.js';

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
 */
export async function addToIndex(
  base: string[],
  opts: GitCallOptions,
  stream: AsyncIterable<string>,
  all: () => string[],
): Promise<Set<string>> {
  const dropped = new Set<string>();
  const iterator = stream[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done === true) return dropped;
  async function* whole(): AsyncIterable<string> {
    yield first.value;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  const args = [...base, 'update-index', '-z', '--add', '--remove', '--replace', '--stdin'];
  let result = await runGit(args, { ...opts, input: whole() });
  if (result.inputError !== undefined) throw result.inputError;
  for (let attempt = 0; result.exitCode !== 0; attempt++) {
    const known = new Set(all());
    const bad = [...result.stderr.matchAll(/Unable to process path (.+)$/gm)]
      .map((m) => m[1] as string)
      .filter((p) => known.has(p) && !dropped.has(p));
    if (bad.length === 0 || attempt >= 5) throw new ShadowIndexError(describeGitFailure(args, result));
    for (const p of bad) dropped.add(p);
    const remaining = [...known].filter((p) => !dropped.has(p));
    result = await runGit(args, { ...opts, input: joinNul(remaining) });
  }
  return dropped;
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
