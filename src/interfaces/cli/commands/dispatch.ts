import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { yaml } from '../../../platform/files/yaml.js';
import { GafferError } from '../../../domain/errors.js';
import type { CompactJob } from '../../../engine/queries/compact.js';
import { watchToEnd } from './watch.js';
import { renderCompact } from '../render.js';
import type { CliContext } from '../cli-context.js';

/** Flags of `gaffer dispatch`: every request field has a kebab-case flag. */
export interface DispatchFlags {
  workspace?: string;
  /** spec 09: a remote repository instead of a workspace, and its ref. */
  repo?: string;
  ref?: string;
  task?: string[];
  name?: string;
  files?: string[];
  command?: string;
  runner?: string;
  model?: string;
  title?: string;
  context?: string;
  parallel?: boolean;
  verify?: string;
  /** Issue 33: `verify.known_failures`, repeatable. */
  knownFailure?: string[];
  verifyScope?: string;
  verifyTimeoutS?: string;
  fixRounds?: string;
  expect?: string;
  criteria?: string[];
  timeoutS?: string;
  maxRounds?: string;
  isolation?: string;
  approval?: string;
  idempotencyKey?: string;
  wait?: boolean;
  /** What exit 0 asks of the ended job: `done` (the default) or `proved`. */
  require?: string;
}

/** `--require`: exit 0 only when the job ended `done`, or also with the proof `proved` (for scripts). */
export const REQUIRE_VALUES = ['done', 'proved'] as const;
type Requirement = (typeof REQUIRE_VALUES)[number];

/** `gaffer dispatch [FILE|-]`: submits the job; in process (no server) it runs here and waits. Returns the exit code. */
export async function dispatchCommand(
  cli: CliContext,
  file: string | undefined,
  flags: DispatchFlags,
): Promise<number> {
  const requirement = parseRequirement(flags.require);
  const body = buildRequest(file, flags);
  const api = await cli.api();
  const { job, created } = await api.submit(body, flags.idempotencyKey ?? null);
  cli.err(
    `gaffer: job ${job.id} ${created ? 'accepted' : 'already exists for this idempotency key'} (${job.tasks.length} task${job.tasks.length === 1 ? '' : 's'} in ${job.workspace})`,
  );
  // an exit code that judges the end needs the end: --require waits like --wait
  if (api.engine === null && !flags.wait && flags.require === undefined) {
    // a server runs it: answer at once
    cli.out(cli.json ? JSON.stringify(job, null, 2) : renderCompact(job));
    return 0;
  }

  const final = await watchToEnd(cli, api, job);
  cli.out(cli.json ? JSON.stringify(final, null, 2) : renderCompact(final));
  const unmet = unmetRequirement(final, requirement);
  if (unmet !== null) {
    if (flags.require !== undefined) cli.err(`gaffer: --require ${requirement}: ${unmet} — exit 1`);
    return 1;
  }
  return 0;
}

function parseRequirement(value: string | undefined): Requirement {
  if (value === undefined) return 'done';
  if ((REQUIRE_VALUES as readonly string[]).includes(value)) return value as Requirement;
  throw new GafferError('invalid_request', `--require must be proved or done, got ${JSON.stringify(value)}`, 'require');
}

/** Why the ended job does not meet the requirement, or null when it does (`proved` also needs `done`). */
function unmetRequirement(job: CompactJob, requirement: Requirement): string | null {
  if (job.status !== 'done') return `the job ended ${job.status}`;
  if (requirement === 'done') return null;
  const proof = job.result?.proof?.verdict ?? 'missing';
  return proof === 'proved' ? null : `the proof is ${proof}`;
}

