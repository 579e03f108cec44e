import { GafferError } from '../../../domain/errors.js';
import { VERSION } from '../../../version.js';
import { secretPath } from '../../../config/local-secret.js';
import { listNodeCredentials } from '../../../config/node-credentials.js';
import { readHeldEnv } from '../../../platform/process/scrub-env.js';
import { makePrivateDataDir } from '../../../platform/files/data-dir.js';
import type { ClusterSettings } from '../../../engine/execution/bullmq.js';
import { connectionOf, DEFAULT_QUEUE_PREFIX, describeQueue, vetQueuePrefix } from '../../../engine/execution/wire.js';
import { startServer } from '../../http/serve.js';
import { isLoopbackUrl } from '../../../engine/execution/node-check.js';
import { vetServerPort } from '../../../config/network-config.js';
import type { CliContext } from '../cli-context.js';

/** A shutdown must finish within 30 s (spec 02): past that the process exits anyway. */
export const SHUTDOWN_LIMIT_MS = 30_000;

/** `gaffer serve`'s flags. */
export interface ServeFlags {
  host?: string;
  port?: string;
  /** spec 09: the coordinator of a cluster on this Redis. */
  queue?: string;
  /** `runner=N`: attempts of the runner at once across the cluster. */
  runnerLimit?: string[];
  /** The cluster's namespace on the Redis (BullMQ's prefix); one coordinator holds it. */
  queuePrefix?: string;
  /** Seconds a queue entry may wait for a node before it runs nothing. */
  entryTtlS?: string;
  /** The address the nodes reach this coordinator at, when not the one it listens on (`--host 0.0.0.0`, a proxy). */
  advertiseUrl?: string;
}

/** `gaffer serve`: the HTTP API, live events and MCP over HTTP, until SIGTERM/SIGINT; with `--queue`, a cluster's coordinator (spec 09). */
export async function serveCommand(cli: CliContext, flags: ServeFlags): Promise<number> {
  const port = flags.port === undefined ? 7070 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new GafferError('invalid_request', `--port must be 0..65535, got ${JSON.stringify(flags.port)}`, 'port');
  // issue 11: a port forwarded into sandboxes must never be gaffer's own (an OS-chosen one is known once bound)
  if (port !== 0) vetServerPort(cli.config.config, port);
  const cluster = flags.queue === undefined ? undefined : clusterOf(cli, { ...flags, queue: flags.queue });
  const advertised = advertiseUrlOf(flags);
  const engine = await cli.engine(true, cluster);
  const server = await startServer({
    engine,
    host: flags.host ?? '127.0.0.1',
    port,
    tokens: cli.config.config.tokens,
    version: VERSION,
    maxBodyBytes: cli.config.config.server.max_body_bytes,
  });
  engine.cluster?.advertise(advertised ?? server.url);
  try {
    vetServerPort(cli.config.config, Number(new URL(server.url).port));
  } catch (err) {
    await server.close();
    throw err;
  }
  // the handlers first: a supervisor that stops the server the moment it says it serves must get a clean stop, not the signal's default death
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      cli.err(`gaffer: ${signal}: stopping — live jobs' workers are stopped and recorded interrupted`);
      setTimeout(() => process.exit(1), SHUTDOWN_LIMIT_MS).unref();
      server.close().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  cli.err(`gaffer: serving ${server.url} (data dir ${cli.dataDir}); MCP at ${server.url}/mcp`);
  cli.err(`gaffer: the board: ${server.loginUrl} (the login works once; \`gaffer login\` prints a new one)`);
  cli.err(
    `gaffer: the API needs a credential: the gaffer CLI on this machine sends ${secretPath(cli.dataDir)} by itself`,
  );
  if (cluster) {
    const issued = listNodeCredentials(cli.dataDir).filter((c) => c.revoked === null).length;
    cli.err(
      `gaffer: coordinator of the cluster on ${describeQueue(cluster.queue)}, namespace ${cluster.prefix ?? DEFAULT_QUEUE_PREFIX}: start each node with \`${NODE_TOKEN_ENV}=<its credential> gaffer node --queue ${describeQueue(cluster.queue)}${cluster.prefix !== undefined && cluster.prefix !== DEFAULT_QUEUE_PREFIX ? ` --queue-prefix ${cluster.prefix}` : ''}\`, its credential from \`gaffer nodes issue NAME\` here (${issued} issued)`,
    );
    const nodesReach = advertised ?? server.url;
    cli.err(
      isLoopbackUrl(nodesReach)
        ? `gaffer: nodes reach this coordinator at ${nodesReach}, a loopback address: only nodes on this machine can; for nodes on other machines serve with --host ADDRESS --advertise-url http://ADDRESS:PORT`
        : `gaffer: nodes reach this coordinator at ${nodesReach}`,
    );
  }
  await stopped;
  return 0;
}

