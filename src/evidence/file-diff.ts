import { promises as fs, lstatSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readBounded } from '../platform/files/bounded-read.js';
import { GafferError } from '../domain/errors.js';
import { DEFAULT_GIT_TIMEOUT_MS, runGit, runGitOk } from './git.js';
import { readManifest, sameFacts } from './manifest.js';
import { normalizeRelPath } from './paths.js';
import { withRepoLock } from './repo-lock.js';
import { DEFAULT_SIZE_CAP_BYTES } from './snapshot.js';
import type { Snapshot } from '../domain/snapshot.js';
import { factsOf, type StatFacts } from './walk.js';

/** A side whose content is known, with its git mode. */
export type Content = { mode: string; content: Buffer };
/** A side known only by stat (mtime evidence, or a file over the size cap). */
export type Unrecorded = { facts: StatFacts };
/** One side of a file diff; null when the path is absent. */
export type Side = Content | Unrecorded | null;

/** git's own test: a NUL in the first 8000 bytes means binary. */
const BINARY_PROBE_BYTES = 8000;

/**
 * The unified diff of one path between a snapshot and a later one, or the live workspace when
 * `after` is null. Binary files get a size line, stat-only evidence (mtime snapshots, files over
 * the size cap) a "content not recorded" line; an unchanged path gives "".
 */
export async function fileDiff(before: Snapshot, after: Snapshot | null, rawPath: string): Promise<string> {
  const rel = normalizeRelPath(rawPath);
  if (rel === null)
    throw new GafferError(
      'invalid_request',
      `path must be inside the workspace, got ${JSON.stringify(rawPath)}`,
      'path',
    );
  const a = await readSide(before, rel);
  const statOnly = before.source === 'mtime' || isUnrecorded(a);
  const b = after === null ? readLive(before.workspace, rel, statOnly) : await readSide(after, rel);
  return diffSides(
    rel,
    a,
    b,
    before.source === 'mtime' || after?.source === 'mtime' ? 'mtime evidence' : 'over the size cap',
  );
}

/**
 * The diff of one path between two sides already read: "" when they are the same, a size line for
 * a binary side or one known only by stat (`unrecorded` says why), else git's unified hunks.
 */
export async function diffSides(rel: string, a: Side, b: Side, unrecorded: string): Promise<string> {
  if (a === null && b === null) return '';
  if (isUnrecorded(a) || isUnrecorded(b)) {
    if (isUnrecorded(a) && isUnrecorded(b) && sameFacts(a.facts, b.facts)) return '';
    return `${rel}: content not recorded (${unrecorded}): size ${sizeOf(a)} -> ${sizeOf(b)}\n`;
  }
  if (a !== null && b !== null && a.mode === b.mode && a.content.equals(b.content)) return '';
  if (isBinary(a) || isBinary(b)) return `Binary file ${rel}: ${sizeOf(a)} -> ${sizeOf(b)} bytes\n`;
  return textDiff(rel, a, b);
}

function isUnrecorded(side: Side): side is Unrecorded {
  return side !== null && 'facts' in side;
}

function sizeOf(side: Side): string {
  if (side === null) return 'absent';
  return String(isUnrecorded(side) ? side.facts.size : side.content.length);
}

function isBinary(side: Content | null): boolean {
  return side !== null && side.content.subarray(0, BINARY_PROBE_BYTES).includes(0);
}

async function readSide(snapshot: Snapshot, rel: string): Promise<Side> {
  if (snapshot.source === 'mtime' || snapshot.largeFilesByStat) {
    if (snapshot.manifestFile !== undefined) {
      const facts = (await readManifest(snapshot.manifestFile)).entries.get(rel);
      if (facts !== undefined) return { facts };
    }
    if (snapshot.source === 'mtime') return null;
  }
  const gitDir = snapshot.gitDir;
  if (gitDir === undefined) throw new GafferError('internal', `checkpoint ${snapshot.id} has no gitDir`);
  return withRepoLock(gitDir, DEFAULT_GIT_TIMEOUT_MS, async () => {
    // the shadow repository, not the workspace: a recorded snapshot reads the same once its folder is gone (a removed worktree, a remote job's checkout)
    const opts = { cwd: gitDir, timeoutMs: DEFAULT_GIT_TIMEOUT_MS };
    const listed = await runGitOk(
      [`--git-dir=${gitDir}`, '--literal-pathspecs', 'ls-tree', '-z', snapshot.id, '--', rel],
      opts,
    );
    const entry = listed.toString('utf8').split('\0')[0] ?? '';
    const m = /^(\d{6}) blob ([0-9a-f]+)\t/.exec(entry);
    if (m === null) return null;
    const content = await runGitOk([`--git-dir=${gitDir}`, 'cat-file', 'blob', m[2] as string], opts);
    return { mode: m[1] as string, content };
  });
}

/** The live file; only its stat when the other side is stat-only or it is too big, special or unreadable. */
function readLive(workspace: string, rel: string, statOnly: boolean): Side {
  const abs = path.join(workspace, rel);
  const st = lstatSync(abs, { throwIfNoEntry: false });
  if (st === undefined || st.isDirectory()) return null;
  const facts = factsOf(st, abs) ?? { kind: 'file', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, mode: st.mode };
  if (statOnly || st.size > DEFAULT_SIZE_CAP_BYTES) return { facts };
  if (facts.kind === 'symlink') return { mode: '120000', content: Buffer.from(facts.target ?? '') };
  if (!st.isFile()) return { facts };
  const mode = (st.mode & 0o111) !== 0 ? '100755' : '100644';
  // swapped for a FIFO or a link since the lstat: its stat, never a wait (issue 32)
  const read = readBounded(abs, { maxBytes: DEFAULT_SIZE_CAP_BYTES });
  return read.ok ? { mode, content: read.bytes } : { facts };
}

async function textDiff(rel: string, a: Content | null, b: Content | null): Promise<string> {
  const lines = [`diff --git a/${rel} b/${rel}`];
  if (a === null && b !== null) lines.push(`new file mode ${b.mode}`);
  else if (b === null && a !== null) lines.push(`deleted file mode ${a.mode}`);
  else if (a !== null && b !== null && a.mode !== b.mode) lines.push(`old mode ${a.mode}`, `new mode ${b.mode}`);
  const ca = a?.content ?? Buffer.alloc(0);
  const cb = b?.content ?? Buffer.alloc(0);
  if (ca.equals(cb)) return `${lines.join('\n')}\n`;
  lines.push(a === null ? '--- /dev/null' : `--- a/${rel}`, b === null ? '+++ /dev/null' : `+++ b/${rel}`);
  return `${lines.join('\n')}\n${await hunks(ca, cb)}`;
}

/** The hunks of `git diff --no-index` between two contents (git handles "\ No newline at end of file"). */
async function hunks(a: Buffer, b: Buffer): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'gaffer-diff-'));
  try {
    await Promise.all([fs.writeFile(path.join(dir, 'a'), a), fs.writeFile(path.join(dir, 'b'), b)]);
    const result = await runGit(
      ['diff', '--no-index', '--no-color', '--no-ext-diff', '--no-textconv', '--text', '-U3', '--', 'a', 'b'],
      {
        cwd: dir,
        timeoutMs: DEFAULT_GIT_TIMEOUT_MS,
      },
    );
    if (result.exitCode !== 0 && result.exitCode !== 1)
      throw new GafferError('internal', `git diff --no-index failed: ${result.stderr.trim()}`);
    const text = result.stdout.toString('utf8');
    const start = text.search(/^@@/m);
    return start < 0 ? '' : text.slice(start);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