/** The request from a file (JSON or YAML), stdin (`-`), and flags; flags override the file's values; a relative workspace is made absolute from the current directory. */
export function buildRequest(file: string | undefined, flags: DispatchFlags): Record<string, unknown> {
  const fromFile = file === undefined ? {} : readRequestFile(file);
  const body: Record<string, unknown> = { ...fromFile };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  const int = (flag: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n))
      throw new GafferError(
        'invalid_request',
        `--${flag} must be a whole number, got ${JSON.stringify(value)}`,
        flag.replace(/-/g, '_'),
      );
    return n;
  };
  set('workspace', flags.workspace);
  // relative to where the user stands, whichever way it came: the server, when one runs the job, has
  // another working directory and refuses a relative one (a leading ~ is left for it to refuse, naming it)
  if (
    typeof body.workspace === 'string' &&
    body.workspace !== '' &&
    !isAbsolute(body.workspace) &&
    !body.workspace.startsWith('~')
  )
    body.workspace = resolve(body.workspace);
  if (flags.ref !== undefined && flags.repo === undefined)
    throw new GafferError('invalid_request', '--ref names a ref of --repo: give --repo URL too', 'ref');
  if (flags.repo !== undefined) body.repo = { url: flags.repo, ...(flags.ref !== undefined ? { ref: flags.ref } : {}) };
  set('runner', flags.runner);
  set('model', flags.model);
  set('title', flags.title);
  set('context', flags.context);
  set('parallel', flags.parallel);
  set('verify', flags.verify);
  if (flags.knownFailure !== undefined) {
    // the object form of `verify`: the command (flag, file or auto) with the known failures beside it
    const given: unknown = body.verify;
    const command = typeof given === 'object' && given !== null ? (given as { command?: unknown }).command : given;
    const fromFile =
      typeof given === 'object' && given !== null ? ((given as { known_failures?: unknown }).known_failures ?? []) : [];
    body.verify = {
      ...(command !== undefined ? { command } : {}),
      known_failures: [...(Array.isArray(fromFile) ? fromFile : []), ...flags.knownFailure],
    };
  }
  set('verify_scope', flags.verifyScope);
  set('verify_timeout_s', int('verify-timeout-s', flags.verifyTimeoutS));
  set('fix_rounds', int('fix-rounds', flags.fixRounds));
  set('expected_output_contains', flags.expect);
  set('criteria', flags.criteria);
  set('timeout_s', int('timeout-s', flags.timeoutS));
  set('max_rounds', int('max-rounds', flags.maxRounds));
  set('isolation', flags.isolation);
  set('approval', flags.approval);
  if (flags.task && flags.task.length > 0) {
    const tasks = flags.task.map((instruction, i) => {
      const task: Record<string, unknown> = { instruction };
      if (flags.name !== undefined)
        task.name = flags.task && flags.task.length > 1 ? `${flags.name}-${i + 1}` : flags.name;
      if (flags.files !== undefined) task.files = flags.files;
      if (flags.command !== undefined) task.command = flags.command;
      return task;
    });
    body.tasks = [...(Array.isArray(fromFile.tasks) ? (fromFile.tasks as unknown[]) : []), ...tasks];
  } else if (flags.command !== undefined && body.tasks === undefined) {
    // `--command` alone: the command is the task
    body.tasks = [
      {
        instruction: flags.command,
        command: flags.command,
        ...(flags.name ? { name: flags.name } : {}),
        ...(flags.files ? { files: flags.files } : {}),
      },
    ];
  }
  if (body.workspace === undefined && body.repo === undefined)
    throw new GafferError(
      'invalid_request',
      'workspace: required — give --workspace DIR (or --repo URL for a cluster) or a request file',
      'workspace',
    );
  if (body.tasks === undefined)
    throw new GafferError(
      'invalid_request',
      'tasks: required — give --task "…" (with --command for the shell runner) or a request file',
      'tasks',
    );
  return body;
}

function readRequestFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new GafferError(
      'invalid_request',
      `cannot read the request ${file === '-' ? 'from stdin' : `file ${file}`}: ${(err as Error).message}`,
      'file',
    );
  }
  let parsed: unknown;
  try {
    parsed = /\.ya?ml$/i.test(file) || !text.trimStart().startsWith('{') ? yaml().parse(text) : JSON.parse(text);
  } catch (err) {
    throw new GafferError(
      'invalid_request',
      `the request ${file === '-' ? 'on stdin' : `in ${file}`} is not valid JSON or YAML: ${(err as Error).message}`,
      'file',
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new GafferError('invalid_request', 'the request must be an object with `workspace` and `tasks`', 'file');
  }
  return parsed as Record<string, unknown>;
}
