import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { GafferError } from '../../../domain/errors.js';
import { WorkerNode } from '../../../engine/execution/node.js';
import { connectionOf, DEFAULT_QUEUE_PREFIX, describeQueue, vetQueuePrefix } from '../../../engine/execution/wire.js';
import { readHeldEnv } from '../../../platform/process/scrub-env.js';
import { credentialName } from '../../../config/node-credentials.js';
import type { CliContext } from '../cli-context.js';
import { NODE_TOKEN_ENV, SHUTDOWN_LIMIT_MS } from './serve.js';

/** `gaffer node`'s flags (spec 09). */
export interface NodeFlags {
  queue?: string;
  /** Comma-separated runner keys. */
  runners?: string;
  slots?: string;
  workDir?: string;
  name?: string;
  tokenFile?: string;
  coordinator?: string;
  stallS?: string;
  queuePrefix?: string;
}

/** The runners a node offers when `--runners` names none. */
const DEFAULT_RUNNERS = ['shell', 'builtin'];

/**
 * `gaffer node --queue redis://…`: a worker node of a coordinator's cluster (spec 09), taking
 * attempts for its runners until SIGTERM/SIGINT — then it takes no more, lets the running ones
 * finish, and exits.
 */
export async function nodeCommand(cli: CliContext, flags: NodeFlags): Promise<number> {
  if (flags.queue === undefined)
    throw new GafferError(
      'invalid_request',
      '--queue is required: the Redis URL the coordinator (gaffer serve --queue) uses',
      'queue',
    );
  connectionOf(flags.queue);
  const keys = (flags.runners ?? DEFAULT_RUNNERS.join(','))
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (keys.length === 0)
    throw new GafferError('invalid_request', '--runners names no runner (shell,builtin,claude,…)', 'runners');
  const runners = cli.nodeRunners(keys);
  const unknown = keys.filter((k) => !runners.has(k));
  if (unknown.length > 0)
    throw new GafferError(
      'unknown_runner',
      `--runners: no runner ${unknown.map((k) => JSON.stringify(k)).join(', ')} in this build (gaffer runners lists them)`,
      'runners',
    );
  const slots = intFlag(flags.slots, cli.config.config.workers.max_parallel, 1, 64, 'slots');
  const stallS = intFlag(flags.stallS, 30, 2, 3_600, 'stall-s');
  const prefix = vetQueuePrefix(flags.queuePrefix ?? DEFAULT_QUEUE_PREFIX);
  const token = nodeToken(flags.tokenFile);
  const name = credentialName(token);
  if (name === null)
    throw new GafferError(
      'invalid_request',
      `${flags.tokenFile !== undefined ? '--token-file' : NODE_TOKEN_ENV} holds no node credential (NAME.SECRET): each node has its own now, the shared node token is refused — run \`gaffer nodes issue NAME\` on the coordinator and give this node what it prints`,
      'token-file',
    );
  if (flags.name !== undefined && flags.name !== name)
    throw new GafferError(
      'invalid_request',
      `--name ${flags.name} is not the node its credential names (${name}): leave --name out, or issue ${flags.name} a credential with gaffer nodes issue ${flags.name}`,
      'name',
    );
  if (flags.coordinator !== undefined && !/^https?:\/\//.test(flags.coordinator))
    throw new GafferError(
      'invalid_request',
      `--coordinator must be an http(s) URL, got ${JSON.stringify(flags.coordinator)}`,
      'coordinator',
    );
  // each line of a node's log starts with the ISO time: a node's story is read against the coordinator's
  const log = (line: string) => cli.err(`${new Date().toISOString()} ${line}`);
  const workDir = resolve(flags.workDir ?? join(cli.dataDir, 'node'));
  const node = await WorkerNode.start({
    queue: flags.queue,
    runners,
    slots,
    workDir,
    token,
    prefix,
    stallMs: stallS * 1000,
    name,
    coordinator: flags.coordinator ?? null,
    install: cli.config.config.worktrees.install['*'] ?? null,
    deps: cli.config.config.worktrees.deps,
    say: (line) => log(`gaffer node: ${line}`),
  });
  const stopped = new Promise<void>((resolveStop) => {
    const stop = (signal: string) => {
      log(`gaffer node ${node.name}: ${signal}: taking no more attempts; the running ones finish first`);
      setTimeout(() => process.exit(1), SHUTDOWN_LIMIT_MS).unref();
      node.close().then(resolveStop, resolveStop);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  log(
    `gaffer node ${node.name}: taking ${[...runners.keys()].join(', ')} attempts from ${describeQueue(flags.queue)} (namespace ${prefix}), ${slots} at once per runner; work dir ${workDir}`,
  );
  await stopped;
  return 0;
}

/** This node's credential: `--token-file`, else `GAFFER_NODE_TOKEN`. */
function nodeToken(file: string | undefined): string {
  const token =
    file !== undefined
      ? readFileSync(file, 'utf8').trim()
      : (readHeldEnv(NODE_TOKEN_ENV) ?? process.env[NODE_TOKEN_ENV]);
  if (token === undefined || token === '') {
    throw new GafferError(
      'invalid_request',
      `a node needs its own credential from the coordinator (\`gaffer nodes issue NAME\` there prints it): set ${NODE_TOKEN_ENV}, or --token-file FILE`,
      'token-file',
    );
  }
  return token;
}

function intFlag(raw: string | undefined, fallback: number, min: number, max: number, name: string): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max)
    throw new GafferError('invalid_request', `--${name} must be ${min}..${max}, got ${JSON.stringify(raw)}`, name);
  return n;
}
