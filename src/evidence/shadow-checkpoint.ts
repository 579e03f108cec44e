import { existsSync, lstatSync, promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { writeCommitObject } from './commit-object.js';
import { describeGitFailure, isGitAtLeast, runGit, runGitOk, splitNul, type GitCallOptions } from './git.js';
import { writeRef } from './refs.js';
import { removeFile } from './remove-file.js';
import { IndexUpdate, type ListingPlan } from './index-update.js';
import { rememberTreeDiff } from './known-diffs.js';
import {
  changesKey,
  changesOf,
  deltaBetween,
  fitsInThread,
  hashFiles,
  writeChangedTree,
  type IndexEntry,
  type KnownIndex,
} from './known-index.js';
import { findRepoTop, isSameListing, listingMemo, listWorkspacePaths, type Listing } from './listing.js';
import { writeManifest } from './manifest.js';
import { isInExcludedDir, sortPaths, workspaceHash } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import {
  differOnlyInIndex,
  indexSignatureOf,
  pathSetRules,
  quickLook,
  trackedDigest,
  withChange,
  type PathSetRules,
  type QuickLook,
} from './quick-look.js';
import {
  addToIndex,
  joinNul,
  readDirtyPaths,
  readIndexState,
  removeFromIndex,
  ShadowIndexError,
  type IndexState,
} from './shadow-index.js';
import { emptyIndexFile, ensureShadowRepo, shadowIndexFile } from './shadow-repo.js';
import { noteCheckout, seedFromCheckout, type IndexSeed } from './seed-index.js';
import { foldersOf, scanSpecialFiles } from './special-files.js';
import {
  findHiddenByIgnore,
  forgetIgnoreFiles,
  ignoreFilesOf,
  noteJudge,
  readIgnoreRules,
  recallJudge,
  sameRules,
} from './ignore-judge.js';
import type { Snapshot } from '../domain/snapshot.js';
import { isQuotedPath, unquotePathBytes } from '../domain/escaped-path.js';
import {
  fileSignature,
  forgetWarmState,
  recallWarmState,
  rememberWarmState,
  signatureMtimeMs,
  type TrackedDigest,
  type WarmState,
} from './warm-state.js';

/** `SnapshotOptions` resolved for a checkpoint. */
export interface CheckpointInput {
  /** Absolute workspace path. */
  workspace: string;
  /** The workspace's shadow repository. */
  gitDir: string;
  /** Job id (ref name component). */
  jobId: string;
  /** Ref label: `pre`, `post`, … */
  label: string;
  /** Paths included even when ignored or excluded. */
  alwaysInclude: string[];
  /** Files above this are recorded by stat. */
  sizeCapBytes: number;
  /** Per git call (and to wait for the repository lock). */
  timeoutMs: number;
  /** Absolute paths never snapshotted (gaffer's data dir when inside the workspace). */
  skipAbs: string[];
  /** The workspace is gaffer's fresh checkout of this tree, its index as checked out (seed-index.ts `seedFromCheckout`). */
  checkout?: IndexSeed;
  /** The checkpoint whose ignore rules judge this one (the one it will be compared with, ignore-judge.ts). */
  judge?: Snapshot;
}

/** The path set a checkpoint holds, and how it was found. */
interface Plan extends ListingPlan {
  /** The full listing; null when the set was derived from the shadow index (quick-look.ts). */
  listing: Listing | null;
  /** The folders holding the wanted paths. */
  folders: Set<string>;
  /** The folders are the warm checkpoint's. */
  sameFolders: boolean;
  /** Folders the quick look's git could not open (a full listing keeps its own in `listing.skipped`). */
  unopened?: string[];
  /** Paths gone since the last full listing (quick-look.ts); none after a listing. */
  gone?: Set<string>;
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
    ensureShadowRepo(input.gitDir);
    const checkout = input.checkout
      ? { gitDir: input.gitDir, workspace: input.workspace, alwaysInclude: input.alwaysInclude, seed: input.checkout }
      : null;
    if (checkout) seedFromCheckout(checkout);
    const once = async (which: CheckpointInput): Promise<Snapshot> => {
      try {
        return await checkpointOnce(which);
      } catch (err) {
        if (!(err instanceof ShadowIndexError)) throw err;
        // A damaged index (crash mid-write, objects pruned under it) is rebuilt from scratch once.
        removeFile(shadowIndexFile(which.gitDir));
        return checkpointOnce(which);
      }
    };
    let snapshot = await once(input);
    if (checkout) noteCheckout(checkout, snapshot);
    snapshot = await judgedByItsCheckpoint(input, snapshot, once);
    return snapshot;
  });
}

