'use strict';
// A sandboxed run's network (see network.ts), in two roles of one small process.
//
//   net-run.cjs outside [--run-dir DIR [--resolv-conf]] [--forward PORT...] [--slirp4netns PATH [--userns]] -- bwrap ...
//     On the host: makes DIR (0700, bound into the sandbox; removed after the run) and writes
//     DIR/resolv.conf naming slirp4netns's resolver when asked; for forwarded ports, runs bwrap
//     with an IPC channel (node's, a socketpair) and relays each connection the inside hands over
//     on it to the host's 127.0.0.1:PORT; with slirp4netns, runs bwrap with --info-fd 3
//     --block-fd 4, attaches slirp4netns to the sandbox's network namespace and only then lets
//     the command start. Passes bwrap's exit code or signal through.
//   net-run.cjs inside --forward PORT... -- command ...
//     Inside the sandbox's namespace: listens on 127.0.0.1:PORT (and [::1]:PORT) and hands each
//     connection, as it is, to the outside over the IPC channel; then runs the command and passes
//     its exit code or signal through.
//
// No unix socket is made or connected inside (issue 32: the sandbox's seccomp filter refuses
// socket(AF_UNIX); a connected socket passes over the inherited channel with SCM_RIGHTS, and the
// bytes are relayed outside). The channel's fd is not passed on to the command (node opens it
// close-on-exec and drops NODE_CHANNEL_FD from its environment).
//
// Plain CommonJS: it starts before any loader, inside a sandbox that sees only gaffer's files.
// It never leaves the run's process group (the engine kills the group; bwrap's
// --die-with-parent ends the sandbox when this process dies).
const { spawn } = require('node:child_process');
const { mkdirSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const net = require('node:net');
const { constants } = require('node:os');
const { join } = require('node:path');

/** bwrap's child must be in its namespace and slirp4netns configured within this, ms. */
const READY_TIMEOUT_MS = 10_000;
/** How long slirp4netns gets to exit after the sandbox ended, ms. */
const SLIRP_EXIT_MS = 2_000;
/** The exit code when the network could not be set up (the command never started). */
const NETWORK_FAILED = 125;
const FORWARDED_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

function parseArgs(argv) {
  const split = argv.indexOf('--');
  const options = split < 0 ? argv : argv.slice(0, split);
  const opts = {
    role: options[0],
    runDir: null,
    ports: [],
    resolvConf: false,
    slirp: null,
    userns: false,
    command: split < 0 ? [] : argv.slice(split + 1),
  };
  for (let i = 1; i < options.length; i++) {
    const flag = options[i];
    if (flag === '--run-dir') opts.runDir = options[++i];
    else if (flag === '--forward') opts.ports.push(Number(options[++i]));
    else if (flag === '--slirp4netns') opts.slirp = options[++i];
    else if (flag === '--userns') opts.userns = true;
    else if (flag === '--resolv-conf') opts.resolvConf = true;
    else fail(`unknown option ${flag}`, 2);
  }
  if (
    opts.command.length === 0 ||
    (opts.resolvConf && !opts.runDir) ||
    opts.ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)
  ) {
    fail(
      'usage: net-run.cjs outside|inside [--run-dir DIR [--resolv-conf]] [--forward PORT...] [--slirp4netns PATH [--userns]] -- command...',
      2,
    );
  }
  return opts;
}

function fail(message, code = NETWORK_FAILED) {
  process.stderr.write(`gaffer sandbox network: ${message}\n`);
  process.exit(code);
}

/** Joins two sockets both ways, half-closes passed on; either one failing ends both. */
function pipeBoth(a, b) {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end);
  b.on('error', end);
  a.on('close', () => b.end());
  b.on('close', () => a.end());
}

/** Relays `client` (paused, nothing read yet) to a fresh connection to the host's loopback `port`. */
function relayToHost(client, port) {
  client.on('error', () => client.destroy());
  connectHostLoopback(port, (upstream) => {
    if (upstream === null) return client.destroy();
    pipeBoth(client, upstream);
    client.resume();
  });
}

