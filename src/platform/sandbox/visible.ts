import { lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The program directories a sandboxed run resolves to that lie under `hidden` (the roots the
 * sandbox replaces: its private /tmp, the private HOME): gaffer's own install, node, the PATH
 * entries, the program being run, and — since a PATH entry such as `node_modules/.bin` holds only
 * links — the packages its links lead to (a CLI's `.bin/claude` → its package and the hoisted
 * dependencies beside it); and the packages the user `npm link`ed into node's global `node_modules`.
 * Bound read-only so they stay visible on top of the empty roots.
 *
 * Nothing the workspace holds decides what is bound (issue 32: a worker's `node_modules/x → ~/.ssh`
 * was bound into the next sandbox). A link that lies in the workspace is never followed, wherever the
 * path that meets it comes from (a relative PATH entry, a program, a PATH link that leads into the
 * workspace), and a workspace's own dependency folders are not read at all; nor is a link inside a
 * package the user `npm link`ed (a project a worker may work in too). What honest tooling
 * keeps: links inside the workspace (they need no bind), a virtualenv's interpreter from a toolchain
 * HOME keeps (home.ts `HOME_KEPT`: pyenv, uv, asdf, mise), a package linked through npm's global
 * folder (`npm link` in the package, then `npm link <name>` in the workspace). What it costs: under
 * a tmpfs HOME (bwrap before 0.10) or below /tmp, a dependency linked straight from the workspace to
 * another folder (`file:../lib`, `npm link ../lib` outside a global prefix, a venv on a Python
 * elsewhere below HOME) dangles inside the sandbox.
 */
export function listProgramDirs(
  hidden: string[],
  opts: { programs?: string[]; path?: string; workspace?: string; npmGlobal?: string } = {},
): string[] {
  const roots = hidden.map(realPath);
  const workspace = opts.workspace === undefined ? null : realPath(opts.workspace);
  // strictly below a root: binding a whole root back (a PATH entry `~`, a script straight in HOME) would undo it
  const under = (p: string) => roots.some((root) => isBelow(p, root));
  const inWorkspace = (p: string) => workspace !== null && (p === workspace || isBelow(p, workspace));
  // the user's `npm link`ed packages: the link to each is the user's, but each is a project a worker may
  // work in (a job on it), so links inside one are as untrusted as the workspace's
  const linked = listGlobalNpmLinks(opts.npmGlobal ?? join(dirname(dirname(process.execPath)), 'lib', 'node_modules'))
    .map((link) => resolveOutside(link, workspace === null ? [] : [workspace]))
    .filter((target): target is string => target !== null && !inWorkspace(target));
  const untrusted = [...(workspace === null ? [] : [workspace]), ...linked];
  // the workspace is bound as it is: what lies in it needs no bind, and its links are a worker's to choose
  const resolveOut = (p: string) => {
    const real = resolveOutside(p, untrusted);
    return real === null || inWorkspace(real) ? null : real;
  };
  const out = new Set<string>();
  const addTarget = (target: string | null) => {
    if (target === null || !under(target)) return;
    const root = findPackageRoot(target);
    out.add(under(root) ? root : target);
  };
  const gafferRoot = fileURLToPath(new URL('../../..', import.meta.url));
  // a relative PATH entry would be resolved against gaffer's cwd, often the workspace: never a place to bind
  const pathDirs = (opts.path ?? process.env.PATH ?? '').split(':').filter((dir) => dir.startsWith('/'));
  for (const dir of [gafferRoot, dirname(process.execPath), ...pathDirs].map(resolveOut)) {
    if (dir === null || !under(dir)) continue;
    out.add(dir);
    for (const link of listLinks(dir)) addTarget(resolveOut(link));
  }
  for (const program of (opts.programs ?? []).filter((p) => p.startsWith('/'))) {
    const dir = resolveOut(dirname(program));
    if (dir !== null && under(dir)) out.add(dir);
    addTarget(resolveOut(program));
  }
  for (const target of linked) if (under(target)) out.add(target);
  return [...out];
}

/**
 * The packages `npm link` put in npm's global `node_modules` (`modules`, default node's own prefix:
 * `<prefix>/lib/node_modules/foo` → `~/dev/foo`): the user made each one there, outside any workspace,
 * and a worker cannot add one (the prefix is read-only or private in the sandbox). A workspace's
 * `node_modules/foo` leads through it.
 */
function listGlobalNpmLinks(modules: string): string[] {
  const out: string[] = [];
  for (const name of safeReaddir(modules)) {
    if (name.startsWith('@')) out.push(...listLinks(join(modules, name)));
  }
  return [...out, ...listLinks(modules)];
}

/**
 * The real path of `path`, resolved one component at a time; null when it does not exist, loops, or
 * meets a symbolic link that lies in one of `untrusted` (real paths: a workspace, whose links are a
 * worker's choice).
 */
export function resolveOutside(path: string, untrusted: readonly string[]): string | null {
  const pending = resolve(path).split(sep).filter(Boolean).reverse();
  let current: string = sep;
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.pop() as string;
    if (part === '.') continue;
    if (part === '..') {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    try {
      if (!lstatSync(next).isSymbolicLink()) {
        current = next;
        continue;
      }
      if (untrusted.some((root) => next === root || isBelow(next, root))) return null;
      // the kernel's own limit on links in one path (MAXSYMLINKS)
      if (++hops > 40) return null;
      const target = readlinkSync(next);
      if (target.startsWith(sep)) current = sep;
      pending.push(...target.split(sep).filter(Boolean).reverse());
    } catch {
      return null;
    }
  }
  return current;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The symbolic links straight in `dir` (their own paths, not followed). */
function listLinks(dir: string): string[] {
  return safeReaddir(dir)
    .map((name) => join(dir, name))
    .filter((entry) => {
      try {
        return lstatSync(entry).isSymbolicLink();
      } catch {
        return false;
      }
    });
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

function isBelow(path: string, root: string): boolean {
  return path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** The real path of `path`, or its resolved form when it does not exist. */
export function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