/**
 * Whether the path set can be derived from the warm checkpoint's (quick-look.ts): the same rules,
 * or rules that differ only by a rewritten repository index (the user committed) whose tracked
 * entries are the same. `tracked` is what to note for the next checkpoint, when known here.
 */
async function sameRulesAsWarm(
  workspace: string,
  warm: WarmState | null,
  rules: PathSetRules | null,
  opts: GitCallOptions,
): Promise<{ same: boolean; tracked?: TrackedDigest | null }> {
  if (warm === null || rules === null || warm.rules === null) return { same: false };
  if (warm.rules === rules.key) return { same: true, tracked: warm.tracked ?? null };
  if (!mayHoldAfterCommit(warm, rules)) return { same: false };
  const now = await trackedAt(workspace, rules, opts);
  return { same: now !== null && now.digest === warm.tracked?.digest, tracked: now };
}

/** The rules differ only by the repository's index, whose tracked entries the warm checkpoint noted. */
function mayHoldAfterCommit(warm: WarmState, rules: PathSetRules): boolean {
  return warm.rules !== null && warm.tracked != null && differOnlyInIndex(warm.rules, rules.key, warm.tracked);
}

/** The repository's tracked entries, when git read the very index `rules` were taken with. */
async function trackedAt(
  workspace: string,
  rules: PathSetRules | null,
  opts: GitCallOptions,
): Promise<TrackedDigest | null> {
  const signature = rules === null ? null : indexSignatureOf(rules.key);
  if (signature === null) return null;
  const now = await trackedDigest(workspace, { cwd: workspace, timeoutMs: opts.timeoutMs });
  return now !== null && now.signature === signature ? now : null;
}

/**
 * A new index of at least this many files is hashed into packs (shadow-index.ts `addToIndex`):
 * creating a loose object file each is most of a first checkpoint (250,000 files here: 21.6 s
 * packed, ~40 s loose, `git add -A` 24–56 s). Fewer stay loose, as every later checkpoint's
 * objects do: packs each checkpoint would pile up, and gc.auto=0 never merges them.
 */
export const packedCheckinLimits = { minPaths: 5_000 };

/** How many hidden files a snapshot names (Snapshot.hiddenByIgnore). */
const HIDDEN_NAMES_KEPT = 1_000;

/**
 * The path set of each shadow repository's latest checkpoint in this process, by its commit: the
 * commit's tree holds no path outside it (a checkpoint's index drops every path it no longer
 * wants), so asking git whether it holds one of those is answered here (`isNotInCheckpoint`).
 */
const latestPathSets = new Map<string, { commit: string; wanted: ReadonlySet<string> }>();
/** Repositories whose latest path set is kept (the oldest is let go first: its job has read it). */
const PATH_SETS_KEPT = 16;

function rememberPathSet(gitDir: string, commit: string, wanted: ReadonlySet<string>): void {
  latestPathSets.delete(gitDir);
  latestPathSets.set(gitDir, { commit, wanted });
  if (latestPathSets.size > PATH_SETS_KEPT) latestPathSets.delete(latestPathSets.keys().next().value as string);
}

/**
 * True when the checkpoint `commit` of `gitDir` is known, without git, not to hold `rel`: the
 * latest checkpoint this process took there was that commit and did not want the path. False
 * when unknown (git is asked).
 */
