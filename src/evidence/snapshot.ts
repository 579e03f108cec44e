import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { GafferError } from '../domain/errors.js';
import { DEFAULT_GIT_TIMEOUT_MS, isGitAvailable } from './git.js';
import { MTIME_MAX_ENTRIES, mtimeManifestPath, takeMtimeSnapshot } from './mtime-snapshot.js';
import { assertSafeSegment, relativeInside, shadowGitDir } from './paths.js';
import { keepOutsideRecord, takeOutsideRecord } from './outside-evidence.js';
import { checkpointRef, takeCheckpoint } from './shadow-checkpoint.js';
import { seedShadowIndex } from './seed-index.js';
import { ensureShadowRepo } from './shadow-repo.js';
import { noteJudge, readIgnoreRules, recallJudge } from './ignore-judge.js';
import { writeRef } from './refs.js';
import { withRepoLock } from './repo-lock.js';
import type { SnapshotOptions } from './types.js';
import type { Snapshot } from '../domain/snapshot.js';

/** Default size cap: larger files are recorded by size+mtime+inode (spec 03). */
export const DEFAULT_SIZE_CAP_BYTES = 20 * 1024 * 1024;

/**
 * Snapshots a workspace: a content-exact shadow-git checkpoint, or the mtime fallback when git is
 * not on PATH, the shadow repository fails (`fallbackReason` says why), `forceMtime` is set, or
 * `like` is an mtime snapshot, or (no `like` given) the job already has mtime snapshots: a job
 * never goes from mtime back to checkpoint, so its before/after pairs can always be diffed.
 * Either way it also records the places the evidence excludes (`outsideRecord`, outside-evidence.ts).
 */
export async function takeSnapshot(opts: SnapshotOptions): Promise<Snapshot> {
  assertSafeSegment(opts.jobId, 'jobId');
  assertSafeSegment(opts.label, 'label');
  const workspace = path.resolve(opts.workspace);
  const dataDir = path.resolve(opts.dataDir);
  if (statSync(workspace, { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new GafferError(
      'invalid_request',
      `workspace ${workspace} is not a directory: pass an existing folder`,
      'workspace',
    );
  }
  const alwaysInclude = opts.alwaysInclude ?? [];
  const skipAbs = relativeInside(workspace, dataDir) === null ? [] : [dataDir];
  const content = opts.reuse
    ? reuseCheckpoint(opts.reuse, opts, workspace, dataDir, alwaysInclude)
    : takeContentSnapshot(opts, workspace, dataDir, alwaysInclude, skipAbs);
  // taken alongside, from the next turn of the loop: its stat calls run while the checkpoint waits
  // on git, not before the checkpoint has started git (the way there is synchronous calls)
  const recorded = yieldToLoop()
    .then(() => takeOutsideRecord({ workspace, label: opts.label, alwaysInclude, skipAbs }))
    .then(
      (record) => keepOutsideRecord(opts.jobId, record),
      // no record: the changes JSON then says the places outside the evidence could not be compared
      () => null,
    );
  const snapshot = await content;
  const key = await recorded;
  if (key !== null) snapshot.outsideRecord = key;
  return snapshot;
}

async function takeContentSnapshot(
  opts: SnapshotOptions,
  workspace: string,
  dataDir: string,
  alwaysInclude: string[],
  skipAbs: string[],
): Promise<Snapshot> {
  let fallbackReason: string;
  if (opts.forceMtime === true) fallbackReason = 'mtime snapshot requested (forceMtime)';
  else if (opts.like?.source === 'mtime') fallbackReason = 'the snapshot it is compared with is an mtime snapshot';
  // without `like`: a job whose earlier snapshots are mtime ones keeps that source, so its
  // before/after pairs stay comparable
  else if (opts.like === undefined && hasMtimeSnapshots(dataDir, opts.jobId))
    fallbackReason = 'earlier snapshots of this job are mtime snapshots';
  else if (!(await isGitAvailable())) fallbackReason = 'git is not on PATH';
  else {
    try {
      return await takeCheckpoint({
        workspace,
        gitDir: shadowGitDir(dataDir, opts.shadowOf ?? workspace),
        jobId: opts.jobId,
        label: opts.label,
        alwaysInclude,
        sizeCapBytes: opts.sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES,
        timeoutMs: opts.gitTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS,
        skipAbs,
        ...(opts.seedIndex ? { checkout: opts.seedIndex } : {}),
        ...(opts.like ? { judge: opts.like } : {}),
      });
    } catch (err) {
      fallbackReason = `shadow repository failed: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  return takeMtimeSnapshot({
    workspace,
    dataDir,
    jobId: opts.jobId,
    label: opts.label,
    alwaysInclude,
    maxEntries: opts.mtimeMaxEntries ?? MTIME_MAX_ENTRIES,
    skipAbs,
    fallbackReason,
  });
}

/**
 * `opts.reuse` as this workspace's snapshot: its shadow repository borrows the reused one's
 * objects (`objects/info/alternates`) and a ref of its own keeps the commit named. With
 * `opts.seedIndex`, its shadow index starts as the workspace's checked-out index (seed-index.ts).
 */
async function reuseCheckpoint(
  reused: Snapshot,
  opts: SnapshotOptions,
  workspace: string,
  dataDir: string,
  alwaysInclude: string[],
): Promise<Snapshot> {
  if (reused.source !== 'checkpoint' || reused.gitDir === undefined || reused.largeFilesByStat) {
    throw new GafferError('internal', 'only a content checkpoint with no files recorded by stat can be reused');
  }
  const gitDir = shadowGitDir(dataDir, opts.shadowOf ?? workspace);
  const ref = checkpointRef(workspace, opts.jobId, opts.label);
  const timeoutMs = opts.gitTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  await withRepoLock(gitDir, timeoutMs, async () => {
    ensureShadowRepo(gitDir);
    writeFileSync(
      path.join(gitDir, 'objects', 'info', 'alternates'),
      `${path.join(reused.gitDir as string, 'objects')}\n`,
    );
    await writeRef(gitDir, ref, reused.id, { cwd: workspace, timeoutMs });
    if (opts.seedIndex)
      seedShadowIndex({
        gitDir,
        workspace,
        alwaysInclude,
        reused: { gitDir: reused.gitDir as string, commit: reused.id },
        seed: opts.seedIndex,
      });
  });
  // the reused checkpoint's ignore rules, as this workspace holds them before any worker
  const rules = recallJudge(reused.workspace, reused.id);
  if (rules !== null) noteJudge(workspace, reused.id, readIgnoreRules(workspace, [...rules.files.keys()]));
  const { outsideRecord: _theirs, manifestFile: _none, ...content } = reused;
  return { ...content, workspace, gitDir, ref, takenAtMs: Date.now() };
}

function hasMtimeSnapshots(dataDir: string, jobId: string): boolean {
  return existsSync(path.dirname(mtimeManifestPath(dataDir, jobId, 'any')));
}
