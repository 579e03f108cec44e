import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, resolve, sep } from 'node:path';
import { GafferError } from '../domain/errors.js';
import type { JobSpec } from '../domain/request.js';
import { realWorkspace, resolveInWorkspace } from '../runners/builtin/workspace-paths.js';

const isInside = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

/**
 * Vets a workspace path (spec 01): absolute, an existing directory, not `/`, not the home folder
 * or one of its ancestors, not gaffer's data dir, inside it, or a folder containing it.
 * Returns the canonical (symlink-free) path, which is what locks compare.
 */
export function vetWorkspace(workspace: string, dataDir: string): string {
  const refuse = (why: string): never => {
    throw new GafferError('invalid_request', `workspace: ${why}, got ${JSON.stringify(workspace)}`, 'workspace');
  };
  if (!isAbsolute(workspace)) refuse('must be an absolute path');
  let real: string;
  try {
    real = realpathSync(workspace);
  } catch {
    return refuse('does not exist — create it or give an existing directory');
  }
  if (!statSync(real).isDirectory()) refuse('must be a directory');
  if (real === '/') refuse('must not be the filesystem root');
  const home = safeReal(homedir());
  if (home && isInside(home, real)) refuse('must not be your home folder or one of its ancestors — give a project folder');
  const data = safeReal(resolve(dataDir)) ?? resolve(dataDir);
  if (isInside(real, data)) refuse(`must not be gaffer's data dir (${data}) or inside it`);
  if (isInside(data, real)) refuse(`must not contain gaffer's data dir (${data}) — move the data dir with --data-dir`);
  return real;
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
        if (!resolved.ok) throw new GafferError('invalid_request', `tasks[${i}].${key}[${j}]: ${resolved.why}`, `tasks[${i}].${key}[${j}]`);
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