export function isNotInCheckpoint(gitDir: string, commit: string, rel: string): boolean {
  const known = latestPathSets.get(gitDir);
  return known !== undefined && known.commit === commit && !known.wanted.has(rel);
}

/** The `.gitignore` files each checkpoint of this process listed (finishCheckpoint). */
const listedIgnoreFiles = new WeakMap<Snapshot, string[]>();

/**
 * A checkpoint taken on its own keeps its ignore rules; one compared with a checkpoint is judged by
 * that checkpoint's rules (ignore-judge.ts): when they differ, the files the present rules hide and
 * the checkpoint's would list are taken in too, and named.
 */
async function judgedByItsCheckpoint(
  input: CheckpointInput,
  snapshot: Snapshot,
  once: (which: CheckpointInput) => Promise<Snapshot>,
): Promise<Snapshot> {
  const now = readIgnoreRules(input.workspace, listedIgnoreFiles.get(snapshot) ?? []);
  const judge = input.judge;
  if (judge === undefined || judge.source !== 'checkpoint' || judge.gitDir === undefined) {
    noteJudge(input.workspace, snapshot.id, now);
    return snapshot;
  }
  const rules = recallJudge(judge.workspace, judge.id);
  if (rules !== null && sameRules(rules, now)) return snapshot;
  const hidden = await findHiddenByIgnore({
    workspace: input.workspace,
    judge: { gitDir: judge.gitDir, id: judge.id },
    excludes: rules?.excludes ?? null,
    gitDir: input.gitDir,
    timeoutMs: input.timeoutMs,
    skipAbs: input.skipAbs,
  });
  if (hidden.length === 0) return snapshot;
  const again = await once({ ...input, alwaysInclude: [...input.alwaysInclude, ...hidden] });
  // all of them are in the snapshot; the job row keeps the first names (a test file among the rest is one by its name anyway)
  return { ...again, hiddenByIgnore: sortPaths(hidden).slice(0, HIDDEN_NAMES_KEPT) };
}