/** Connects to the host's loopback PORT: 127.0.0.1, else [::1] (a service bound to `localhost` may have only that). */
function connectHostLoopback(port, done) {
  const tryHost = (hosts) => {
    const [host, ...rest] = hosts;
    if (host === undefined) return done(null);
    const socket = net.connect({ port, host, allowHalfOpen: true });
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      done(socket);
    });
    socket.once('error', () => tryHost(rest));
  };
  tryHost(['127.0.0.1', '::1']);
}

function listen(server, where) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(where, () => {
      server.removeListener('error', reject);
      resolve(server);
    });
  });
}

/** Ends this process as `child` ended: the same exit code, or the same signal raised on itself. */
function endLike(code, signal, cleanup) {
  cleanup();
  if (signal !== null) {
    for (const s of FORWARDED_SIGNALS) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    // a signal node ignores (SIGPIPE) does not end this process, and still must not read as success
    setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 15)), 100);
    return;
  }
  process.exit(code ?? 1);
}

/** Forwards a signal sent to this process alone to `child` (a group kill reaches both anyway). */
function forwardSignals(child) {
  for (const s of FORWARDED_SIGNALS) process.on(s, () => child.kill(s));
}

async function runInside(opts) {
  const servers = [];
  if (opts.ports.length > 0 && typeof process.send !== 'function')
    fail('no channel to the outside for the forwarded ports (run it through net-run.cjs outside)');
  // a connection handed over is closed here once sent; the outside relays it
  const handOver = (port) =>
    net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
      client.on('error', () => client.destroy());
      process.send({ relay: port }, client, (error) => error && client.destroy());
    });
  // the channel keeps no run alive: the command's end ends this process
  if (typeof process.channel?.unref === 'function') process.channel.unref();
  for (const port of opts.ports) {
    for (const host of ['127.0.0.1', '::1']) {
      try {
        servers.push(await listen(handOver(port), { port, host }));
      } catch (error) {
        // a namespace without IPv6 has no ::1: 127.0.0.1 is what matters
        if (host === '127.0.0.1') fail(`cannot listen on 127.0.0.1:${port} inside the sandbox: ${error.message}`);
      }
    }
  }
  const child = spawn(opts.command[0], opts.command.slice(1), { stdio: 'inherit' });
  forwardSignals(child);
  child.once('error', (error) =>
    fail(`cannot start ${opts.command[0]}: ${error.message}`, error.code === 'ENOENT' ? 127 : 126),
  );
  child.once('exit', (code, signal) => endLike(code, signal, () => servers.forEach((s) => s.close())));
}

async function runOutside(opts) {
  const removeRunDir = () => {
    if (opts.runDir) rmSync(opts.runDir, { recursive: true, force: true });
  };
  if (opts.runDir) {
    try {
      // not recursive: a directory already there (someone else's, in a shared /tmp) is refused, never reused
      mkdirSync(opts.runDir, { mode: 0o700 });
      // slirp4netns answers DNS on 10.0.2.3 and forwards to the host's resolver, wherever it listens
      if (opts.resolvConf) writeFileSync(join(opts.runDir, 'resolv.conf'), 'nameserver 10.0.2.3\n', { mode: 0o644 });
    } catch (error) {
      fail(`cannot make ${opts.runDir}: ${error.message}`);
    }
  }
  const withSlirp = opts.slirp !== null;
  const relays = opts.ports.length > 0;
  // fds 3 and 4 are bwrap's --info-fd and --block-fd; the channel comes after them
  const stdio = ['inherit', 'inherit', 'inherit', ...(withSlirp ? ['pipe', 'pipe'] : []), ...(relays ? ['ipc'] : [])];
  const bwrap = spawn(opts.command[0], opts.command.slice(1), { stdio: stdio.length === 3 ? 'inherit' : stdio });
  forwardSignals(bwrap);
  if (relays) {
    // only a connection on a forwarded port is relayed, and only to the host's loopback at that port
    bwrap.on('message', (message, handle) => {
      const port = message !== null && typeof message === 'object' ? message.relay : undefined;
      if (!(handle instanceof net.Socket)) return handle?.close?.();
      if (!opts.ports.includes(port)) return handle.destroy();
      relayToHost(handle, port);
    });
    // a channel that breaks (the sandbox ended) must not throw here: bwrap's exit ends this process
    bwrap.on('error', () => {});
  }
  let slirp = null;
  bwrap.once('error', (error) => {
    removeRunDir();
    fail(`cannot start ${opts.command[0]}: ${error.message}`, error.code === 'ENOENT' ? 127 : 126);
  });
  bwrap.once('exit', (code, signal) => {
    if (slirp === null) return endLike(code, signal, removeRunDir);
    // closing its exit fd ends slirp4netns; wait for it so nothing of the run outlives the leader
    slirp.stdio[4]?.destroy();
    const timer = setTimeout(() => slirp.kill('SIGKILL'), SLIRP_EXIT_MS);
    const done = () => {
      clearTimeout(timer);
      endLike(code, signal, removeRunDir);
    };
    if (slirp.exitCode !== null || slirp.signalCode !== null) done();
    else slirp.once('exit', done);
  });
  if (withSlirp) {
    try {
      const pid = await readChildPid(bwrap.stdio[3]);
      await waitForOwnLoopback(pid);
      slirp = await startSlirp(opts, pid);
      // the command was held by --block-fd until now: it never starts before its network
      bwrap.stdio[4].end('1');
    } catch (error) {
      bwrap.kill('SIGKILL');
      slirp?.kill('SIGKILL');
      removeRunDir();
      fail(`cannot give the sandbox its outbound network: ${error.message}`);
    }
  }
}

