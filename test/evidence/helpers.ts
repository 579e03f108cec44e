import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs, readdirSync, readFileSync, lstatSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { takeSnapshot } from '../../src/evidence/index.js';
import type { SnapshotOptions } from '../../src/evidence/types.js';
import type { Snapshot } from '../../src/domain/snapshot.js';

const created: string[] = [];

afterAll(async () => {
  for (const dir of created.splice(0)) await fs.rm(dir, { recursive: true, force: true });
});

/** A fresh temp folder, removed after the file's tests (real path: macOS /var -> /private/var). */
export async function tempDir(prefix = 'gaffer-ev-'): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

/** The env tests run their own git with: nothing of the host's config or GIT_* variables. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
}

/** Runs git in `cwd` as a user would (with an identity for commits). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    env: cleanEnv(),
    encoding: 'utf8',
  });
}

/** Writes files (creating folders) under a root. */
export async function write(root: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    await fs.mkdir(path.dirname(abs), { recursive: true });
    await fs.writeFile(abs, content);
  }
}

/** A snapshot with the test's data dir and a job id. */
export function snap(
  workspace: string,
  dataDir: string,
  label: string,
  extra: Partial<SnapshotOptions> = {},
): Promise<Snapshot> {
  return takeSnapshot({ workspace, dataDir, jobId: extra.jobId ?? 'job1', label, ...extra });
}

/** `git ls-tree -r` of a checkpoint: path -> [mode, sha]. */
export function lsTree(snapshot: Snapshot): Map<string, { mode: string; sha: string }> {
  const out = execFileSync('git', [`--git-dir=${snapshot.gitDir}`, 'ls-tree', '-r', '-z', snapshot.id], {
    env: cleanEnv(),
  });
  const map = new Map<string, { mode: string; sha: string }>();
  for (const entry of out.toString('utf8').split('\0')) {
    const m = /^(\d{6}) \w+ ([0-9a-f]+)\t(.*)$/s.exec(entry);
    if (m) map.set(m[3] as string, { mode: m[1] as string, sha: m[2] as string });
  }
  return map;
}

/** The bytes a checkpoint holds for a path. */
export function stored(snapshot: Snapshot, rel: string): Buffer {
  return execFileSync('git', [`--git-dir=${snapshot.gitDir}`, 'cat-file', 'blob', `${snapshot.id}:${rel}`], {
    env: cleanEnv(),
  });
}

/**
 * A fingerprint of every file under a folder: names, types, modes, sizes, mtimes and contents.
 * Any write, new file or deleted file changes it.
 */
export function fingerprint(root: string): string {
  const hash = createHash('sha1');
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const abs = path.join(dir, name);
      const st = lstatSync(abs);
      hash.update(`${path.relative(root, abs)}|${st.mode}|${st.size}|${st.mtimeMs}\n`);
      if (st.isDirectory()) visit(abs);
      else if (st.isSymbolicLink()) hash.update(readlinkSync(abs));
      else if (st.isFile()) hash.update(readFileSync(abs));
    }
  };
  visit(root);
  return hash.digest('hex');
}

/** Whether this process can be denied reading a file (root reads everything). */
export const canBeDenied = typeof process.getuid === 'function' && process.getuid() !== 0;
