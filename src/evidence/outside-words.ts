import type { ExcludedFolderCounts, OutsideEvidenceJson } from '../domain/changes.js';

// Pure (no node: imports, types only): the proof and the verdict in src/domain may use it.

/** The words the proof and the verdict use for `outside_evidence`. */
export interface OutsideEvidenceWords {
  /** A doubt naming everything the workers wrote outside the evidence; null when nothing. */
  doubt: string | null;
  /** For the verdict line: set when a git hook, git config or info file, or an editor config changed. */
  verdictPart: string | null;
  /** Issue 32: the git config and attributes the workers set that run a program, for the verdict's first words; null when none. */
  gitCode: string | null;
}

/**
 * The verdict's first words when workers set git config or attributes that make git run a program
 * (`gitCode`: `outside_evidence.git_code`, plus `.gitattributes` files among the changes naming a
 * driver): gaffer's own git never ran it, the user's next git command here would.
 */
export function describeGitCode(gitCode: string[]): string | null {
  if (gitCode.length === 0) return null;
  const shown = gitCode.slice(0, VERDICT_NAMES).map((entry) => {
    const at = entry.indexOf(': ');
    const keys = entry.slice(at + 2).split(', ');
    return `${entry.slice(0, at)} (${keys.slice(0, 4).join(', ')}${keys.length > 4 ? ` +${keys.length - 4}` : ''})`;
  });
  const more = gitCode.length > VERDICT_NAMES ? ` +${gitCode.length - VERDICT_NAMES} more` : '';
  return `planted git code that your next git command here would run (gaffer's did not): ${shown.join(', ')}${more}`;
}

const VERDICT_NAMES = 3;

/**
 * What the proof and the verdict say about `changes.outside_evidence`: the doubt lists the named
 * entries and the excluded folders' counts; the verdict part names what can run code on the next
 * commit or editor open (git hooks, git config, editor configs), shortly.
 */
export function describeOutsideEvidence(outside: OutsideEvidenceJson | null | undefined): OutsideEvidenceWords {
  if (outside === null || outside === undefined) return { doubt: null, verdictPart: null, gitCode: null };
  if (outside.unavailable !== undefined) return { doubt: outside.unavailable, verdictPart: null, gitCode: null };
  if (outside.count === 0) return { doubt: null, verdictPart: null, gitCode: null };
  const named = [...(outside.git ?? []), ...(outside.editor ?? [])];
  const folders = Object.entries(outside.excluded ?? {});
  const inFolders = folders.reduce((n, [, c]) => n + c.added + c.modified + c.deleted, 0);
  const namedTotal = Math.max(named.length, outside.count - inFolders - (outside.dependencies?.length ?? 0));
  const more = (shown: number) => (namedTotal > shown ? ` +${namedTotal - shown} more` : '');
  const parts: string[] = [];
  if (named.length > 0) parts.push(`wrote outside the evidence: ${named.join(', ')}${more(named.length)}`);
  const deps = outside.dependencies ?? [];
  if (deps.length > 0) parts.push(`changed in the packages the tests run through: ${deps.join(', ')}`);
  if (folders.length > 0) {
    const counts = folders.map(
      ([folder, c]) => `${folder}/ ${countWords(c)}${c.partial === true ? ' (compared in part)' : ''}`,
    );
    parts.push(`changed in excluded folders: ${counts.join(', ')}`);
  }
  const verdictPart =
    named.length > 0
      ? `wrote outside the evidence: ${named.slice(0, VERDICT_NAMES).map(shortEntry).join(', ')}${more(Math.min(named.length, VERDICT_NAMES))}`
      : null;
  return { doubt: parts.join('; '), verdictPart, gitCode: describeGitCode(outside.git_code ?? []) };
}

function countWords(c: ExcludedFolderCounts): string {
  const words = [
    c.added > 0 ? `${c.added} added` : '',
    c.modified > 0 ? `${c.modified} modified` : '',
    c.deleted > 0 ? `${c.deleted} deleted` : '',
  ];
  return words.filter((w) => w !== '').join(', ');
}

/** `.git/hooks/pre-commit (added, executable)` → `.git/hooks/pre-commit (executable)`; `.git/config (modified: core.hookspath)` → `.git/config (core.hookspath)`. */
function shortEntry(entry: string): string {
  const at = entry.lastIndexOf(' (');
  if (at < 0 || !entry.endsWith(')')) return entry;
  const name = entry.slice(0, at);
  const details = entry.slice(at + 2, -1);
  if (details.startsWith('modified: ')) return `${name} (${details.slice('modified: '.length)})`;
  if (/(^|, )(made )?executable/.test(details)) return `${name} (executable)`;
  if (details === 'deleted') return `${name} (deleted)`;
  return name;
}

/** Dependency folders: what the tests import from besides the workspace's own code. */
const DEPENDENCY_DIRS = /(^|\/)(node_modules|\.venv|venv)$/;
/** The files an honest dependency change also changes. */
const DEPENDENCY_MANIFESTS =
  /(^|\/)(package(-lock)?\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|bun\.lockb?|requirements[\w.-]*\.txt|pyproject\.toml|poetry\.lock|uv\.lock|Pipfile(\.lock)?|setup\.(py|cfg))$/;

/**
 * Why the work is not done when the workers changed dependencies while no manifest or lockfile changed
 * (`changed`: the workers' changed paths): the test framework or a package it runs through can have
 * been patched, and the checkpoint's tests run against it too. It names the files of the harness
 * packages that changed (compared by content), else the dependency folders with their counts. A real
 * install changes a lockfile or a manifest as well. Null when that is not so.
 */
export function describeDependenciesChangedAlone(
  outside: OutsideEvidenceJson | null | undefined,
  changed: string[],
): string | null {
  const named = (outside?.dependencies ?? []).map(shortEntry);
  const folders = Object.entries(outside?.excluded ?? {}).filter(([f]) => DEPENDENCY_DIRS.test(f));
  if ((named.length === 0 && folders.length === 0) || changed.some((p) => DEPENDENCY_MANIFESTS.test(p))) return null;
  const what =
    named.length > 0
      ? `${named.slice(0, VERDICT_NAMES).join(', ')}${named.length > VERDICT_NAMES ? ` +${named.length - VERDICT_NAMES} more` : ''}`
      : folders.map(([f, c]) => `${f}/ (${countWords(c)})`).join(', ');
  return `dependencies changed without a manifest or lockfile change: ${what}`;
}