async function checkpointOnce(input: CheckpointInput): Promise<Snapshot> {
  const { workspace, gitDir, timeoutMs } = input;
  const indexFile = shadowIndexFile(gitDir);
  const opts: GitCallOptions = { cwd: workspace, timeoutMs, env: { GIT_INDEX_FILE: indexFile } };
  const base = [`--git-dir=${gitDir}`, `--work-tree=${workspace}`];
  // warm: this process wrote the index last, so it knows what the index holds without reading it
  const warm = recallWarmState(gitDir, indexFile);
  forgetWarmState(gitDir);
  if (warm !== null) await refreshRacyEntries(warm, indexFile, base, opts);

  const rules = pathSetRules(workspace, input.alwaysInclude);
  // warm: the folders of last time are scanned for special files from the loop's next turn, while
  // the look's git runs
  const warmSpecials =
    warm === null
      ? null
      : yieldToLoop().then(() => scanSpecialFiles(workspace, warm.folders, input.skipAbs, dirCacheOf(gitDir)));
  // the quick look is read-only: it runs while git says whether the rules still hold, and is
  // dropped when they do not
  let same: Awaited<ReturnType<typeof sameRulesAsWarm>>;
  let looked: QuickLook | null;
  try {
    [same, looked] = await Promise.all([
      sameRulesAsWarm(workspace, warm, rules, opts),
      warm !== null && rules !== null && (warm.rules === rules.key || mayHoldAfterCommit(warm, rules))
        ? quickLook(workspace, gitDir, base, opts, warm, rules, input.skipAbs)
        : null,
    ]);
  } catch (err) {
    // the scan writes the folder cache: never once the repository's lock is let go
    await warmSpecials?.catch(() => undefined);
    throw err;
  }
  const quick = same.same ? looked : null;
  // a listing reads the repository's index: what it tracks is noted beside, for the next checkpoint
  const tracked =
    same.tracked !== undefined ? Promise.resolve(same.tracked) : trackedAt(workspace, rules, opts).catch(() => null);
  let planned: Promise<Plan>;
  let indexedAtStart: Promise<IndexState>;
  let packed: Promise<boolean> = Promise.resolve(false);
  // what the warm checkpoint's path set held (the index's, but for what it left outside)
  let warmHad: ((p: string) => boolean) | null = null;
  if (quick !== null && warm !== null) {
    // the warm state was let go above, and the set of its commit is let go here: its set becomes
    // this one's — but a known index keeps its own (the index is not written, its warm state stays)
    latestPathSets.delete(gitDir);
    forgetIgnoreFiles(warm.wanted);
    const { wanted, had } = withChange(warm.known !== undefined ? new Set(warm.wanted) : warm.wanted, quick.change);
    warmHad = had;
    const { delta, sameFolders, unopened, gone } = quick;
    const folders = sameFolders ? warm.folders : foldersOf(wanted);
    planned = Promise.resolve({ listing: null, unchanged: false, wanted, delta, folders, sameFolders, unopened, gone });
    indexedAtStart = Promise.resolve({ cached: null, dirty: quick.dirty });
  } else {
    const ctx = { gitDir, timeoutMs, skipAbs: input.skipAbs };
    planned = listWorkspacePaths(workspace, input.alwaysInclude, ctx, warm?.listing ?? undefined).then((listing) => {
      const same = warm?.listing != null && isSameListing(listing, warm.listing) ? warm : null;
      const wanted = same?.wanted ?? listing.paths();
      return {
        listing,
        unchanged: same !== null,
        wanted,
        folders: same?.folders ?? foldersOf(wanted),
        sameFolders: same !== null,
      };
    });
    // a new shadow repository has no index yet: it holds nothing, and no git process need say so
    const newIndex = warm === null && !existsSync(indexFile);
    indexedAtStart =
      warm !== null
        ? readDirtyPaths(base, opts).then((dirty) => ({ cached: null, dirty }))
        : newIndex
          ? Promise.resolve({ cached: new Set<string>(), dirty: new Set<string>() })
          : readIndexState(base, opts);
    // every listed file is hashed: many go into packs (a failed listing fails the stream: it is news there)
    if (newIndex)
      packed = planned
        .then(async (plan) => plan.wanted.size >= packedCheckinLimits.minPaths && (await isGitAtLeast(2, 37)))
        .catch(() => false);
  }
  const specialsFound = findSpecials(workspace, gitDir, input.skipAbs, warmSpecials, planned);
  // each is awaited below, unless an earlier step fails: then their failure is not news
  for (const p of [planned, indexedAtStart, specialsFound]) p.catch(() => undefined);

  const update = new IndexUpdate(workspace, input.sizeCapBytes, await indexedAtStart, warm, warmHad);
  // a known index (a seed git has not written since) and a quick look: the few changes are hashed here and the tree built here, the index left as it is
  const known = quick !== null ? (warm?.known ?? null) : null;
  let contents = update.contentPaths(planned);
  let inThread: ReturnType<typeof hashFiles> | null = null;
  if (known !== null) {
    for await (const _chunk of contents) {
      // classified: update.additions holds them
    }
    contents = replay(update.additions);
    // null when a path changed under the look: git hashes them as it finds them
    if (fitsInThread(update.addedFacts))
      inThread = hashFiles(
        workspace,
        path.join(gitDir, 'objects'),
        alternatesOf(gitDir),
        update.additions,
        update.addedFacts,
      );
  }
  const dropped =
    inThread !== null
      ? inThread.dropped
      : await addToIndex(base, opts, contents, () => update.additions, { gitDir, when: packed });
  const plan = await planned;
  update.settle(plan, dropped);
  const message = `gaffer ${input.jobId} ${input.label}`;
  if (inThread !== null && known !== null && warm !== null) {
    return checkpointInThread({
      input,
      warm: { ...warm, rules: rules?.key ?? null, tracked: await tracked, gone: plan.gone ?? new Set() },
      known,
      hashed: inThread.hashed,
      update,
      plan,
      message,
      specialsFound,
    });
  }
  // after the additions: `--replace` already dropped entries a new path conflicts with
  await removeFromIndex(base, opts, update.removals);
  // an index nothing was written to since the last checkpoint still holds the same tree
  const tree =
    warm !== null && fileSignature(indexFile) === warm.indexSignature ? warm.tree : await writeTree(base, opts);
  const takenAtMs = Date.now();
  // the same tree as last time is the same content: its commit is this checkpoint too (a job
  // that changed nothing has pre = post, and nothing to diff)
  const last = warm?.known?.last ?? null;
  const commit =
    warm !== null && warm.tree === tree
      ? warm.commit
      : last !== null && last.tree === tree
        ? last.commit
        : (writeCommitObject(gitDir, tree, message, takenAtMs) ??
          (await commitTree(base, opts, tree, message, takenAtMs)));
  // the index held the warm checkpoint's tree: what it changed since is this one's change, when only new paths went in
  const delta = warm !== null && commit !== warm.commit ? update.indexDelta(dropped) : null;
  if (warm !== null && delta !== null) rememberTreeDiff(gitDir, warm.commit, commit, delta);
  const ref = checkpointRef(workspace, input.jobId, input.label);
  await writeRef(gitDir, ref, commit, opts);
  const signature = fileSignature(indexFile);
  if (signature !== null) {
    const outside = update.outside(plan.wanted, dropped);
    const rewritten = warm === null || signature !== warm.indexSignature;
    const writtenMs = rewritten ? signatureMtimeMs(signature) : warm.indexWrittenMs;
    // after a rewrite, the racy entries are the files hashed now that changed in the write's second
    const racy = rewritten ? racyEntries(update.addedFacts, writtenMs) : warm.racy;
    rememberWarmState(gitDir, {
      indexSignature: signature,
      racy,
      indexWrittenMs: writtenMs,
      tree,
      commit,
      listing: plan.listing === null ? null : listingMemo(plan.listing),
      rules: rules?.key ?? null,
      tracked: await tracked,
      wanted: plan.wanted,
      folders: plan.folders,
      outside,
      gone: plan.gone ?? new Set(),
    });
  }

  return finishCheckpoint(input, { commit, ref, takenAtMs, plan, update, specialsFound });
}

