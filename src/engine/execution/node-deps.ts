import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { spawnCommand } from '../../platform/spawner/spawner.js';
import { copyOnWrite, DEPENDENCY_DIRS, runConfigured } from '../placement/worktree.js';

/** The install command a node runs for a lockfile when its config names none (`worktrees.install["*"]`). */
const DEFAULT_INSTALL: Readonly<Record<string, string>> = {
  'package-lock.json': 'npm ci',
  'npm-shrinkwrap.json': 'npm ci',
  'yarn.lock': 'yarn install --frozen-lockfile',
  'pnpm-lock.yaml': 'pnpm install --frozen-lockfile',
  'uv.lock': 'uv sync --frozen',
};

/** The manifests whose content goes into a cache key besides the lockfiles. */
const MANIFESTS = ['package.json', 'pyproject.toml'];

/** What a node did for an attempt's dependencies. */
export interface NodeDeps {
  /** Workspace-relative folders it put there (removed before the commit). */
  placed: string[];
  /** One line per folder: how it got there, or why not. */
  notes: string[];
  /** Why the attempt cannot start (an install failed); null when it can. */
  failure: string | null;
}

/** Installs under way, by cache folder: two attempts of one lockfile at once install once. */
const installing = new Map<string, Promise<string | null>>();

/**
 * Gives a node's worktree the dependency folders the coordinator's workspace has (spec 09, as a
 * local worktree gets them, spec 06): installed from the worktree's lockfile with the node's
 * `worktrees.install["*"]` (else `npm ci`, `yarn install --frozen-lockfile`, … by lockfile), once
 * per lockfile content — kept under `<work dir>/deps/<hash>` — and put into each worktree whose
 * lockfile has that content as hard links (`cp -al`; `worktrees.deps: "copy"`: a copy). Not a
 * symlink, as a local worktree gets: a sandboxed worker sees its worktree, not the node's cache.
 */
export async function prepareNodeDeps(opts: {
  /** The worktree's workspace folder. */
  workspace: string;
  /** The dependency folders the coordinator's workspace has (`node_modules`, `.venv`). */
  dirs: readonly string[];
  /** `<work dir>/deps`. */
  cacheRoot: string;
  /** The node's `worktrees.install["*"]`; null: by lockfile. */
  install: string | null;
  mode: 'link' | 'copy';
  /** Where an install's output is kept. */
  logFile: (dir: string) => string;
  say: (line: string) => void;
}): Promise<NodeDeps> {
  const out: NodeDeps = { placed: [], notes: [], failure: null };
  for (const d of DEPENDENCY_DIRS) {
    if (!opts.dirs.includes(d.dir) || existsSync(join(opts.workspace, d.dir))) continue;
    const locks = d.lockfiles.filter((l) => existsSync(join(opts.workspace, l)));
    if (locks.length === 0) {
      out.notes.push(`${d.dir} not installed: the workspace has no lockfile (${d.lockfiles.join(', ')})`);
      continue;
    }
    const command = opts.install ?? DEFAULT_INSTALL[locks[0] as string] ?? null;
    if (command === null) {
      out.notes.push(
        `${d.dir} not installed: no install command for ${locks.join(', ')} (set worktrees.install on the node)`,
      );
      continue;
    }
    const hash = createHash('sha256').update(`${d.dir}\0${command}\0`);
    for (const f of [...locks, ...MANIFESTS].sort())
      if (existsSync(join(opts.workspace, f))) hash.update(`${f}\0`).update(readFileSync(join(opts.workspace, f)));
    const cached = join(opts.cacheRoot, hash.digest('hex').slice(0, 32));
    let how = 'from the node’s cache';
    if (!existsSync(join(cached, d.dir))) {
      let run = installing.get(cached);
      if (!run) {
        how = `installed (${command})`;
        opts.say(`installing ${d.dir}: ${command}`);
        run = install(command, d.dir, opts.workspace, cached, opts.logFile(d.dir));
        installing.set(cached, run);
        void run.finally(() => installing.delete(cached));
      }
      const why = await run;
      if (why !== null) {
        out.notes.push(`${d.dir} install failed (${command}): ${why}`);
        out.failure = `dependency install on the node failed (${command}): ${why}`;
        return out;
      }
    }
    // the install ran in this workspace and moved its folder to the cache, or another attempt's did
    if (!existsSync(join(opts.workspace, d.dir))) {
      if (opts.mode === 'copy' || !(await hardLinkCopy(join(cached, d.dir), join(opts.workspace, d.dir))))
        await copyOnWrite(join(cached, d.dir), join(opts.workspace, d.dir));
    }
    out.placed.push(d.dir);
    out.notes.push(`${d.dir} ${how}, ${opts.mode === 'copy' ? 'copied' : 'hard-linked'} into the worktree`);
  }
  return out;
}

/** Runs the install in the workspace and moves what it made into the cache folder; null when done, else why. */
async function install(
  command: string,
  dir: string,
  workspace: string,
  cached: string,
  logFile: string,
): Promise<string | null> {
  const why = await runConfigured(command, workspace, {}, logFile);
  if (why !== null) return why;
  if (!existsSync(join(workspace, dir))) return `${command} made no ${dir}`;
  // whole or not at all: a folder of its own, renamed into place
  const partial = `${cached}.${randomBytes(4).toString('hex')}.partial`;
  mkdirSync(partial, { recursive: true });
  renameSync(join(workspace, dir), join(partial, dir));
  try {
    renameSync(partial, cached);
  } catch {
    // another process made it meanwhile: theirs is used
    rmSync(partial, { recursive: true, force: true });
  }
  return null;
}

/** `cp -al`: the folder's tree with its files hard-linked (one filesystem); false when it could not (what it made is gone). */
async function hardLinkCopy(from: string, to: string): Promise<boolean> {
  const result = await spawnCommand({
    cmd: 'cp',
    args: ['-al', from, to],
    cwd: os.tmpdir(),
    env: process.env,
    timeoutMs: 15 * 60_000,
    input: '',
  });
  if (result.exitCode === 0) return true;
  rmSync(to, { recursive: true, force: true });
  return false;
}
