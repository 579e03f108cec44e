import { lstatSync } from 'node:fs';
import path from 'node:path';
import { writeManifest } from './manifest.js';
import { normalizeRelPath, sortPaths } from './paths.js';
import type { Snapshot } from '../domain/snapshot.js';
import { factsOf, walkTree, type StatFacts } from './walk.js';

/** spec 03: the fallback is bounded at 60,000 files. */
export const MTIME_MAX_ENTRIES = 60_000;

/** `SnapshotOptions` resolved for the mtime fallback. */
export interface MtimeInput {
  /** Absolute workspace path. */
  workspace: string;
  /** gaffer's data dir: manifests go under `snapshots/<job>/`. */
  dataDir: string;
  /** Job id (manifest folder). */
  jobId: string;
  /** Snapshot label (manifest name). */
  label: string;
  /** Paths included even when in an excluded folder. */
  alwaysInclude: string[];
  /** Entries recorded before the walk stops (`truncated`). */
  maxEntries: number;
  /** Absolute paths never entered. */
  skipAbs: string[];
  /** Why the fallback is used (copied onto the snapshot). */
  fallbackReason: string;
}

/** Where an mtime snapshot's manifest is kept. */
export function mtimeManifestPath(dataDir: string, jobId: string, label: string): string {
  return path.join(path.resolve(dataDir), 'snapshots', jobId, `${label}.json`);
}

/**
 * The fallback snapshot: size, mtime, mode, inode and symlink target of every file, by an lstat
 * walk with the excluded folders skipped (`.gitignore` is not applied: without git it is best
 * effort), bounded at `maxEntries` (then `truncated`).
 */
export async function takeMtimeSnapshot(input: MtimeInput): Promise<Snapshot> {
  const { workspace } = input;
  const walked = await walkTree(workspace, '', {
    skipExcludedNames: true,
    skipAbs: input.skipAbs,
    cap: input.maxEntries,
  });
  const entries = new Map<string, StatFacts>(walked.entries);
  const skipped = new Set(walked.skipped);
  const lastPath = walked.entries[walked.entries.length - 1]?.[0];
  for (const raw of input.alwaysInclude) {
    const rel = normalizeRelPath(raw);
    if (rel === null) continue;
    const abs = path.join(workspace, rel);
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (st === undefined) continue;
    if (st.isDirectory()) {
      const inner = await walkTree(workspace, rel, {
        skipExcludedNames: false,
        skipAbs: input.skipAbs,
        cap: input.maxEntries,
      });
      for (const [p, f] of inner.entries) entries.set(p, f);
      for (const p of inner.skipped) skipped.add(p);
      continue;
    }
    const facts = factsOf(st, abs);
    if (facts === null) skipped.add(rel);
    else entries.set(rel, facts);
  }
  const takenAtMs = Date.now();
  const manifestFile = mtimeManifestPath(input.dataDir, input.jobId, input.label);
  const skippedList = sortPaths(skipped);
  const id = await writeManifest(manifestFile, {
    entries,
    truncated: walked.truncated,
    ...(walked.truncated && lastPath !== undefined ? { lastPath } : {}),
    skipped: skippedList,
    takenAtMs,
  });
  return {
    source: 'mtime',
    id,
    workspace,
    manifestFile,
    skipped: skippedList,
    truncated: walked.truncated,
    largeFilesByStat: false,
    fallbackReason: input.fallbackReason,
    takenAtMs,
  };
}
