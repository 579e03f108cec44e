import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The program directories a sandboxed run resolves to that lie under `hidden` (the roots the
 * sandbox replaces: its private /tmp, the private HOME): gaffer's own install, node, the PATH
 * entries, the program being run, and — since a PATH entry such as `node_modules/.bin` holds only
 * links — the packages its links lead to (a CLI's `.bin/claude` → its package and the hoisted
 * dependencies beside it). Bound read-only so they stay visible on top of the empty roots.
 */
export function listProgramDirs(hidden: string[], opts: { programs?: string[]; path?: string; workspace?: string } = {}): string[] {
  const roots = hidden.map(realPath);
  // strictly below a root: binding a whole root back (a PATH entry `~`, a script straight in HOME) would undo it
  const under = (p: string) => roots.some((root) => p.startsWith(root.endsWith(sep) ? root : root + sep));
  const out = new Set<string>();
  const addTarget = (target: string) => {
    if (!under(target)) return;
    const root = findPackageRoot(target);
    out.add(under(root) ? root : target);
  };
  const gafferRoot = fileURLToPath(new URL('../../..', import.meta.url));
  const pathDirs = (opts.path ?? process.env.PATH ?? '').split(':').filter(Boolean);
  for (const dir of [gafferRoot, dirname(process.execPath), ...pathDirs].map(realPath)) {
    if (!under(dir)) continue;
    out.add(dir);
    for (const target of readLinkTargets(dir)) addTarget(target);
  }
  for (const program of (opts.programs ?? []).filter((p) => p.startsWith('/'))) {
    if (under(realPath(dirname(program)))) out.add(realPath(dirname(program)));
    addTarget(realPath(program));
  }
  if (opts.workspace !== undefined) {
    const inside = realPath(opts.workspace) + sep;
    for (const target of readWorkspaceLinks(opts.workspace)) if (under(target) && !target.startsWith(inside)) out.add(target);
  }
  return [...out];
}

/**
 * Where the workspace's installed dependencies lead outside it: `npm link`ed packages
 * (`node_modules/foo` → `~/dev/foo`) and a virtualenv's interpreter (`.venv/bin/python` → a Python
 * that uv or pyenv installed below HOME), so the private HOME does not take them away.
 */
function readWorkspaceLinks(workspace: string): string[] {
  const out: string[] = [];
  const modules = join(workspace, 'node_modules');
  for (const name of safeReaddir(modules)) {
    if (name.startsWith('@')) out.push(...readLinkTargets(join(modules, name)));
  }
  out.push(...readLinkTargets(modules));
  for (const venv of ['.venv', 'venv']) out.push(...readLinkTargets(join(workspace, venv, 'bin')).map(findPackageRoot));
  return out;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Where the symlinks in `dir` lead (resolved all the way); dangling ones are left out. */
function readLinkTargets(dir: string): string[] {
  const out: string[] = [];
  for (const name of safeReaddir(dir)) {
    const entry = join(dir, name);
    try {
      if (lstatSync(entry).isSymbolicLink()) out.push(realpathSync(entry));
    } catch {
      // dangling: nothing to bind
    }
  }
  return out;
}

/**
 * The folder that holds what a program needs: inside a `node_modules`, the outermost one (its
 * package and the dependencies hoisted beside it); a program in a `bin` folder, that folder's
 * parent (`…/tool/bin/tool` needs `…/tool/lib`); else its own folder.
 */
function findPackageRoot(file: string): string {
  const parts = file.split(sep);
  const at = parts.indexOf('node_modules');
  if (at > 0) return parts.slice(0, at + 1).join(sep);
  const dir = dirname(file);
  return basename(dir) === 'bin' ? dirname(dir) : dir;
}

/** The real path of `path`, or its resolved form when it does not exist. */
export function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
