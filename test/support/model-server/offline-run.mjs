#!/usr/bin/env node
// Runs a command inside a loopback-only network namespace, with 127.0.0.1:<port> bridged to the model server's unix socket.
// Start it as: unshare -n -- node offline-run.mjs --socket <path> [--port 8080] -- <command> [args...]
// (unshare -rn when not root). Plain JS on purpose: it runs before any TypeScript loader, inside the namespace.
import { execFileSync, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { constants, networkInterfaces } from 'node:os';

const argv = process.argv.slice(2);
const split = argv.indexOf('--');
const options = split < 0 ? argv : argv.slice(0, split);
const command = split < 0 ? [] : argv.slice(split + 1);
const option = (name) => {
  const at = options.indexOf(name);
  return at < 0 ? undefined : options[at + 1];
};
const socketPath = option('--socket');
const port = Number(option('--port') ?? 8080);
if (!socketPath || command.length === 0 || !Number.isInteger(port)) {
  console.error('usage: offline-run.mjs --socket <path> [--port N] -- <command> [args...]');
  process.exit(2);
}

// check before touching anything: in a fresh namespace no interface has an address yet (lo is down)
const outside = Object.keys(networkInterfaces()).filter((name) => name !== 'lo');
if (outside.length > 0) {
  // refuse rather than let a CLI phone home through a real interface
  console.error(
    `offline-run: not a loopback-only namespace (interfaces: ${outside.join(', ')}); start it under \`unshare -n\``,
  );
  process.exit(2);
}
try {
  execFileSync('ip', ['link', 'set', 'lo', 'up'], { stdio: 'ignore' });
} catch (error) {
  console.error(`offline-run: cannot bring lo up (${error.message}); is this inside \`unshare -n\`?`);
  process.exit(2);
}

const bridge = createServer((client) => {
  const upstream = connect(socketPath);
  client.pipe(upstream).pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
bridge.listen(port, '127.0.0.1', () => {
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    console.error(`offline-run: cannot start ${command[0]}: ${error.message}`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    bridge.close();
    process.exit(code ?? 128 + (constants.signals[signal] ?? 15));
  });
});
