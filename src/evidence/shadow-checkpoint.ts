import { promises as fs } from 'node:fs';
import path from 'node:path';
import { runGit, runGitOk, splitNul, type GitCallOptions } from './git.js';
import { findRepoTop, isSameListing, listWorkspacePaths } from './listing.js';
import { writeManifest } from './manifest.js';
import { isInExcludedDir, sortPaths, workspaceHash } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import { addToIndex, joinNul, readDirtyPaths, readIndexState, removeFromIndex, ShadowIndexError, type IndexState } from './shadow-index.js';
import { emptyIndexFile, ensureShadowRepo, shadowIndexFile } from './shadow-repo.js';
import type { Snapshot } from './types.js';
import { foldersOf, scanSpecialFiles } from './special-files.js';
import { classifyPath, type StatFacts } from './walk.js';
import { fileSignature, forgetWarmState, recallWarmState, rememberWarmState, type WarmState } from './warm-state.js';

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

/** Paths classified per chunk streamed to update-index. */
const CHUNK = 2000;

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
  const indexFile = shadowIndexFile(gitDir);
  const opts: GitCallOptions = { cwd: workspace, timeoutMs, env: { GIT_INDEX_FILE: indexFile } };
  const base = [`--git-dir=${gitDir}`, `--work-tree=${workspace}`];
  // warm: this process wrote the index last, so it knows what the index holds without reading it
  const warm = recallWarmState(gitDir, indexFile);
  forgetWarmState(gitDir);

  const ctx = { gitDir, timeoutMs, skipAbs: input.skipAbs };
  const planned = listWorkspacePaths(workspace, input.alwaysInclude, ctx, warm?.listing).then((listing) => {
    const unchanged = warm !== null && isSameListing(listing, warm.listing);
    const wanted = unchanged ? warm.wanted : listing.paths();
    return { listing, unchanged, wanted, folders: unchanged ? warm.folders : foldersOf(wanted) };
  });
  const [plan, indexed, specials] = await Promise.all([
    planned,
    warm === null ? readIndexState(base, opts) : readDirtyPaths(base, opts).then((dirty) => ({ cached: null, dirty })),
    // warm: scan the folders of last time right away, and again only if the listing changed
    (warm === null ? planned : Promise.resolve({ folders: warm.folders, unchanged: true })).then(async (p) => {
      const dirCache = path.join(gitDir, 'gaffer-dirs.json');
      const found = await scanSpecialFiles(workspace, p.folders, input.skipAbs, dirCache);
      const now = await planned;
      return now.unchanged || warm === null ? found : scanSpecialFiles(workspace, now.folders, input.skipAbs, dirCache);
    }),
  ]);
  const { wanted, listing } = plan;
  const { candidates, removals, inIndex } = planIndexUpdate(wanted, plan.unchanged, indexed, warm);

  const additions: string[] = [];
  const large = new Map<string, StatFacts>();
  const skipped = new Set<string>(listing.skipped);
  // lstat each new or stat-dirty path: content goes to update-index as it is found, files over
  // the cap to the manifest, special files to `skipped`; a path leaving the index is removed
  async function* contentPaths(): AsyncIterable<string> {
    for (let i = 0; i < candidates.length; i += CHUNK) {
      const chunk: string[] = [];
      for (const p of candidates.slice(i, i + CHUNK)) {
        const kind = classifyPath(workspace, p, input.sizeCapBytes);
        if (kind.kind === 'content') {
          chunk.push(p);
          continue;
        }
        if (kind.kind === 'large') large.set(p, kind.facts);
        if (kind.kind === 'skipped') skipped.add(p);
        if (inIndex(p)) removals.push(p);
      }
      additions.push(...chunk);
      if (chunk.length > 0) yield joinNul(chunk);
    }
  }

  let tree: string;
  const added = new Set<string>();
  try {
    if (candidates.length > 0) {
      const dropped = new Set(await addToIndex(base, opts, contentPaths(), () => additions));
      for (const p of additions) if (!dropped.has(p)) added.add(p);
      for (const p of dropped) {
        skipped.add(p);
        if (inIndex(p)) removals.push(p);
      }
    }
    // after the additions: `--replace` already dropped entries a new path conflicts with
    await removeFromIndex(base, opts, removals);
    // an index nothing was written to since the last checkpoint still holds the same tree
    tree = warm !== null && fileSignature(indexFile) === warm.indexSignature ? warm.tree : (await runGitOk([...base, 'write-tree'], opts)).toString().trim();
  } catch (err) {
    if (err instanceof ShadowIndexError) throw err;
    throw new ShadowIndexError(err instanceof Error ? err.message : String(err));
  }
  const signature = fileSignature(indexFile);
  if (signature !== null) {
    const outside = new Set(candidates.filter((p) => !added.has(p)));
    rememberWarmState(gitDir, { indexSignature: signature, tree, listing, wanted, folders: plan.folders, outside });
  }

  const takenAtMs = Date.now();
  const commit = await commitTree(base, opts, tree, `gaffer ${input.jobId} ${input.label}`, takenAtMs);
  const ref = checkpointRef(workspace, input.jobId, input.label);
  await runGitOk([...base, 'update-ref', ref, commit], opts);

  for (const p of await unignoredSpecials(workspace, gitDir, specials, timeoutMs)) skipped.add(p);
  const manifestFile = largeFileManifestPath(gitDir, input.jobId, input.label);
  if (large.size > 0) await writeManifest(manifestFile, { entries: large, truncated: false, skipped: [], takenAtMs });
  else await fs.rm(manifestFile, { force: true });

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

/**
 * Which paths to look at (new in the listing, or stat-dirty) and which to drop from the index
 * (no longer listed). With the listing unchanged since a warm checkpoint, only the stat-dirty
 * paths and those left out of the index last time.
 */
function planIndexUpdate(
  wanted: Set<string>,
  unchanged: boolean,
  indexed: IndexState,
  warm: WarmState | null,
): { candidates: string[]; removals: string[]; inIndex: (p: string) => boolean } {
  const inIndex = (p: string): boolean =>
    indexed.cached !== null ? indexed.cached.has(p) : warm !== null && warm.wanted.has(p) && !warm.outside.has(p);
  const candidates: string[] = [];
  const removals: string[] = [];
  if (unchanged && warm !== null) {
    for (const p of new Set([...indexed.dirty, ...warm.outside])) if (wanted.has(p)) candidates.push(p);
  } else {
    for (const p of indexed.cached ?? warm?.wanted ?? []) if (inIndex(p) && !wanted.has(p)) removals.push(p);
    for (const p of wanted) if (!inIndex(p) || indexed.dirty.has(p)) candidates.push(p);
  }
  return { candidates, removals, inIndex };
}

/** A parentless commit of the tree with gaffer as author and committer. */
async function commitTree(base: string[], opts: GitCallOptions, tree: string, message: string, atMs: number): Promise<string> {
  const date = `${Math.floor(atMs / 1000)} +0000`;
  const env = {
    ...opts.env,
    GIT_AUTHOR_NAME: 'gaffer',
    GIT_AUTHOR_EMAIL: 'gaffer@localhost',
    GIT_AUTHOR_DATE: date,
    GIT_COMMITTER_NAME: 'gaffer',
    GIT_COMMITTER_EMAIL: 'gaffer@localhost',
    GIT_COMMITTER_DATE: date,
  };
  const out = await runGitOk([...base, 'commit-tree', tree, '-m', message], { ...opts, env });
  return out.toString().trim();
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
