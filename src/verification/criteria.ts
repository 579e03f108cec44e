import { existsSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { formatOfPath, parseCriterion, type CriterionForm, type ParseFormat } from '../domain/criterion-forms.js';
import type { JobSpec } from '../domain/request.js';
import type { CriteriaCheckJson, CriterionDetail, VerificationJson } from '../domain/result.js';
import type { ChangeSet } from '../evidence/types.js';
import { checkFile } from './outputs.js';
import type { SandboxNetwork } from '../platform/sandbox/network.js';
import type { Sandbox } from '../platform/sandbox/sandbox.js';
import { processHooksFor, runSuite, type SuiteProcessHooks, type SuiteRun } from './run-suite.js';
import type { CheckRunHooks } from './verify.js';
import { readBounded } from '../platform/files/bounded-read.js';

/** A "PATH contains TEXT" file above this is not read (unchecked). */
const CONTAINS_CAP = 10 * 1024 * 1024;
/** Most entries looked at to resolve a bare file name ("api.ts") to the one file of that name. */
const RESOLVE_ENTRIES_CAP = 20_000;
// folders a bare name is never resolved into: dependencies and tool caches, not the project's files
const RESOLVE_SKIP = new Set([
  '.git',
  'node_modules',
  '.venv',
  'venv',
  'target',
  '__pycache__',
  '.tox',
  '.pytest_cache',
  '.mypy_cache',
]);
/** Output of a failed command criterion kept in its `why`. */
const WHY_CHARS = 160;

/** What checking criteria needs: what the job observed, and where and how to run a command criterion. */
export interface CriteriaInput {
  /** Job criteria, listed as written. */
  criteria: readonly string[];
  /** Per-task criteria, listed as `task: criterion`. */
  taskCriteria?: readonly { task: string; criteria: readonly string[] }[];
  /** The workers' full change set (the verification's own writes left out); null when none was taken. */
  changeSet: ChangeSet | null;
  verification: VerificationJson | null;
  workspace: string;
  /** Run command criteria under the workers' sandbox when they ran sandboxed: the engine's, or true for bubblewrap under `auto`. */
  sandbox: boolean | Sandbox;
  /** Their network in the sandbox, as the verification's; default `none`. */
  network?: SandboxNetwork;
  /** Per command criterion. */
  timeoutS: number;
  signal: AbortSignal;
  /** Where command criteria write their logs (`criterion-N.log`). */
  workDir: string;
  /** Told when each command criterion starts and ends (issue 33). */
  onRun?: CheckRunHooks;
  /** Told of each command criterion's process group while it lives. */
  processes?: SuiteProcessHooks;
  /** The job's own workspace when `workspace` is a worktree: only its dependency folders are bound (run-suite.ts). */
  dependencyRoot?: string;
}

/** One criterion's check. */
interface Outcome {
  result: 'met' | 'unmet' | 'unchecked';
  why?: string;
}

/**
 * Checks criteria against what the job observed (spec 03 "Job criteria"), never a worker's words:
 * each is met only by the mechanical check its form asks for (see domain/criterion-forms.ts);
 * a criterion of no known form is `unchecked`. Unmet ones, and recognized ones that could not be
 * checked, say why in `details`.
 */
export async function checkCriteria(input: CriteriaInput): Promise<CriteriaCheckJson> {
  const check: CriteriaCheckJson = { complete: false, met: [], unmet: [], unchecked: [] };
  const details: CriterionDetail[] = [];
  const listed = [
    ...input.criteria.map((text) => ({ text, label: text })),
    ...(input.taskCriteria ?? []).flatMap((t) => t.criteria.map((text) => ({ text, label: `${t.task}: ${text}` }))),
  ];
  const workspace = new WorkspaceView(input.workspace, input.changeSet);
  let commands = 0;
  for (const { text, label } of listed) {
    const form = parseCriterion(text);
    const outcome: Outcome =
      form === null
        ? { result: 'unchecked' }
        : form.kind === 'command'
          ? await runCommand(form.command, input, commands++)
          : checkForm(form, workspace, input.verification);
    check[outcome.result].push(label);
    if (form !== null && outcome.result !== 'met' && outcome.why !== undefined)
      details.push({ criterion: label, check: form.kind, why: outcome.why });
  }
  check.complete = check.unmet.length === 0 && check.unchecked.length === 0;
  return details.length > 0 ? { ...check, details } : check;
}

/** The job's and its tasks' criteria checked together, or null when the request declares none. */
export async function checkJobCriteria(
  spec: Pick<JobSpec, 'criteria' | 'tasks' | 'workspace' | 'verify_timeout_s'>,
  observed: Omit<CriteriaInput, 'criteria' | 'taskCriteria' | 'workspace' | 'timeoutS'>,
): Promise<CriteriaCheckJson | null> {
  const taskCriteria = spec.tasks
    .filter((t) => t.criteria.length > 0)
    .map((t) => ({ task: t.name, criteria: t.criteria }));
  if (spec.criteria.length === 0 && taskCriteria.length === 0) return null;
  return checkCriteria({
    ...observed,
    criteria: spec.criteria,
    taskCriteria,
    workspace: spec.workspace,
    timeoutS: spec.verify_timeout_s,
  });
}

function checkForm(
  form: Exclude<CriterionForm, { kind: 'command' }>,
  ws: WorkspaceView,
  v: VerificationJson | null,
): Outcome {
  switch (form.kind) {
    case 'tests_pass':
      if (v?.ok === true && !v.inconclusive) return { result: 'met' };
      if (v?.ok === false && !v.inconclusive)
        return { result: 'unmet', why: `verification failed: ${v.summary}`.slice(0, WHY_CHARS) };
      return {
        result: 'unchecked',
        why: v === null || !v.ran ? 'no verification ran' : 'the verification was inconclusive',
      };
    case 'changes':
    case 'unchanged':
      return all(form.paths, (p) => checkChange(ws, p, form.kind === 'changes'));
    case 'contains':
      return checkContains(ws, form.path, form.text, form.negated);
    case 'exists':
      return all(form.paths, (p) => checkExists(ws, p, form.created));
    case 'absent':
      return all(form.paths, (p) => checkAbsent(ws, p));
    case 'parses':
      return checkParses(ws, form.path, form.format);
  }
}

/** Every path's outcome together: unmet if any is unmet, else unchecked if any is, else met. */
function all(paths: readonly string[], one: (path: string) => Outcome): Outcome {
  const outcomes = paths.map(one);
  return (
    outcomes.find((o) => o.result === 'unmet') ?? outcomes.find((o) => o.result === 'unchecked') ?? { result: 'met' }
  );
}

function checkChange(ws: WorkspaceView, path: string, mustChange: boolean): Outcome {
  if (ws.changeSet === null) return { result: 'unchecked', why: 'no change set was observed' };
  const target = ws.resolve(path);
  if (target.kind === 'ambiguous') {
    // whichever file was meant, none of that name changed: that much is certain
    if (!ws.changed.some((c) => target.candidates.includes(c)))
      return mustChange ? { result: 'unmet', why: `no file named ${path} changed` } : { result: 'met' };
    return { result: 'unchecked', why: target.why };
  }
  const changed = ws.changedUnder(target.path);
  if (mustChange)
    return changed.length > 0
      ? { result: 'met' }
      : {
          result: 'unmet',
          why: `${target.path} is not in the changes${target.onDisk ? '' : ' (no such path in the workspace)'}`,
        };
  if (changed.length > 0)
    return {
      result: 'unmet',
      why: `${changed.slice(0, 3).join(', ')}${changed.length > 3 ? ` +${changed.length - 3} more` : ''} changed`,
    };
  // a path that never existed is "unchanged" only by accident: most likely it names the wrong place
  return target.onDisk
    ? { result: 'met' }
    : { result: 'unchecked', why: `no such path in the workspace: ${target.path} (paths are from the workspace root)` };
}

function checkContains(ws: WorkspaceView, path: string, text: string, negated: boolean): Outcome {
  const target = ws.resolve(path);
  if (target.kind === 'ambiguous') return { result: 'unchecked', why: target.why };
  const abs = join(ws.root, target.path);
  let content: string;
  try {
    const stat = lstatSync(abs);
    if (!stat.isFile()) return { result: 'unchecked', why: `${target.path} is not a file` };
    if (stat.size > CONTAINS_CAP)
      return { result: 'unchecked', why: `${target.path} is too large to read (${stat.size} bytes)` };
    // the lstat above and this open are apart: the open neither follows a link nor waits on a FIFO (issue 32)
    const read = readBounded(abs, { maxBytes: CONTAINS_CAP });
    if (!read.ok)
      return read.missing
        ? { result: 'unmet', why: `${target.path} does not exist` }
        : { result: 'unchecked', why: `${target.path}: ${read.why}` };
    content = read.bytes.toString('utf8');
  } catch {
    return { result: 'unmet', why: `${target.path} does not exist` };
  }
  const found = content.includes(text);
  if (found === !negated) return { result: 'met' };
  return { result: 'unmet', why: `${target.path} ${negated ? 'contains' : 'does not contain'} "${text.slice(0, 60)}"` };
}

function checkExists(ws: WorkspaceView, path: string, created: boolean): Outcome {
  const target = ws.resolve(path);
  if (target.kind === 'ambiguous') return { result: 'unchecked', why: target.why };
  if (!existsSync(join(ws.root, target.path))) return { result: 'unmet', why: `${target.path} does not exist` };
  if (!created) return { result: 'met' };
  if (ws.changeSet === null) return { result: 'unchecked', why: 'no change set was observed' };
  // "is created": written by the workers — a file that was already there untouched is not
  return ws.changedUnder(target.path).length > 0
    ? { result: 'met' }
    : { result: 'unmet', why: `${target.path} was already there and the workers did not write it` };
}

function checkAbsent(ws: WorkspaceView, path: string): Outcome {
  const target = ws.resolve(path);
  if (target.kind === 'ambiguous') return { result: 'unchecked', why: target.why };
  return existsSync(join(ws.root, target.path))
    ? { result: 'unmet', why: `${target.path} still exists` }
    : { result: 'met' };
}

function checkParses(ws: WorkspaceView, path: string, named: ParseFormat | null): Outcome {
  const target = ws.resolve(path);
  if (target.kind === 'ambiguous') return { result: 'unchecked', why: target.why };
  const format = named ?? formatOfPath(target.path);
  if (format === null)
    return { result: 'unchecked', why: `${target.path}: no format gaffer parses (json, yaml, toml)` };
  const problem = checkFile(join(ws.root, target.path), format);
  return problem === null ? { result: 'met' } : { result: 'unmet', why: `${target.path} ${problem}` };
}

async function runCommand(command: string, input: CriteriaInput, index: number): Promise<Outcome> {
  if (input.signal.aborted) return { result: 'unchecked', why: 'the job was cancelled before it ran' };
  mkdirSync(input.workDir, { recursive: true });
  input.onRun?.start('criterion', command);
  const run = await runSuite({
    command,
    cwd: input.workspace,
    kind: null,
    timeoutMs: input.timeoutS * 1000,
    signal: input.signal,
    logFile: join(input.workDir, `criterion-${index + 1}.log`),
    sandbox: input.sandbox,
    ...(input.network ? { network: input.network } : {}),
    ...(input.dependencyRoot ? { dependencyRoot: input.dependencyRoot } : {}),
    ...processHooksFor(input.processes, `criterion-${index + 1}`),
  });
  const outcome = readCommandRun(run, input);
  input.onRun?.end({
    what: 'criterion',
    command,
    durationMs: run.durationMs,
    summary: outcome.result === 'met' ? 'met' : `${outcome.result}: ${outcome.why ?? ''}`,
  });
  return outcome;
}

function readCommandRun(run: SuiteRun, input: CriteriaInput): Outcome {
  if (run.isCancelled) return { result: 'unchecked', why: 'the job was cancelled while it ran' };
  if (run.cause !== null) return { result: 'unmet', why: `could not start: ${run.cause}`.slice(0, WHY_CHARS) };
  if (run.timedOut) return { result: 'unmet', why: `timed out after ${input.timeoutS} s` };
  if (run.exitCode === 0) return { result: 'met' };
  const ended =
    run.signal !== null
      ? `killed by ${run.signal}`
      : `exit ${run.exitCode ?? 'unknown'}${run.exitCode === 127 ? ' (command not found)' : ''}`;
  const line = lastLine(run.tail);
  return { result: 'unmet', why: `${ended}${line === '' ? '' : `: ${line}`}`.slice(0, WHY_CHARS) };
}

function lastLine(text: string): string {
  return (text.trimEnd().split('\n').at(-1) ?? '').trim();
}

type Target =
  { kind: 'path'; path: string; onDisk: boolean } | { kind: 'ambiguous'; candidates: string[]; why: string };

/** The workspace as the criteria see it: the files now, the observed changes, and bare names resolved. */
class WorkspaceView {
  readonly root: string;
  readonly changeSet: ChangeSet | null;
  readonly changed: string[];
  #byName: Map<string, string[]> | null | undefined;

  constructor(root: string, changeSet: ChangeSet | null) {
    this.root = root;
    this.changeSet = changeSet;
    this.changed = changeSet ? [...changeSet.added, ...changeSet.modified, ...changeSet.deleted] : [];
  }

  /** Changed paths that are `path` or under the folder `path` (never a suffix match). */
  changedUnder(path: string): string[] {
    return this.changed.filter((c) => c === path || c.startsWith(`${path}/`));
  }

  /**
   * A criterion's path: as written when it has a folder part or exists at the root; a bare file
   * name ("api.ts") only when exactly one file of that name exists or changed anywhere.
   */
  resolve(written: string): Target {
    const path = written.replace(/\/$/, '');
    if (path !== written)
      return { kind: 'path', path, onDisk: this.#exists(path) || this.changedUnder(path).length > 0 };
    const here = this.#exists(path) || this.changedUnder(path).length > 0;
    if (path.includes('/') || here) return { kind: 'path', path, onDisk: here };
    const names = this.#names();
    if (names === null)
      return {
        kind: 'ambiguous',
        candidates: this.changed.filter((c) => c.endsWith(`/${path}`)),
        why: `${path}: too many files to find the one of that name; give its folder`,
      };
    const candidates = [
      ...new Set([...(names.get(path) ?? []), ...this.changed.filter((c) => c.endsWith(`/${path}`))]),
    ].sort();
    if (candidates.length === 1) return { kind: 'path', path: candidates[0] as string, onDisk: true };
    if (candidates.length === 0) return { kind: 'path', path, onDisk: false };
    return {
      kind: 'ambiguous',
      candidates,
      why: `${candidates.length} files are named ${path} (${candidates.slice(0, 3).join(', ')}${candidates.length > 3 ? ', …' : ''}); give its folder`,
    };
  }

  #exists(path: string): boolean {
    try {
      lstatSync(join(this.root, path));
      return true;
    } catch {
      return false;
    }
  }

  /** Every file by its bare name (dependency folders left out); null when there are too many to look at. */
  #names(): Map<string, string[]> | null {
    if (this.#byName !== undefined) return this.#byName;
    const byName = new Map<string, string[]>();
    let seen = 0;
    const walk = (dir: string, rel: string): boolean => {
      let entries;
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        return true;
      }
      for (const entry of entries) {
        if (++seen > RESOLVE_ENTRIES_CAP) return false;
        const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
        if (entry.isDirectory()) {
          if (!RESOLVE_SKIP.has(entry.name) && !walk(join(dir, entry.name), path)) return false;
        } else {
          byName.set(entry.name, [...(byName.get(entry.name) ?? []), path]);
        }
      }
      return true;
    };
    this.#byName = walk(this.root, '') ? byName : null;
    return this.#byName;
  }
}
