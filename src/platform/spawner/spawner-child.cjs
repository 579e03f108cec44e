'use strict';
// The spawner: a small helper process that starts processes for a large parent (see spawner.ts).
// Forking costs time in proportion to the forking process's memory and blocks its event loop
// while it runs; this process is small, so the parent sends it requests over IPC instead.
//
// Two kinds of request. A call (git) runs to its end and answers once, with all of its output:
//   in:  {t: 'run', id, cmd, args, cwd, envSet, envUnset, timeoutMs, input?: Buffer, streamed: bool}
//        {t: 'in', id, chunk: string} · {t: 'end', id} · {t: 'kill', id}
//   out: {t: 'done', id, exitCode, stdout: Buffer, stderr: string, timedOut, spawnError?, piped?: true}
// Past CALL_HANDOVER_BYTES of a call's stdout, what was read goes out as {t: 'part', id, chunk}
// and the pipe itself as {t: 'pipe', id} with the handle; `done` then says `piped` and the parent
// reads the rest to the pipe's close (a large listing is not held and copied here, nor copied
// again into one message for the parent to decode).
// A streamed process (a worker) is the leader of a process group of its own, stdin /dev/null; its
// output comes back as it is printed and the parent does the rest (timeouts, group kills). Past
// HANDOVER_BYTES its pipes themselves go to the parent, which reads the rest and sees them close:
//   in:  {t: 'start', id, file, args, cwd, envSet, envUnset} · {t: 'drop', id}
// A request's environment is the last one's with `envSet` set and `envUnset` removed (the parent
// sends what changed: most of a git call's ~110 variables are the same every time).
//   out: {t: 'spawned', id, pid, startTicks} · {t: 'failed', id, message}
//        {t: 'out', id, fd: 1 | 2, chunk: Buffer} · {t: 'exit', id, code, signal}
//        then {t: 'closed', id}, or {t: 'handover', id, fd: 1 | 2} with the pipe, once per pipe
const { spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');

/** The environment of the last request (see the header). */
const env = new Map();

/** The environment a request names, as an object for spawn (which copies it). */
function envOf(msg) {
  for (const key of msg.envUnset) env.delete(key);
  for (const key of Object.keys(msg.envSet)) env.set(key, msg.envSet[key]);
  return Object.fromEntries(env);
}

/** Live calls by request id. */
const children = new Map();
/** Live streamed processes by request id. */
const streams = new Map();

function run(msg) {
  const childEnv = envOf(msg);
  // no input: stdin is /dev/null, which reads as the same empty input and saves a pipe (~0.2 ms per call here)
  const hasInput = msg.streamed || (msg.input !== undefined && msg.input.length > 0);
  let child;
  try {
    child = spawn(msg.cmd, msg.args, {
      cwd: msg.cwd,
      env: childEnv,
      stdio: [hasInput ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
  } catch (error) {
    reply({
      t: 'done',
      id: msg.id,
      exitCode: null,
      stdout: Buffer.alloc(0),
      stderr: '',
      timedOut: false,
      spawnError: error.message,
    });
    return;
  }
  const out = [];
  let outBytes = 0;
  let piped = false;
  const err = [];
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, msg.timeoutMs);
  children.set(msg.id, child);
  const finish = (done) => {
    if (!children.has(msg.id)) return;
    clearTimeout(timer);
    children.delete(msg.id);
    reply({ t: 'done', id: msg.id, timedOut, ...done, ...(piped ? { piped } : {}) });
  };
  child.stdout.on('data', (chunk) => {
    out.push(chunk);
    outBytes += chunk.length;
    if (outBytes < CALL_HANDOVER_BYTES || piped) return;
    piped = true; // first: emptying the pipe's stream comes back through this listener
    piped = handOverCallOutput(msg.id, child.stdout, out);
  });
  child.stderr.on('data', (chunk) => err.push(chunk));
  child.on('error', (error) =>
    finish({ exitCode: null, stdout: Buffer.alloc(0), stderr: '', spawnError: error.message }),
  );
  child.on('close', (code) =>
    finish({ exitCode: code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') }),
  );
  if (!hasInput) return;
  // git may exit before reading all of stdin (e.g. a fatal error): EPIPE is not our failure
  child.stdin.on('error', () => undefined);
  if (!msg.streamed) child.stdin.end(msg.input);
}

/** A call's stdout past which its pipe goes to the parent (two round trips, worth it only for a large listing). */
const CALL_HANDOVER_BYTES = 256 << 10;

/**
 * Sends what a call printed so far, then its stdout pipe, to the parent; false (nothing sent) when
 * the pipe ended already. Reading is stopped first, as for a stream's pipes (see handOver).
 */
function handOverCallOutput(id, pipe, out) {
  if (pipe._handle === null || pipe._handle === undefined || pipe.readableEnded) return false;
  stopReading(pipe); // what it held goes into `out` through its 'data' listener
  reply({ t: 'part', id, chunk: Buffer.concat(out) });
  out.length = 0;
  // once sent, the pipe here has no handle: ending it lets the call's 'close' come when git exits
  reply({ t: 'pipe', id }, pipe, () => pipe.destroy());
  return true;
}

/** Field 22 of /proc/<pid>/stat (start time, clock ticks since boot), read before the child can be reaped; null without /proc. */
function readStartTicks(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isFinite(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

/**
 * Output messages not yet written to the channel, per stream, above which its pipes are paused:
 * a parent busy elsewhere then holds the worker back (the kernel's pipe fills up) instead of this
 * process buffering its output without bound.
 */
const MAX_UNSENT = 32;

/**
 * Output copied through here before a stream's pipes are handed to the parent. Every copy costs
 * the parent a message to decode and a buffer to collect (a flood of 8 workers raised its peak
 * memory by ~25 MB); handing the pipes over costs two round trips, which only a worker that prints
 * a lot is worth.
 */
const HANDOVER_BYTES = 1 << 20;

function start(msg) {
  const childEnv = envOf(msg);
  let child;
  try {
    child = spawn(msg.file, msg.args, {
      cwd: msg.cwd,
      env: childEnv,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    reply({ t: 'failed', id: msg.id, message: error.message });
    return;
  }
  if (child.pid === undefined) {
    child.once('error', (error) => reply({ t: 'failed', id: msg.id, message: error.message }));
    return;
  }
  const entry = { child, unsent: 0, paused: false, copied: 0, handedOver: false };
  streams.set(msg.id, entry);
  reply({ t: 'spawned', id: msg.id, pid: child.pid, startTicks: readStartTicks(child.pid) });
  const sent = () => {
    entry.unsent--;
    if (entry.paused && entry.unsent <= MAX_UNSENT / 2 && !entry.handedOver) {
      entry.paused = false;
      child.stdout.resume();
      child.stderr.resume();
    }
  };
  const forward = (fd) => (chunk) => {
    if (!process.connected) return;
    entry.unsent++;
    entry.copied += chunk.length;
    process.send({ t: 'out', id: msg.id, fd, chunk }, sent);
    if (entry.copied >= HANDOVER_BYTES && !entry.handedOver) handOver(msg.id, entry);
    else if (entry.unsent > MAX_UNSENT && !entry.paused) {
      entry.paused = true;
      child.stdout.pause();
      child.stderr.pause();
    }
  };
  child.stdout.on('data', forward(1));
  child.stderr.on('data', forward(2));
  child.on('error', () => undefined); // a failed kill changes nothing: the parent watches the group
  child.once('exit', (code, signal) => {
    reply({ t: 'exit', id: msg.id, code, signal });
    if (entry.handedOver) streams.delete(msg.id);
  });
  child.once('close', () => {
    if (!entry.handedOver && streams.delete(msg.id)) reply({ t: 'closed', id: msg.id });
  });
}

/**
 * Hands a stream's pipes to the parent, unless one has ended already (its last bytes are then
 * near). What the pipes' streams hold is sent first; their reading is stopped before they are
 * sent (node discards whatever a handle in flight reads), so each byte goes exactly one way,
 * and in order: the channel delivers messages in the order they were sent.
 */
function handOver(id, entry) {
  const pipes = [entry.child.stdout, entry.child.stderr];
  if (pipes.some((pipe) => pipe._handle === null || pipe._handle === undefined || pipe.readableEnded)) return;
  entry.handedOver = true;
  for (const [index, pipe] of pipes.entries()) {
    stopReading(pipe); // what it held goes out through its 'data' listener
    reply({ t: 'handover', id, fd: index + 1 }, pipe);
  }
}

/** Empties a pipe's stream into its 'data' listener and stops reading it, before its handle is sent. */
function stopReading(pipe) {
  pipe.pause();
  while (pipe.read() !== null);
  pipe._handle.readStop();
  pipe.removeAllListeners('data');
}

/** The parent stopped waiting for a stream's pipes (a member that left the group holds them): let them go. */
function drop(id) {
  const entry = streams.get(id);
  if (entry === undefined) return;
  streams.delete(id);
  if (entry.handedOver) return; // the parent holds the pipes
  entry.child.stdout.destroy();
  entry.child.stderr.destroy();
}

function reply(msg, handle, sent = () => undefined) {
  if (process.connected) process.send(msg, handle, sent);
  else sent();
}

process.on('message', (msg) => {
  if (msg.t === 'run') run(msg);
  else if (msg.t === 'start') start(msg);
  else if (msg.t === 'drop') drop(msg.id);
  else if (msg.t === 'in') children.get(msg.id)?.stdin?.write(msg.chunk);
  else if (msg.t === 'end') children.get(msg.id)?.stdin?.end();
  else if (msg.t === 'kill') children.get(msg.id)?.kill('SIGKILL');
});

// The parent is gone (exited, crashed, closed the channel): no git call it started may outlive it.
// Streamed processes are left as a crashed parent leaves the workers it started itself: their
// groups are recorded in the store, and restart recovery stops them (spec 07). The parent never
// closes the channel while it has some (spawner.ts).
process.on('disconnect', () => {
  for (const child of children.values()) child.kill('SIGKILL');
  process.exit(0);
});