/**
 * A checkpoint of a known index (known-index.ts): the paths the quick look found new or changed
 * were hashed here; the tree is the known content with those changes, built here (the same as the
 * last one's when the changes are). The index is not written: it still holds the known content,
 * against which the next quick look finds every change since again — a changed file is hashed each
 * time, never trusted by its stat. Its warm state stays the index's, with this checkpoint as the last.
 */
async function checkpointInThread(c: {
  input: CheckpointInput;
  warm: WarmState;
  known: KnownIndex;
  hashed: ReadonlyMap<string, IndexEntry>;
  update: IndexUpdate;
  plan: Plan;
  message: string;
  specialsFound: Promise<string[]>;
}): Promise<Snapshot> {
  const { input, warm, known } = c;
  const { gitDir, workspace } = input;
  const changes = changesOf(known, c.hashed, c.update.removals);
  const key = changesKey(changes);
  const last = known.last;
  let tree: string;
  if (changes.size === 0) tree = warm.tree;
  else if (last !== null && last.key === key) tree = last.tree;
  else {
    const written = writeChangedTree(path.join(gitDir, 'objects'), alternatesOf(gitDir), known, warm.tree, changes);
    // a tree git would not write (a path a file and a folder at once): the index is rebuilt from scratch
    if (written === null)
      throw new ShadowIndexError(`the checkpoint's tree could not be built from ${gitDir}'s known index`);
    tree = written;
  }
  const takenAtMs = Date.now();
  const commit =
    tree === warm.tree
      ? warm.commit
      : last !== null && last.tree === tree
        ? last.commit
        : writeCommitObject(gitDir, tree, c.message, takenAtMs);
  if (commit === null) throw new ShadowIndexError(`the checkpoint's commit could not be written into ${gitDir}`);
  // what it changed against the known content, and against the last checkpoint: no diff-tree needed for either
  rememberTreeDiff(gitDir, warm.commit, commit, deltaBetween(known, null, changes));
  if (last !== null) rememberTreeDiff(gitDir, last.commit, commit, deltaBetween(known, last.changes, changes));
  const ref = checkpointRef(workspace, input.jobId, input.label);
  await writeRef(gitDir, ref, commit, { cwd: workspace, timeoutMs: input.timeoutMs });
  rememberWarmState(gitDir, { ...warm, known: { entries: known.entries, last: { changes, key, tree, commit } } });
  return finishCheckpoint(input, {
    commit,
    ref,
    takenAtMs,
    plan: c.plan,
    update: c.update,
    specialsFound: c.specialsFound,
  });
}

