import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { GafferError } from '../../domain/errors.js';
import type { JobSpec } from '../../domain/request.js';
import { realWorkspace, resolveInWorkspace } from '../../runners/builtin/workspace-paths.js';
import { runGitSync } from '../../evidence/git.js';
import { readHeadHasCommit } from '../../evidence/head-commit.js';

const isInside = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

/** Folders of the user's no job may be created for, below HOME (issue 11): keys, and every program's settings. */
export const PROTECTED_HOME_FOLDERS = ['.ssh', '.gnupg', '.config'] as const;

/** What a workspace is vetted against besides the request itself. */
export interface WorkspaceRules {
  /** gaffer's data dir: the workspace may not be it, inside it, or contain it. */
  dataDir: string;
  /** The config file read, when any: the workspace may not be its folder or contain it (a worker could rewrite it). */
  configFile?: string | null;
  /** Config `protected_paths` (absolute): the workspace may not be one, inside one, or contain one. */
  protectedPaths?: readonly string[];
  /** The home folder whose ~/.ssh, ~/.gnupg, ~/.config are protected; default the user's. */
  home?: string;
  /**
   * Workspaces of live jobs the requesting client runs inside (its cwd, see
   * {@link workspacesHolding}): the new workspace may not be a parent of one — a worker must not
   * widen its own reach by dispatching a job for the folder around it.
   */
  spawnedFrom?: readonly string[];
}

/**
 * Vets a workspace path (spec 01, issue 11): absolute, an existing directory, not `/`, not the
 * home folder or one of its ancestors, and clear of every protected folder (see
 * {@link WorkspaceRules}). Returns the canonical (symlink-free) path, which is what locks compare.
 */
export function vetWorkspace(workspace: string, rules: WorkspaceRules): string {
  const refuse = (why: string): never => {
    throw new GafferError('invalid_request', `workspace: ${why}, got ${JSON.stringify(workspace)}`, 'workspace');
  };
  // a ~ is a shell's to expand; a relative path would be taken from this process's working directory,
  // which over HTTP or MCP is the server's, not the caller's
  if (workspace.startsWith('~'))
    refuse('must be an absolute path: "~" is expanded by a shell, not by gaffer — send the full path');
  if (!isAbsolute(workspace))
    refuse(
      "must be an absolute path — a relative one would be resolved against gaffer's own working directory, not the caller's: send the full path (the gaffer CLI resolves a relative one from a request file or --workspace itself)",
    );
  let real: string;
  try {
    real = realpathSync(workspace);
  } catch {
    return refuse('does not exist — create it or give an existing directory');
  }
  if (!statSync(real).isDirectory()) refuse('must be a directory');
  if (real === '/') refuse('must not be the filesystem root');
  const home = canonical(rules.home ?? homedir());
  if (isInside(home, real)) refuse('must not be your home folder or one of its ancestors — give a project folder');
  const data = canonical(rules.dataDir);
  if (isInside(real, data)) refuse(`must not be gaffer's data dir (${data}) or inside it`);
  if (isInside(data, real)) refuse(`must not contain gaffer's data dir (${data}) — move the data dir with --data-dir`);
  if (rules.configFile) {
    const folder = canonical(dirname(resolve(rules.configFile)));
    if (isInside(folder, real))
      refuse(
        `must not be or contain the folder of gaffer's config file (${folder}): a worker could rewrite the config — move the config or give a folder beside it`,
      );
  }
  for (const name of PROTECTED_HOME_FOLDERS) {
    const folder = canonical(join(home, name));
    if (overlaps(real, folder))
      refuse(`must not be, be inside, or contain ${folder} (protected: keys and settings no worker may touch)`);
  }
  for (const path of rules.protectedPaths ?? []) {
    const folder = canonical(path);
    if (overlaps(real, folder))
      refuse(
        `must not be, be inside, or contain ${folder} (config protected_paths) — give a folder outside it, or change protected_paths`,
      );
  }
  for (const spawner of rules.spawnedFrom ?? []) {
    if (real !== spawner && isInside(spawner, real)) {
      refuse(
        `must not be a parent of ${spawner}, the workspace of a live job this request comes from — a job may not widen its own reach; dispatch for ${spawner} or a folder inside it`,
      );
    }
  }
  return real;
}

/**
 * The workspaces of `liveWorkspaces` that hold `cwd` (the requesting client's working directory):
 * where the request comes from when a worker of a live job sent it.
 */
export function workspacesHolding(cwd: string | null | undefined, liveWorkspaces: readonly string[]): string[] {
  if (!cwd || !isAbsolute(cwd)) return [];
  const real = canonical(cwd);
  return [...new Set(liveWorkspaces.map(canonical))].filter((ws) => isInside(real, ws));
}

/** One folder is the other, or holds it. */
function overlaps(a: string, b: string): boolean {
  return isInside(a, b) || isInside(b, a);
}

/** The symlink-free path when it exists, else the path made absolute (a folder made later still counts). */
function canonical(path: string): string {
  return safeReal(resolve(path)) ?? resolve(path);
}

/**
 * Vets the request's `files` and `outputs` against the workspace on disk (spec 10): a path whose
 * existing part leaves the workspace through a symlink (existing or dangling) is refused, the
 * field named. `..` and absolute paths were refused by the request parser already.
 */
export function vetTaskPaths(workspace: string, spec: Pick<JobSpec, 'tasks'>): void {
  const root = realWorkspace(workspace);
  spec.tasks.forEach((task, i) => {
    for (const key of ['files', 'outputs'] as const) {
      task[key].forEach((path, j) => {
        const resolved = resolveInWorkspace(root, path);
        if (!resolved.ok)
          throw new GafferError(
            'invalid_request',
            `tasks[${i}].${key}[${j}]: ${resolved.why}`,
            `tasks[${i}].${key}[${j}]`,
          );
      });
    }
  });
}

function safeReal(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * Refuses a worktree job for a workspace that is not in a git repository, or whose HEAD has no
 * commit yet (spec 06), with `invalid_request` before anything starts.
 */
export function vetWorktreeRepository(workspace: string): void {
  // read from the repository's files when they say it plainly: a process forked from the engine costs it milliseconds
  if (readHeadHasCommit(workspace) === true) return;
  const head = runGitSync(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], workspace);
  if (head.status === 0) return;
  const inRepo = runGitSync(['rev-parse', '--git-dir'], workspace).status === 0;
  const why = inRepo
    ? 'is a git repository whose HEAD has no commit yet — commit once first'
    : 'is not inside a git repository — run `git init` and commit first';
  throw new GafferError('invalid_request', `workspace: "${workspace}" ${why}, or use isolation "shared"`, 'workspace');
}
