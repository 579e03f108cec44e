import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** A path the builtin agent asked for, resolved (spec 04: every path inside the workspace, symlinks too). */
export type ResolvedPath =
  | {
      ok: true;
      /** The real absolute path (symlinks of its existing part resolved): what the tool touches. */
      abs: string;
      /** Relative to the workspace's real path, `/`-separated; `.` for the workspace itself. */
      rel: string;
    }
  | { ok: false; why: string };

/**
 * The real path of `abs`: the realpath of its longest existing prefix plus the rest. A dangling
 * symlink on the way is followed by hand (its target may be outside); null when a link loops.
 */
export function realPathOf(abs: string, depth = 0): string | null {
  if (depth > 40) return null;
  try {
    return realpathSync(abs);
  } catch {
    // not there (or a dangling link): resolve the parent, then look at this name
  }
  const parent = dirname(abs);
  if (parent === abs) return abs;
  const realParent = realPathOf(parent, depth + 1);
  if (realParent === null) return null;
  const joined = join(realParent, basename(abs));
  try {
    const stat = lstatSync(joined);
    if (stat.isSymbolicLink()) {
      // a dangling link: writing through it would create its target, wherever that is
      return realPathOf(resolve(realParent, readlinkSync(joined)), depth + 1);
    }
  } catch {
    // does not exist: the rest of the path is plain names
  }
  return joined;
}

/** True when `abs` is `root` or lies under it. */
export function isInside(root: string, abs: string): boolean {
  return abs === root || abs.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** The workspace's real path (the root every check compares with). */
export function realWorkspace(workspace: string): string {
  return realPathOf(resolve(workspace)) ?? resolve(workspace);
}

/**
 * Resolves `requested` (relative to the workspace, or absolute) to its real path and refuses
 * anything outside the workspace: `..` escapes, absolute paths elsewhere, symlinks (existing or
 * dangling) that point out. `root` is the workspace's real path.
 */
export function resolveInWorkspace(root: string, requested: string): ResolvedPath {
  if (typeof requested !== 'string' || requested.trim() === '') return { ok: false, why: 'the path is empty' };
  if (requested.includes('\0')) return { ok: false, why: 'the path holds a NUL byte' };
  const lexical = isAbsolute(requested) ? resolve(requested) : resolve(root, requested);
  const real = realPathOf(lexical);
  if (real === null) return { ok: false, why: `${requested}: too many levels of symbolic links` };
  if (!isInside(root, real)) {
    const how = isInside(root, lexical) ? ' through a symbolic link' : '';
    return {
      ok: false,
      why: `${requested} is outside the workspace${how} (resolves to ${real}); only paths inside ${root} may be used`,
    };
  }
  const rel = relative(root, real).split(sep).join('/');
  return { ok: true, abs: real, rel: rel === '' ? '.' : rel };
}