/** The rest of a checkpoint once its commit is written: the special files it skipped, its large files' manifest, the snapshot. */
async function finishCheckpoint(
  input: CheckpointInput,
  c: {
    commit: string;
    ref: string;
    takenAtMs: number;
    plan: Plan;
    update: IndexUpdate;
    specialsFound: Promise<string[]>;
  },
): Promise<Snapshot> {
  const { workspace, gitDir, timeoutMs } = input;
  const { plan, update, takenAtMs } = c;
  const skipped = new Set([...(plan.listing?.skipped ?? plan.unopened ?? []), ...update.skipped]);
  for (const p of await unignoredSpecials(workspace, gitDir, await c.specialsFound, timeoutMs)) skipped.add(p);
  const { large } = update;
  const manifestFile = largeFileManifestPath(gitDir, input.jobId, input.label);
  if (large.size > 0) await writeManifest(manifestFile, { entries: large, truncated: false, skipped: [], takenAtMs });
  else removeFile(manifestFile);

  const snapshot: Snapshot = {
    source: 'checkpoint',
    id: c.commit,
    workspace,
    gitDir,
    ref: c.ref,
    skipped: sortPaths(skipped),
    ...signaturesOfQuoted(workspace, skipped),
    truncated: false,
    largeFilesByStat: large.size > 0,
    takenAtMs,
  };
  if (large.size > 0) snapshot.manifestFile = manifestFile;
  listedIgnoreFiles.set(snapshot, ignoreFilesOf(plan.wanted));
  rememberPathSet(gitDir, c.commit, plan.wanted);
  return snapshot;
}

/** `skippedStats` for the skipped names that are not UTF-8 (quoted): their content is not stored, their stat is. */
function signaturesOfQuoted(workspace: string, skipped: Set<string>): { skippedStats?: Record<string, string> } {
  const stats: Record<string, string> = {};
  for (const p of skipped) {
    if (!isQuotedPath(p)) continue;
    const st = lstatSync(Buffer.concat([Buffer.from(`${workspace}/`), unquotePathBytes(p)]), {
      throwIfNoEntry: false,
      bigint: true,
    });
    if (st?.isFile() === true) stats[p] = `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`;
  }
  return Object.keys(stats).length > 0 ? { skippedStats: stats } : {};
}

/** The paths already classified, streamed again (to update-index, when they are not hashed here). */
async function* replay(paths: readonly string[]): AsyncIterable<string> {
  if (paths.length > 0) yield joinNul([...paths]);
}

/** The objects folders a shadow repository borrows from (`objects/info/alternates`). */
function alternatesOf(gitDir: string): string[] {
  try {
    return readFileSync(path.join(gitDir, 'objects', 'info', 'alternates'), 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => path.resolve(gitDir, 'objects', line));
  } catch {
    return [];
  }
}

/**
 * Below this many racily clean entries (and bytes in them), git comparing them by content on a
 * look costs less than a refresh: a refresh is a git process, ~10–20 ms; re-reading a small file
 * is tens of microseconds. (A fresh worktree's 200 files read again cost ~2 ms.)
 */
export const RACY_REFRESH_MIN = { files: 500, bytes: 8 << 20 };

