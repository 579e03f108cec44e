import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describeGitFailure, runGit, runGitOk, splitNul, type GitCallOptions } from './git.js';
import { findRepoTop, listWorkspacePaths } from './listing.js';
import { writeManifest } from './manifest.js';
import { isInExcludedDir, sortPaths, workspaceHash } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import { emptyIndexFile, ensureShadowRepo, shadowIndexFile } from './shadow-repo.js';
import type { Snapshot } from './types.js';
import { classifyPaths, scanSpecialFiles, type StatFacts } from './walk.js';

export interface CheckpointInput {
  workspace: string;
  gitDir: string;
  jobId: string;
  label: string;
  alwaysInclude: string[];
  sizeCapBytes: number;
  timeoutMs: number;
  /** Absolute paths never snapshotted (gaffer's data dir when inside the workspace). */
  skipAbs: string[];
}

/** Where a checkpoint's large files (recorded by stat) are kept. */
export function largeFileManifestPath(gitDir: string, jobId: string, label: string): string {
  return path.join(gitDir, 'manifests', jobId, `${label}.json`);
}

/** The ref that keeps a checkpoint reachable (spec 03). */
export function checkpointRef(workspace: string, jobId: string, label: string): string {
  return `refs/gaffer/${workspaceHash(workspace)}/${jobId}/${label}`;
}

/**
 * Takes a content-exact checkpoint of the workspace into its shadow repository: the equivalent
 * of `add -A` + `write-tree` + `commit-tree`, built on `update-index` so the per-workspace index's
 * stat cache only re-hashes what changed. Throws when the shadow repository fails.
 */
export function takeCheckpoint(input: CheckpointInput): Promise<Snapshot> {
  return withRepoLock(input.gitDir, input.timeoutMs, async () => {
    await ensureShadowRepo(input.gitDir, input.timeoutMs);
    try {
      return await checkpointOnce(input);
    } catch (err) {
      if (!(err instanceof ShadowIndexError)) throw err;
      // A damaged index (crash mid-write, objects pruned under it) is rebuilt from scratch once.
      await fs.rm(shadowIndexFile(input.gitDir), { force: true });
      return await checkpointOnce(input);
    }
  });
}

async function checkpointOnce(input: CheckpointInput): Promise<Snapshot> {
  const { workspace, gitDir, timeoutMs } = input;
  const shadow = (extra: Partial<GitCallOptions> = {}): GitCallOptions => ({
    cwd: workspace,
    timeoutMs,
    env: { GIT_INDEX_FILE: shadowIndexFile(gitDir) },
    ...extra,
  });
  const base = [`--git-dir=${gitDir}`, `--work-tree=${workspace}`];

  const listed = listWorkspacePaths(workspace, input.alwaysInclude, { gitDir, timeoutMs, skipAbs: input.skipAbs });
  const [listing, indexed, specials] = await Promise.all([
    listed,
    readIndexState(base, shadow()),
    listed.then((l) => scanSpecialFiles(workspace, l.paths, input.skipAbs)),
  ]);

  const wanted = new Set(listing.paths);
  const removals: string[] = [];
  for (const p of indexed.cached) if (!wanted.has(p)) removals.push(p);
  const candidates: string[] = [];
  for (const p of wanted) if (!indexed.cached.has(p) || indexed.dirty.has(p)) candidates.push(p);

  const kinds = await classifyPaths(workspace, candidates, input.sizeCapBytes);
  const additions: string[] = [];
  const large = new Map<string, StatFacts>();
  const skipped = new Set<string>([...listing.skipped]);
  for (const [p, kind] of kinds) {
    if (kind.kind === 'content') {
      additions.push(p);
      continue;
    }
    if (kind.kind === 'large') large.set(p, kind.facts);
    if (kind.kind === 'skipped') skipped.add(p);
    if (indexed.cached.has(p)) removals.push(p);
  }

  let tree: string;
  try {
    for (const p of await addToIndex(base, shadow, additions)) {
      skipped.add(p);
      if (indexed.cached.has(p)) removals.push(p);
    }
    // after the additions: `--replace` already dropped entries a new path conflicts with
    if (removals.length > 0) {
      await runGitOk([...base, 'update-index', '-z', '--force-remove', '--stdin'], shadow({ input: joinNul(removals) }));
    }
    tree = (await runGitOk([...base, 'write-tree'], shadow())).toString().trim();
  } catch (err) {
    throw new ShadowIndexError(err instanceof Error ? err.message : String(err));
  }
  const takenAtMs = Date.now();
  const date = `${Math.floor(takenAtMs / 1000)} +0000`;
  const commit = (
    await runGitOk(
      [...base, 'commit-tree', tree, '-m', `gaffer ${input.jobId} ${input.label}`],
      shadow({
        env: {
          GIT_INDEX_FILE: shadowIndexFile(gitDir),
          GIT_AUTHOR_NAME: 'gaffer',
          GIT_AUTHOR_EMAIL: 'gaffer@localhost',
          GIT_AUTHOR_DATE: date,
          GIT_COMMITTER_NAME: 'gaffer',
          GIT_COMMITTER_EMAIL: 'gaffer@localhost',
          GIT_COMMITTER_DATE: date,
        },
      }),
    )
  )
    .toString()
    .trim();
  const ref = checkpointRef(workspace, input.jobId, input.label);
  await runGitOk([...base, 'update-ref', ref, commit], shadow());

  for (const p of await unignoredSpecials(workspace, gitDir, specials, timeoutMs)) skipped.add(p);

  const manifestFile = largeFileManifestPath(gitDir, input.jobId, input.label);
  if (large.size > 0) {
    await writeManifest(manifestFile, { entries: large, truncated: false, skipped: [], takenAtMs });
  } else {
    await fs.rm(manifestFile, { force: true });
  }
  const snapshot: Snapshot = {
    source: 'checkpoint',
    id: commit,
    workspace,
    gitDir,
    ref,
    skipped: sortPaths(skipped),
    truncated: false,
    largeFilesByStat: large.size > 0,
    takenAtMs,
  };
  if (large.size > 0) snapshot.manifestFile = manifestFile;
  return snapshot;
}

