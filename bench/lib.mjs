// Helpers of the benchmark harness: timing, child processes, a hermetic git environment for the
// reference commands, and fixture generation. Nothing here knows about a particular figure.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** Median of a list of numbers (mean of the middle two for an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Milliseconds an async function takes (wall clock, monotonic). */
export async function timeAsync(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/** Log progress on stderr so stdout stays the table. */
export function log(...parts) {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);
}

/**
 * The environment of every reference git command: the same hermetic setup gaffer gives its own git
 * calls (no global/system config, C locale, the caller's GIT_* removed), plus the repository,
 * work tree and index of the reference, and an identity for commits.
 */
export function gitEnv({ gitDir, workTree, indexFile } = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toUpperCase().startsWith('GIT_')) env[k] = v;
  Object.assign(env, {
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@localhost',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@localhost',
  });
  if (gitDir) env.GIT_DIR = gitDir;
  if (workTree) env.GIT_WORK_TREE = workTree;
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  return env;
}

/**
 * Runs a command as a child process and times it from spawn to exit (the same way gaffer's own
 * git calls are spawned: async, pipes). Throws on a non-zero exit.
 */
export function run(cmd, args, { cwd, env, input } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd, env: env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr.trim().slice(-500)}`));
      else resolve({ ms, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}

/** `git <args>` with a reference environment; resolves to { ms, stdout }. */
export function git(args, envOpts, opts = {}) {
  return run('git', args, { ...opts, env: gitEnv(envOpts) });
}

// ---------------------------------------------------------------------------------------------
// Fixtures

const FILES_PER_DIR = 50;
const DIRS_PER_TOP = 20;

/** A pool of base64 text in 76-column lines: file bodies are slices of it (random-ish, text-like). */
function textPool(bytes) {
  const b64 = randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64');
  return b64.replace(/(.{76})/g, '$1\n');
}

let pool = null;
function getPool() {
  pool ??= textPool(8 * 1024 * 1024);
  return pool;
}

/** Random-ish text of about `avgBytes` (uniform in [avg/2, 3avg/2]), unique by its header line. */
export function fileBody(header, avgBytes) {
  const p = getPool();
  const len = Math.floor(avgBytes / 2 + Math.random() * avgBytes);
  const at = Math.floor(Math.random() * (p.length - len));
  return `// ${header}\n${p.slice(at, at + len)}\n`;
}

/**
 * Writes `files` files of ~`avgBytes` each under `root` in nested folders
 * (`dNN/eNN/fNN.txt`, 50 files a folder, 20 folders a top folder). A plain folder: no `.git`.
 * Returns the relative paths, in creation order.
 */
export function makeTree(root, files, avgBytes = 4096) {
  const paths = [];
  const tops = Math.ceil(files / (FILES_PER_DIR * DIRS_PER_TOP));
  const pad = (n) => String(n).padStart(2, '0');
  outer: for (let a = 0; a < tops; a++) {
    for (let b = 0; b < DIRS_PER_TOP; b++) {
      const dir = `d${pad(a)}/e${pad(b)}`;
      mkdirSync(join(root, dir), { recursive: true });
      for (let f = 0; f < FILES_PER_DIR; f++) {
        if (paths.length >= files) break outer;
        const rel = `${dir}/f${pad(f)}.txt`;
        writeFileSync(join(root, rel), fileBody(rel, avgBytes));
        paths.push(rel);
      }
    }
  }
  return paths;
}

/** `count` paths spread over the tree, different for each `rep`. */
export function pickSpread(paths, count, rep) {
  const out = new Set();
  const step = Math.max(1, Math.floor(paths.length / count));
  let i = (rep * 7919) % paths.length;
  while (out.size < Math.min(count, paths.length)) {
    out.add(paths[i % paths.length]);
    i += step + 1;
  }
  return [...out];
}

/** Rewrites files with new content (new size, new bytes, new mtime). */
export function modifyFiles(root, rels, stamp) {
  for (const rel of rels) writeFileSync(join(root, rel), fileBody(`${rel} modified ${stamp}`, 4096));
}

/** Writes new files next to existing ones; returns their relative paths. */
export function addFiles(root, nearRels, stamp) {
  return nearRels.map((near, k) => {
    const rel = near.replace(/[^/]+$/, `new-${stamp}-${k}.txt`);
    writeFileSync(join(root, rel), fileBody(rel, 4096));
    return rel;
  });
}
