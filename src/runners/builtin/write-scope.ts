import type { WorkerRole } from '../../domain/status.js';

/**
 * A worker's write policy (spec 06 "Write policies"), enforced by the builtin agent before a
 * write happens.
 */
export interface WriteScope {
  role: WorkerRole;
  /** Workspace-relative paths (or directories, or `*`/`**` globs) it may write; null = anything. */
  allowed: readonly string[] | null;
}

/** What a write check answers. */
export type WriteCheck = { ok: true } | { ok: false; why: string };

/** The role's words in spec 06. */
const ROLE_WORDS: Record<WorkerRole, string> = {
  worker: 'an implementer',
  fixer: 'a fixer',
  reviewer: 'a reviewer',
};

function normalize(entry: string): string {
  return entry.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
}

/**
 * The policy of spec 06's table:
 * - implementer (`worker`): the task's `files` and `outputs`; anything in the workspace when the
 *   task names no files;
 * - fixer: the union of what the job's implementers may write (the engine passes it as `files`);
 *   empty = anything (some implementer could write anything);
 * - reviewer: nothing but its own `outputs`.
 * `files` is the runner input's list (the engine puts a task's `outputs` in it too); `outputs`,
 * when the engine passes it, tells the two apart.
 */
export function writeScopeFor(role: WorkerRole, files: readonly string[], outputs?: readonly string[]): WriteScope {
  const out = (outputs ?? []).map(normalize);
  if (role === 'reviewer') return { role, allowed: out };
  const all = [...new Set([...files.map(normalize), ...out])].filter((e) => e !== '');
  const named = all.filter((e) => !out.includes(e));
  if (role === 'worker' && named.length === 0) return { role, allowed: null };
  if (all.length === 0) return { role, allowed: null };
  return { role, allowed: all };
}

function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*' && glob[i + 1] === '*') {
      source += glob[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += glob[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** True when `rel` is `entry`, lies under the directory `entry`, or matches the glob `entry`. */
export function isCovered(entry: string, rel: string): boolean {
  if (entry === '.' || entry === '') return true;
  if (rel === entry || rel.startsWith(`${entry}/`)) return true;
  return /[*?]/.test(entry) && globToRegExp(entry).test(rel);
}

/** Whether the worker may write `rel` (workspace-relative, `/`-separated). */
export function checkWrite(scope: WriteScope, rel: string): WriteCheck {
  if (rel === '.git' || rel.startsWith('.git/'))
    return { ok: false, why: `${rel} is inside .git, which no worker writes by hand` };
  if (scope.allowed === null || scope.allowed.some((e) => isCovered(e, rel))) return { ok: true };
  const role = ROLE_WORDS[scope.role];
  if (scope.allowed.length === 0)
    return { ok: false, why: `${rel} is outside your write scope: ${role} may write nothing in the project` };
  const shown =
    scope.allowed.slice(0, 5).join(', ') + (scope.allowed.length > 5 ? ` +${scope.allowed.length - 5} more` : '');
  return { ok: false, why: `${rel} is outside your write scope: ${role} may write only ${shown}` };
}
