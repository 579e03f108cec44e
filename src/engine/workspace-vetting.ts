import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, resolve, sep } from 'node:path';
import { GafferError } from '../domain/errors.js';

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

function safeReal(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}
