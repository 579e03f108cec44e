import { join } from 'node:path';
import type { LintCode } from '../domain/spec-lint.js';
import { knownFailuresList, LIMITS } from '../domain/request.js';
import { runGit } from '../evidence/git.js';
import { readHeadId } from '../evidence/head-commit.js';
import { findRepoTop } from '../evidence/listing.js';
import { readBounded } from '../platform/files/bounded-read.js';

/**
 * What a workspace's `.gaffer/workspace.json` may say (spec 07). A worker can write into its
 * workspace, so the file is trusted only for hints that grant nothing.
 */
export interface WorkspaceHints {
  /**
   * `verify.command`: the project's test command (used by `verify: "auto"`); `verify.scope`: related | all;
   * `verify.known_failures`: test ids or globs that fail and are not a job's to fix (issue 33).
   */
  verify?: { command?: string; scope?: 'related' | 'all'; known_failures?: string[] };
  /** Spec-lint findings this project does not want (the mode itself comes from the config). */
  spec_lint?: { ignore: LintCode[] };
  /** The objectives file, relative to the workspace (default `.gaffer/objectives.json`). */
  objectives?: string;
}

/** The hints read, and why anything in the file was ignored. */
export interface WorkspaceHintsReading {
  hints: WorkspaceHints;
  warnings: string[];
}

/** The hints file, relative to the workspace. */
export const WORKSPACE_HINTS_FILE = '.gaffer/workspace.json';
const FILE = join(...WORKSPACE_HINTS_FILE.split('/'));

/** Keys that would grant power: only the data dir's config or `--config` may set them. */
const POWER_KEYS: ReadonlySet<string> = new Set([
  'runners',
  'runner',
  'default_runner',
  'models',
  'model',
  'endpoint',
  'endpoints',
  'sandbox',
  'approval',
  'budget',
  'budgets',
  'tokens',
  'setup',
  'hooks',
  'setup_hooks',
  'env',
  'workers',
  'roster',
  'retention',
  'breaker',
  'worktree',
  'worktrees',
]);

const LINT_CODES: readonly LintCode[] = [
  'no_scope',
  'no_verify',
  'multiple_outcomes',
  'vague_verb',
  'public_api_unguarded',
  'too_long',
  'too_short',
];
const COMMAND_MAX = 2_000;

/** Bytes of a hints file read at most: it holds a command and a few words. */
const HINTS_MAX_BYTES = 64 * 1024;

/** The hints a job goes by, and what it says about a working copy it did not go by. */
export interface CommittedHintsReading extends WorkspaceHintsReading {
  /** Words naming the working copy's hints file when it is not what HEAD holds (said on the verdict); null when they agree. */
  untrusted: string | null;
}

/**
 * The hints a job goes by (issue 32): `.gaffer/workspace.json` **as committed at HEAD**, as the
 * roster is. A worker can write the working copy, and `verify.command` decides what proves its work,
 * so a working copy that differs from HEAD — or has no HEAD version at all (not committed, or no
 * repository) — steers nothing: the HEAD version's hints apply (none when there is none), and
 * `untrusted` names the file for the verdict. The cost: a user's own uncommitted hints are not used
 * until committed (or said in the request: `verify`, `verify_scope`).
 */
export async function readCommittedHints(workspace: string): Promise<CommittedHintsReading> {
  const working = readBounded(join(workspace, FILE), { maxBytes: HINTS_MAX_BYTES, within: workspace });
  const committed = await showAtHead(workspace);
  const reading = committed === null ? { hints: {}, warnings: [] } : parseWorkspaceHints(committed);
  const workingText = working.ok ? working.bytes.toString('utf8') : null;
  if (workingText === committed || (working.ok === false && working.missing && committed === null))
    return { ...reading, untrusted: null };
  const used = committed === null ? 'hints are read as committed at HEAD' : "HEAD's hints used";
  const what = !working.ok
    ? working.missing
      ? 'deleted from the working copy'
      : `: ${working.why}`
    : committed === null
      ? 'not committed: ignored'
      : 'changed since HEAD: ignored';
  return { ...reading, untrusted: `${WORKSPACE_HINTS_FILE}${what.startsWith(':') ? '' : ' '}${what} (${used})` };
}

/** The hints file at a commit, by workspace and commit id: a commit never changes, so a job on an unmoved HEAD starts no git process for it. */
const atCommit = new Map<string, string | null>();
const AT_COMMIT_MAX = 256;

/** The hints file's text at HEAD, or null: no repository, no commit, no such file, not a regular file there, or over the cap. */
async function showAtHead(workspace: string): Promise<string | null> {
  // no `.git` at or above it: no HEAD, and no git process to learn that
  if (findRepoTop(workspace) === null) return null;
  const head = readHeadId(workspace);
  const key = head === null ? null : `${workspace}\0${head.id}`;
  if (key !== null && atCommit.has(key)) return atCommit.get(key) ?? null;
  const text = await showAtHeadWithGit(workspace, head?.id ?? 'HEAD');
  if (key !== null) {
    atCommit.set(key, text);
    if (atCommit.size > AT_COMMIT_MAX) atCommit.delete(atCommit.keys().next().value as string);
  }
  return text;
}