/** The files hashed now that changed in the second the index was written. */
function racyEntries(added: readonly { mtimeMs: number; size: number }[], writtenMs: number): WarmState['racy'] {
  const racy = added.filter((f) => Math.floor(f.mtimeMs / 1000) >= Math.floor(writtenMs / 1000));
  return { files: racy.length, bytes: racy.reduce((sum, f) => sum + f.size, 0) };
}

/**
 * Racy git: index entries of files modified in the second the index was written are compared by
 * content on every look (a fresh clone checkpointed at once re-reads every file, every time) until
 * the index is written again later. Once that second has passed, `update-index --refresh` (what
 * `git status` does) writes it again: git re-checks those entries and smudges any whose content
 * differs, so nothing changed is hidden. The warm state follows the rewritten index.
 */
async function refreshRacyEntries(
  warm: WarmState,
  indexFile: string,
  base: string[],
  opts: GitCallOptions,
): Promise<void> {
  const many = warm.racy.files >= RACY_REFRESH_MIN.files || warm.racy.bytes >= RACY_REFRESH_MIN.bytes;
  if (!many || Math.floor(Date.now() / 1000) <= Math.floor(warm.indexWrittenMs / 1000)) return;
  // exit 1 only says some files need an update (modified): the index is written all the same
  await runGit([...base, 'update-index', '-q', '--refresh', '--ignore-missing'], opts);
  const signature = fileSignature(indexFile);
  if (signature === null) return;
  warm.indexSignature = signature;
  warm.indexWrittenMs = signatureMtimeMs(signature);
  warm.racy = { files: 0, bytes: 0 };
}

/** Special files in the listed folders: what the scan of the warm checkpoint's folders found, when they are the same. */
async function findSpecials(
  workspace: string,
  gitDir: string,
  skipAbs: string[],
  warmSpecials: Promise<string[]> | null,
  planned: Promise<Plan>,
): Promise<string[]> {
  if (warmSpecials !== null) {
    const found = await warmSpecials;
    if ((await planned).sameFolders) return found;
  }
  return scanSpecialFiles(workspace, (await planned).folders, skipAbs, dirCacheOf(gitDir));
}

/** Where the special-file scan keeps its folders' stamps (special-files.ts). */
function dirCacheOf(gitDir: string): string {
  return path.join(gitDir, 'gaffer-dirs.json');
}

async function writeTree(base: string[], opts: GitCallOptions): Promise<string> {
  const args = [...base, 'write-tree'];
  const result = await runGit(args, opts);
  if (result.exitCode !== 0) throw new ShadowIndexError(describeGitFailure(args, result));
  return result.stdout.toString().trim();
}

/** A parentless commit of the tree with gaffer as author and committer. */
async function commitTree(
  base: string[],
  opts: GitCallOptions,
  tree: string,
  message: string,
  atMs: number,
): Promise<string> {
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
async function unignoredSpecials(
  workspace: string,
  gitDir: string,
  specials: string[],
  timeoutMs: number,
): Promise<string[]> {
  const candidates = specials.filter((p) => !isInExcludedDir(p));
  if (candidates.length === 0) return [];
  const top = findRepoTop(workspace);
  const args =
    top === null
      ? [`--git-dir=${gitDir}`, `--work-tree=${workspace}`, 'check-ignore', '-z', '--stdin']
      : [
          `--git-dir=${path.join(top, '.git')}`,
          `--work-tree=${top}`,
          '--no-optional-locks',
          'check-ignore',
          '-z',
          '--stdin',
        ];
  const env: Record<string, string> = top === null ? { GIT_INDEX_FILE: emptyIndexFile(gitDir) } : {};
  const result = await runGit(args, { cwd: workspace, timeoutMs, env, input: joinNul(candidates) });
  if (result.exitCode !== 0 && result.exitCode !== 1) return candidates;
  const ignored = new Set(splitNul(result.stdout));
  return candidates.filter((p) => !ignored.has(p));
}
