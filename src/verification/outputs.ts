import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { yaml } from '../platform/files/yaml.js';
import { formatOfPath, type ParseFormat } from '../domain/criterion-forms.js';
import type { RunnerReport } from '../domain/runner-report.js';
import { readBounded } from '../platform/files/bounded-read.js';

/** Files above this are compared by size+mtime+inode, not content (spec 03's snapshot cap). */
export const OUTPUT_HASH_CAP = 20 * 1024 * 1024;
/** Most entries of a declared output folder looked at. */
const FOLDER_ENTRIES_CAP = 5_000;

/** A declared output as it was at one moment (the checkpoint), to tell whether a worker wrote it. */
export interface OutputState {
  exists: boolean;
  isDirectory: boolean;
  size: number;
  mtimeMs: number;
  ino: number;
  /** sha1 of the content (a folder: of its listing); null when over OUTPUT_HASH_CAP. */
  digest: string | null;
}

/** Declared outputs by workspace-relative path. */
export type OutputStates = Record<string, OutputState>;

/** Records each declared output as it is now (before the workers run). */
export function captureOutputs(workspace: string, paths: readonly string[]): OutputStates {
  const states: OutputStates = {};
  for (const path of new Set(paths)) states[path] = readState(join(workspace, path));
  return states;
}

/**
 * Why a declared output does not count as written (missing, empty, unparseable for json/yaml/toml,
 * or as it was at the checkpoint), or null when it does (spec 06).
 */
export function checkOutput(workspace: string, path: string, atCheckpoint: OutputState | undefined): string | null {
  const now = readState(join(workspace, path));
  if (!now.exists) return `declared output ${path} was never written`;
  if (atCheckpoint?.exists && sameState(atCheckpoint, now))
    return `declared output ${path} was never written (it is as it was at the checkpoint)`;
  if (now.isDirectory) return now.size === 0 ? `declared output ${path} is an empty folder` : null;
  const problem = checkFile(join(workspace, path), formatOfPath(path));
  return problem === null ? null : `declared output ${path} ${problem}`;
}

/**
 * Why a file fails the output checks — "is empty", "is not valid JSON: …" — or null when it is
 * non-empty and parses as `format` (no format: non-empty is enough).
 */
export function checkFile(file: string, format: ParseFormat | null): string | null {
  let text: string;
  try {
    const stat = lstatSync(file);
    if (!stat.isFile()) return 'is not a regular file';
    if (stat.size > OUTPUT_HASH_CAP) return format === null ? null : `is too large to parse (${stat.size} bytes)`;
    const read = readBounded(file, { maxBytes: OUTPUT_HASH_CAP });
    if (!read.ok) return read.missing ? 'does not exist' : read.why;
    text = read.bytes.toString('utf8');
  } catch {
    return 'does not exist';
  }
  if (text.trim() === '') return 'is empty';
  if (format === null) return null;
  const why = parseError(text, format);
  return why === null ? null : `is not valid ${format.toUpperCase()}: ${why.split('\n')[0]?.slice(0, 120) ?? ''}`;
}

/**
 * Spec 06 "settle by artifacts": a worker that ended `done` without every declared output is not
 * done; one that exited non-zero after writing them all, each passing its checks, is `done` with a
 * note that the process failed. Any other end is left as it is.
 */
export function settleByArtifacts(
  report: RunnerReport,
  workspace: string,
  outputs: readonly string[],
  atCheckpoint: OutputStates,
): RunnerReport {
  if (outputs.length === 0) return report;
  const finishedClean = report.status === 'done';
  const exitedNonZero = report.status === 'error' && report.stopReason === 'exit_nonzero';
  if (!finishedClean && !exitedNonZero) return report;
  const problems = outputs
    .map((p) => checkOutput(workspace, p, atCheckpoint[p]))
    .filter((p): p is string => p !== null);
  if (finishedClean && problems.length > 0) {
    return {
      ...report,
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'outputs_missing',
      error: problems.join('; '),
    };
  }
  if (exitedNonZero && problems.length === 0) {
    const note = `the process failed (${report.error ?? `exit code ${report.exitCode ?? 'unknown'}`}), but every declared output is written and passes its checks: ${outputs.join(', ')}`;
    return {
      ...report,
      status: 'done',
      outcome: 'success',
      error: null,
      summary: report.summary === '' ? note : `${report.summary}\n${note}`,
    };
  }
  return report;
}

function readState(abs: string): OutputState {
  let stat: Stats;
  try {
    stat = lstatSync(abs);
  } catch {
    return { exists: false, isDirectory: false, size: 0, mtimeMs: 0, ino: 0, digest: null };
  }
  const base = { exists: true, isDirectory: stat.isDirectory(), size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino };
  if (stat.isDirectory()) {
    const listing = listFolder(abs);
    return { ...base, size: listing.length, digest: sha1(listing.join('\n')) };
  }
  if (!stat.isFile() || stat.size > OUTPUT_HASH_CAP) return { ...base, digest: null };
  try {
    const read = readBounded(abs, { maxBytes: OUTPUT_HASH_CAP });
    return { ...base, digest: read.ok ? sha1(read.bytes) : null };
  } catch {
    return { ...base, digest: null };
  }
}

function sameState(a: OutputState, b: OutputState): boolean {
  if (a.isDirectory !== b.isDirectory) return false;
  if (a.digest !== null && b.digest !== null) return a.digest === b.digest;
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
}

/** A folder's files with size and mtime, sorted, up to FOLDER_ENTRIES_CAP. */
function listFolder(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= FOLDER_ENTRIES_CAP) return;
      const abs = join(dir, name);
      const path = rel === '' ? name : `${rel}/${name}`;
      try {
        const stat = lstatSync(abs);
        if (stat.isDirectory()) walk(abs, path);
        else out.push(`${path}\t${stat.size}\t${stat.mtimeMs}`);
      } catch {
        // gone while looking: it is not there
      }
    }
  };
  walk(root, '');
  return out;
}

function parseError(text: string, format: ParseFormat): string | null {
  try {
    if (format === 'json') JSON.parse(text);
    else if (format === 'toml') parseToml(text);
    else {
      const bad = yaml()
        .parseAllDocuments(text)
        .flatMap((doc) => ('errors' in doc ? doc.errors : []))
        .at(0);
      if (bad) return bad.message;
    }
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function sha1(data: string | Buffer): string {
  return createHash('sha1').update(data).digest('hex');
}