/** `--advertise-url` checked: an http(s) URL without credentials; required when the bind address names no reachable one (`0.0.0.0`, `::`). */
function advertiseUrlOf(flags: ServeFlags): string | undefined {
  const given = flags.advertiseUrl;
  if (given === undefined) {
    if (flags.queue !== undefined && ['0.0.0.0', '::', '[::]'].includes(flags.host ?? ''))
      throw new GafferError(
        'invalid_request',
        `--host ${flags.host ?? ''} listens on every address but names none a node can reach: give --advertise-url http://<this machine's address>:<port> (what the nodes connect to)`,
        'advertise-url',
      );
    return undefined;
  }
  if (flags.queue === undefined)
    throw new GafferError(
      'invalid_request',
      '--advertise-url is where the nodes of a cluster reach this coordinator: it needs --queue',
      'advertise-url',
    );
  let url: URL | null = null;
  try {
    url = new URL(given);
  } catch {
    // named below
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '')
    throw new GafferError(
      'invalid_request',
      `--advertise-url must be an http(s) URL the nodes reach this coordinator at (http://10.0.0.5:7070), got ${JSON.stringify(given)}`,
      'advertise-url',
    );
  if (url.username !== '' || url.password !== '')
    throw new GafferError(
      'invalid_request',
      `--advertise-url must not hold credentials (every node reads it on the Redis; each node sends its own credential), got ${JSON.stringify(given.replace(/\/\/[^@/]*@/, '//***@'))}`,
      'advertise-url',
    );
  return given.replace(/\/+$/, '');
}

/** `gaffer mcp`: the MCP server on stdio, over this process's engine. */
export async function mcpCommand(cli: CliContext): Promise<number> {
  const engine = await cli.engine(true);
  // loaded here, not by every command: the MCP SDK is large
  const [{ createMcpServer }, { StdioServerTransport }] = await Promise.all([
    import('../../mcp/server.js'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
  ]);
  // stdio: the client that started this process is the local user; its cwd is where it runs
  const server = createMcpServer(engine, { owner: null, cwd: process.cwd() }, VERSION);
  await server.connect(new StdioServerTransport());
  await new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await engine.shutdown('interrupted: the MCP client went away');
  return 0;
}

/** The environment variable a node reads its own credential from (`gaffer nodes issue NAME` on the coordinator prints it). */
export const NODE_TOKEN_ENV = 'GAFFER_NODE_TOKEN';

/** A coordinator's cluster settings from its flags; a shared node token in the environment is refused (each node has its own credential). */
function clusterOf(cli: CliContext, flags: ServeFlags & { queue: string }): ClusterSettings {
  const queue = flags.queue;
  connectionOf(queue); // refused, named, before anything starts
  const prefix = vetQueuePrefix(flags.queuePrefix ?? DEFAULT_QUEUE_PREFIX);
  const ttl = flags.entryTtlS;
  if (ttl !== undefined && (!/^\d+$/.test(ttl) || Number(ttl) < 1 || Number(ttl) > 604_800))
    throw new GafferError(
      'invalid_request',
      `--entry-ttl-s must be 1..604800 (seconds an attempt may wait on the queue), got ${JSON.stringify(ttl)}`,
      'entry-ttl-s',
    );
  const given = readHeldEnv(NODE_TOKEN_ENV) ?? process.env[NODE_TOKEN_ENV];
  // a token every node shared let any node pass for any other: each node has its own credential now
  if (given !== undefined && given !== '')
    throw new GafferError(
      'invalid_request',
      `${NODE_TOKEN_ENV} is set for the coordinator: the shared node token is gone, each node has its own credential — unset it here, run \`gaffer nodes issue NAME\` for each node and give each node what it prints (in its ${NODE_TOKEN_ENV} or --token-file)`,
      NODE_TOKEN_ENV,
    );
  const runnerLimits = parseRunnerLimits(flags.runnerLimit ?? []);
  makePrivateDataDir(cli.dataDir);
  return {
    queue,
    limits: runnerLimits,
    prefix,
    ...(ttl !== undefined ? { entryTtlS: Number(ttl) } : {}),
    say: (line) => cli.err(`gaffer: ${line}`),
  };
}

/** `--runner-limit shell=4` (repeatable) as runner → limit. */
export function parseRunnerLimits(values: readonly string[]): Record<string, number> {
  const limits: Record<string, number> = {};
  for (const value of values) {
    const m = /^([a-z][a-z0-9_-]*)=(\d+)$/.exec(value);
    const n = m ? Number(m[2]) : NaN;
    if (!m || !Number.isInteger(n) || n < 1 || n > 10_000)
      throw new GafferError(
        'invalid_request',
        `--runner-limit must be RUNNER=N with N 1..10000 (shell=4), got ${JSON.stringify(value)}`,
        'runner-limit',
      );
    limits[m[1] as string] = n;
  }
  return limits;
}
