import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { StatFacts } from './walk.js';

/** A stat record on disk: `[size, mtimeMs, ino, mode, symlinkTarget?]` (compact: up to 60,000 of them). */
type StatTuple = [number, number, number, number] | [number, number, number, number, string];

/** A manifest of stat facts: the mtime fallback's whole snapshot, or a checkpoint's large files. */
export interface StatManifest {
  /** Stat facts by workspace-relative path. */
  entries: Map<string, StatFacts>;
  /** The walk stopped at its cap; paths after `lastPath` (walk order) were not seen. */
  truncated: boolean;
  /** Last path recorded, in walk order (set when truncated). */
  lastPath?: string;
  /** Special or unreadable paths. */
  skipped: string[];
  /** When the manifest was taken (ms since the epoch). */
  takenAtMs: number;
}

interface ManifestJson {
  version: 1;
  takenAtMs: number;
  truncated: boolean;
  lastPath?: string;
  skipped: string[];
  entries: Record<string, StatTuple>;
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/** Writes a manifest as JSON and returns the sha1 of its bytes (the mtime snapshot's id). */
export async function writeManifest(file: string, manifest: StatManifest): Promise<string> {
  const entries: Record<string, StatTuple> = {};
  for (const [p, f] of manifest.entries) {
    entries[p] =
      f.kind === 'symlink' ? [f.size, f.mtimeMs, f.ino, f.mode, f.target ?? ''] : [f.size, f.mtimeMs, f.ino, f.mode];
  }
  const json: ManifestJson = {
    version: 1,
    takenAtMs: manifest.takenAtMs,
    truncated: manifest.truncated,
    skipped: manifest.skipped,
    entries,
  };
  if (manifest.lastPath !== undefined) json.lastPath = manifest.lastPath;
  const text = JSON.stringify(json);
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, text);
  await fs.rename(tmp, file);
  return createHash('sha1').update(text).digest('hex');
}

/** Reads a manifest written by `writeManifest`. */
export async function readManifest(file: string): Promise<StatManifest> {
  const json = JSON.parse(await fs.readFile(file, 'utf8')) as ManifestJson;
  const entries = new Map<string, StatFacts>();
  for (const [p, t] of Object.entries(json.entries)) {
    const [size, mtimeMs, ino, mode, target] = t;
    const facts: StatFacts = { kind: (mode & S_IFMT) === S_IFLNK ? 'symlink' : 'file', size, mtimeMs, ino, mode };
    if (target !== undefined) facts.target = target;
    entries.set(p, facts);
  }
  const manifest: StatManifest = {
    entries,
    truncated: json.truncated,
    skipped: json.skipped,
    takenAtMs: json.takenAtMs,
  };
  if (json.lastPath !== undefined) manifest.lastPath = json.lastPath;
  return manifest;
}

/** Whether two stat records describe the same file state (type, exec bit, size, mtime, inode, link target). */
export function sameFacts(a: StatFacts, b: StatFacts): boolean {
  return (
    a.kind === b.kind &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ino === b.ino &&
    (a.target ?? '') === (b.target ?? '')
  );
}