/** The shadow index could not be updated or written as a tree. */
class ShadowIndexError extends Error {
  override readonly name = 'ShadowIndexError';
}

interface IndexState {
  /** Every path in the shadow index. */
  cached: Set<string>;
  /** Paths whose stat no longer matches the index (modified, type or mode changed, deleted). */
  dirty: Set<string>;
}

/** One `ls-files -t -c -m -d` over the shadow index: git's stat comparison in C, like `git status`. */
async function readIndexState(base: string[], opts: GitCallOptions): Promise<IndexState> {
  const out = await runGitOk([...base, 'ls-files', '-z', '-t', '-c', '-m', '-d'], opts);
  const cached = new Set<string>();
  const dirty = new Set<string>();
  for (const entry of splitNul(out)) {
    const tag = entry[0];
    const p = entry.slice(2);
    if (tag === 'C' || tag === 'R') dirty.add(p);
    else cached.add(p);
  }
  for (const p of dirty) cached.add(p);
  return { cached, dirty };
}

/**
 * Hashes paths into the shadow index. A path that git cannot process (unreadable, or turned into
 * a FIFO after we looked) makes update-index die; it is dropped, reported as skipped, and the rest
 * retried. Checking readability up front would cost an access() per file on every first checkpoint.
 */
async function addToIndex(base: string[], shadow: (extra?: Partial<GitCallOptions>) => GitCallOptions, paths: string[]): Promise<string[]> {
  const dropped: string[] = [];
  let remaining = paths;
  for (let attempt = 0; remaining.length > 0; attempt++) {
    const args = [...base, 'update-index', '-z', '--add', '--remove', '--replace', '--stdin'];
    const result = await runGit(args, shadow({ input: joinNul(remaining) }));
    if (result.exitCode === 0) return dropped;
    const bad = [...result.stderr.matchAll(/Unable to process path (.+)$/gm)].map((m) => m[1] as string);
    const badSet = new Set(bad.filter((p) => remaining.includes(p)));
    if (badSet.size === 0 || attempt >= 5) throw new Error(describeGitFailure(args, result));
    dropped.push(...badSet);
    remaining = remaining.filter((p) => !badSet.has(p));
  }
  return dropped;
}

/** Special files the workspace's ignore rules do not exclude (ignored ones are not reported). */
async function unignoredSpecials(workspace: string, gitDir: string, specials: string[], timeoutMs: number): Promise<string[]> {
  const candidates = specials.filter((p) => !isInExcludedDir(p));
  if (candidates.length === 0) return [];
  const top = findRepoTop(workspace);
  const args =
    top === null
      ? [`--git-dir=${gitDir}`, `--work-tree=${workspace}`, 'check-ignore', '-z', '--stdin']
      : [`--git-dir=${path.join(top, '.git')}`, `--work-tree=${top}`, '--no-optional-locks', 'check-ignore', '-z', '--stdin'];
  const env: Record<string, string> = top === null ? { GIT_INDEX_FILE: emptyIndexFile(gitDir) } : {};
  const result = await runGit(args, { cwd: workspace, timeoutMs, env, input: joinNul(candidates) });
  if (result.exitCode !== 0 && result.exitCode !== 1) return candidates;
  const ignored = new Set(splitNul(result.stdout));
  return candidates.filter((p) => !ignored.has(p));
}

function joinNul(paths: string[]): string {
  return paths.length === 0 ? '' : `${paths.join('\0')}\0`;
}
