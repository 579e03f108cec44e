import { GafferError } from '../../../domain/errors.js';
import { VERSION } from '../../../version.js';
import { secretPath } from '../../../config/local-secret.js';
import { startServer } from '../../http/serve.js';
import { vetServerPort } from '../../../config/network-config.js';
import type { CliContext } from '../cli-context.js';

/** A shutdown must finish within 30 s (spec 02): past that the process exits anyway. */
export const SHUTDOWN_LIMIT_MS = 30_000;

/** `gaffer serve`: the HTTP API, live events and MCP over HTTP, until SIGTERM/SIGINT. */
export async function serveCommand(cli: CliContext, flags: { host?: string; port?: string }): Promise<number> {
  const port = flags.port === undefined ? 7070 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new GafferError('invalid_request', `--port must be 0..65535, got ${JSON.stringify(flags.port)}`, 'port');
  // issue 11: a port forwarded into sandboxes must never be gaffer's own (an OS-chosen one is known once bound)
  if (port !== 0) vetServerPort(cli.config.config, port);
  const engine = await cli.engine(true);
  const server = await startServer({ engine, host: flags.host ?? '127.0.0.1', port, tokens: cli.config.config.tokens, version: VERSION, maxBodyBytes: cli.config.config.server.max_body_bytes });
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
  cli.err(`gaffer: the API needs a credential: the gaffer CLI on this machine sends ${secretPath(cli.dataDir)} by itself`);
  await stopped;
  return 0;
}

/** `gaffer mcp`: the MCP server on stdio, over this process's engine. */
export async function mcpCommand(cli: CliContext): Promise<number> {
  const engine = await cli.engine(true);
  // loaded here, not by every command: the MCP SDK is large
  const [{ createMcpServer }, { StdioServerTransport }] = await Promise.all([import('../../mcp/server.js'), import('@modelcontextprotocol/sdk/server/stdio.js')]);
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
