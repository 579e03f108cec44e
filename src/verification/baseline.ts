import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ownedGitCall } from '../evidence/git.js';
import type { Snapshot } from '../domain/snapshot.js';
import { readBounded } from '../platform/files/bounded-read.js';

/** A lockfile past this is keyed by its refusal, not its bytes. */
const LOCKFILE_MAX_BYTES = 64 << 20;

/**
 * Dependency folders the checkpoint excludes: the baseline copy links them from the workspace
 * rather than copying them (spec 03), so the old code runs against the same installed packages.
 */
export const LINKED_DEPENDENCY_DIRS = ['node_modules', '.venv', 'venv', 'target'] as const;

/** Lockfiles whose content is part of the baseline cache key. */
const LOCKFILES = [
  'package-lock.json',
  'pnpm-lock.yaml',
  'yarn.lock',
  'bun.lockb',
  'bun.lock',
  'poetry.lock',
  'uv.lock',
  'requirements.txt',
  'go.sum',
  'Cargo.lock',
];

/** Why a baseline cannot be made, or null when it can. */
export function whyNoBaseline(pre: Snapshot | null): string | null {
  if (pre === null) return 'no checkpoint';
  if (pre.source !== 'checkpoint' || !pre.gitDir)
    return 'the checkpoint is mtime evidence: its content was not recorded';
  return null;
}

/** The cache key of a baseline run: (checkpoint, command, lockfile hashes) (spec 03). */
export function baselineKey(pre: Snapshot, command: string, workspace: string): string {
  const hash = createHash('sha256').update(pre.id).update('\0').update(command);
  for (const file of LOCKFILES) {
    // a FIFO or a link to /dev/zero here would hang or swell gaffer (issue 32): its refusal is keyed instead
    const read = readBounded(join(workspace, file), { maxBytes: LOCKFILE_MAX_BYTES, within: workspace });
    if (read.ok) hash.update('\0').update(file).update('\0').update(read.bytes);
    else if (!read.missing) hash.update('\0').update(file).update('\0refused\0').update(read.why);
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * Materializes the checkpoint's content in `dir` (outside the workspace) from the shadow commit,
 * byte-exact with symlinks and exec bits (`git archive | tar -x`), and links the workspace's
 * dependency folders into it.
 */
export async function exportCheckpoint(pre: Snapshot, dir: string, timeoutMs = 120_000): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await extractFromSnapshot(pre, dir, [], timeoutMs);
  for (const name of LINKED_DEPENDENCY_DIRS) {
    const source = join(pre.workspace, name);
    if (existsSync(source) && !existsSync(join(dir, name))) symlinkSync(source, join(dir, name));
  }
}

/**
 * Writes `paths` (every path when empty) of a snapshot's content into an existing `dir`, over what
 * is there: how a copy of the new tree gets the checkpoint's tests back.
 */
export async function extractFromSnapshot(
  snap: Snapshot,
  dir: string,
  paths: string[],
  timeoutMs = 120_000,
): Promise<void> {
  if (!snap.gitDir) throw new Error('exportCheckpoint: the snapshot has no shadow repository');
  await new Promise<void>((resolve, reject) => {
    // literal pathspecs: a file named `*.js` is that file, not a glob
    const args = [
      `--git-dir=${snap.gitDir}`,
      'archive',
      '--format=tar',
      snap.id,
      ...(paths.length > 0 ? ['--', ...paths] : []),
    ];
    const call = ownedGitCall(args, dir, { GIT_LITERAL_PATHSPECS: '1' });
    if (call.refusal !== null) throw new Error(call.refusal);
    const git = spawn('git', call.args, { env: call.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const tar = spawn('tar', ['-x', '-f', '-', '-C', dir], { stdio: ['pipe', 'ignore', 'pipe'] });
    git.stdout.pipe(tar.stdin);
    let stderr = '';
    git.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    tar.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      git.kill('SIGKILL');
      tar.kill('SIGKILL');
    }, timeoutMs);
    git.on('error', reject);
    tar.on('error', reject);
    // both must have ended: tar may finish (git's output closed) before git's own exit is seen
    const closed = (child: typeof git | typeof tar) => new Promise<number | null>((done) => child.on('close', done));
    void Promise.all([closed(git), closed(tar)]).then(([gitCode, tarCode]) => {
      clearTimeout(timer);
      if (gitCode === 0 && tarCode === 0) resolve();
      else
        reject(
          new Error(
            `exporting checkpoint ${snap.id.slice(0, 12)} failed: ${stderr.trim() || `git ${gitCode}, tar ${tarCode}`}`,
          ),
        );
    });
  });
}