/**
 * Waits until bwrap's child has brought up the namespace's loopback (127.0.0.1 is a local route
 * once its address is on and the link is up). slirp4netns configuring the namespace at the same
 * moment made bwrap's own netlink request fail about once in 300 runs under load ("bwrap:
 * loopback: Failed RTM_NEWADDR"). Past the bound, slirp4netns is started anyway.
 */
async function waitForOwnLoopback(pid) {
  const until = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < until) {
    try {
      if (readFileSync(`/proc/${pid}/net/fib_trie`, 'utf8').includes('127.0.0.1')) return;
    } catch {
      return; // gone (bwrap failed: its exit says why) or not readable here: nothing to wait for
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** bwrap's --info-fd JSON: the pid (outside the pid namespace) of the sandbox's first process. */
function readChildPid(stream) {
  return withTimeout('bwrap did not report its child', (resolve, reject) => {
    let text = '';
    stream.on('data', (chunk) => {
      text += chunk;
      try {
        const pid = JSON.parse(text)['child-pid'];
        if (Number.isInteger(pid)) resolve(pid);
      } catch {
        // not all of it yet
      }
    });
    stream.on('end', () =>
      reject(new Error(`bwrap ended before it reported its child (${text.trim() || 'nothing on --info-fd'})`)),
    );
  });
}

/** slirp4netns attached to `pid`'s network namespace, the host's loopback cut off; resolves once it says it is ready. */
function startSlirp(opts, pid) {
  const args = ['--configure', '--mtu=65520', '--disable-host-loopback', '--ready-fd=3', '--exit-fd=4'];
  // unprivileged, the namespace belongs to bwrap's user namespace: slirp4netns must join it to configure it
  if (opts.userns) args.push(`--userns-path=/proc/${pid}/ns/user`);
  const slirp = spawn(opts.slirp, [...args, String(pid), 'tap0'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  slirp.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-2000)));
  return withTimeout('slirp4netns did not become ready', (resolve, reject) => {
    slirp.once('error', (error) => reject(new Error(`cannot start ${opts.slirp}: ${error.message}`)));
    slirp.once('exit', (code, signal) =>
      reject(
        new Error(
          `slirp4netns exited ${signal ?? code} before it was ready: ${stderr.trim().split('\n').at(-1) ?? ''}`,
        ),
      ),
    );
    slirp.stdio[3].once('data', () => resolve(slirp));
  });
}

function withTimeout(what, body) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
    body(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

const opts = parseArgs(process.argv.slice(2));
if (opts.role === 'inside') runInside(opts).catch((error) => fail(error.message));
else if (opts.role === 'outside') runOutside(opts).catch((error) => fail(error.message));
else fail(`the first argument must be inside or outside, got ${opts.role}`, 2);