async function showAtHeadWithGit(workspace: string, commit: string): Promise<string | null> {
  const spec = `${commit}:./${WORKSPACE_HINTS_FILE}`;
  const listed = await runGit(['ls-tree', '-l', '-z', commit, '--', `./${WORKSPACE_HINTS_FILE}`], {
    cwd: workspace,
    timeoutMs: 30_000,
  });
  // `<mode> blob <id> <size>\t<path>`: a link (120000) or a submodule is no hints file
  const entry = /^100(?:644|755) blob [0-9a-f]+ +(\d+)\t/.exec(
    listed.exitCode === 0 ? listed.stdout.toString('utf8') : '',
  );
  if (entry === null || Number(entry[1]) > HINTS_MAX_BYTES) return null;
  const shown = await runGit(['cat-file', 'blob', spec], { cwd: workspace, timeoutMs: 30_000 });
  return shown.exitCode === 0 ? shown.stdout.toString('utf8') : null;
}

/** Reads the working copy's `.gaffer/workspace.json` (bounded: never a FIFO, a device or a link out): the harmless hints, and a warning for everything else (ignored). */
export function readWorkspaceHints(workspace: string): WorkspaceHintsReading {
  const read = readBounded(join(workspace, FILE), { maxBytes: HINTS_MAX_BYTES, within: workspace });
  if (!read.ok) return { hints: {}, warnings: read.missing ? [] : [`${FILE} ${read.why}: ignored`] };
  return parseWorkspaceHints(read.bytes.toString('utf8'));
}

/** The harmless hints in a hints file's text, and a warning for everything else (ignored). */
export function parseWorkspaceHints(text: string): WorkspaceHintsReading {
  const warnings: string[] = [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { hints: {}, warnings: [`${FILE} is not valid JSON: ignored`] };
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return { hints: {}, warnings: [`${FILE} must hold a JSON object: ignored`] };

  const hints: WorkspaceHints = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (key === 'verify') readVerify(value, hints, warnings);
    else if (key === 'spec_lint') readSpecLint(value, hints, warnings);
    else if (key === 'objectives') readObjectives(value, hints, warnings);
    else if (POWER_KEYS.has(key))
      warnings.push(
        `${FILE}: "${key}" ignored — it grants power, so only the data dir's gaffer.config or --config may set it (see docs/config.md)`,
      );
    else
      warnings.push(
        `${FILE}: unknown key "${key}" ignored — a workspace may only hint verify.command, verify.scope, verify.known_failures, spec_lint.ignore and objectives`,
      );
  }
  return { hints, warnings };
}

function readVerify(value: unknown, hints: WorkspaceHints, warnings: string[]): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    warnings.push(`${FILE}: "verify" must be an object like {"command": "npm test"}: ignored`);
    return;
  }
  const verify: NonNullable<WorkspaceHints['verify']> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (key === 'command' && typeof v === 'string' && v.trim() !== '' && v.length <= COMMAND_MAX)
      verify.command = v.trim();
    else if (key === 'scope' && (v === 'related' || v === 'all')) verify.scope = v;
    else if (key === 'known_failures' && isKnownFailures(v)) verify.known_failures = v.map((id) => id.trim());
    else if (key === 'command' || key === 'scope' || key === 'known_failures')
      warnings.push(`${FILE}: verify.${key} must be ${VERIFY_KEY_SHAPES[key]}: ignored`);
    else
      warnings.push(
        `${FILE}: verify.${key} ignored — only verify.command, verify.scope and verify.known_failures are read`,
      );
  }
  if (Object.keys(verify).length > 0) hints.verify = verify;
}

const VERIFY_KEY_SHAPES = {
  command: `a non-empty string up to ${COMMAND_MAX} characters`,
  scope: 'related or all',
  known_failures: `a list of up to ${LIMITS.knownFailures.items} test ids or globs, each a non-empty string up to ${LIMITS.knownFailures.chars} characters`,
} as const;

const isKnownFailures = (v: unknown): v is string[] => knownFailuresList.safeParse(v).success;

function readSpecLint(value: unknown, hints: WorkspaceHints, warnings: string[]): void {
  const ignore = (value as { ignore?: unknown } | null)?.ignore;
  const extra = value !== null && typeof value === 'object' ? Object.keys(value).filter((k) => k !== 'ignore') : [];
  if (typeof value !== 'object' || value === null || Array.isArray(value) || extra.length > 0) {
    // a string here would be the lint mode, which is the config's to set
    warnings.push(
      `${FILE}: spec_lint ${extra.length > 0 ? `key(s) ${extra.join(', ')}` : 'value'} ignored — only spec_lint.ignore (finding codes) is read; the mode comes from the config`,
    );
  }
  if (ignore === undefined) return;
  const codes = Array.isArray(ignore) ? ignore.filter((c): c is LintCode => LINT_CODES.includes(c as LintCode)) : [];
  if (!Array.isArray(ignore) || codes.length !== ignore.length)
    warnings.push(`${FILE}: spec_lint.ignore must list codes among ${LINT_CODES.join(', ')}: unknown ones ignored`);
  if (codes.length > 0) hints.spec_lint = { ignore: codes };
}

function readObjectives(value: unknown, hints: WorkspaceHints, warnings: string[]): void {
  const ok =
    typeof value === 'string' &&
    value.trim() !== '' &&
    !value.startsWith('/') &&
    !value.startsWith('~') &&
    !value.split(/[\\/]/).includes('..');
  if (ok) hints.objectives = value.trim();
  else warnings.push(`${FILE}: objectives must be a path inside the workspace (relative, no ".."): ignored`);
}
