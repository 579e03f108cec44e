'use strict';
// The spawner: a small helper process that starts git for a large parent (see spawner.ts).
// Forking costs time in proportion to the forking process's memory and blocks its event loop
// while it runs; this process is small, so the parent sends it requests over IPC instead.
//
// Messages in:  {t: 'run', id, cmd, args, cwd, env, timeoutMs, input?: Buffer, streamed: bool}
//               {t: 'in', id, chunk: string} · {t: 'end', id} · {t: 'kill', id}
// Messages out: {t: 'done', id, exitCode, stdout: Buffer, stderr: string, timedOut, spawnError?}
const { spawn } = require('node:child_process');

/** Live children by request id. */
const children = new Map();

function run(msg) {
  let child;
  try {
    child = spawn(msg.cmd, msg.args, { cwd: msg.cwd, env: msg.env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  } catch (error) {
    reply({ t: 'done', id: msg.id, exitCode: null, stdout: Buffer.alloc(0), stderr: '', timedOut: false, spawnError: error.message });
    return;
  }
  const out = [];
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
    reply({ t: 'done', id: msg.id, timedOut, ...done });
  };
  child.stdout.on('data', (chunk) => out.push(chunk));
  child.stderr.on('data', (chunk) => err.push(chunk));
  child.on('error', (error) => finish({ exitCode: null, stdout: Buffer.alloc(0), stderr: '', spawnError: error.message }));
  child.on('close', (code) => finish({ exitCode: code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') }));
  // git may exit before reading all of stdin (e.g. a fatal error): EPIPE is not our failure
  child.stdin.on('error', () => undefined);
  if (!msg.streamed) child.stdin.end(msg.input ?? '');
}

function reply(msg) {
  if (process.connected) process.send(msg);
}

process.on('message', (msg) => {
  if (msg.t === 'run') run(msg);
  else if (msg.t === 'in') children.get(msg.id)?.stdin.write(msg.chunk);
  else if (msg.t === 'end') children.get(msg.id)?.stdin.end();
  else if (msg.t === 'kill') children.get(msg.id)?.kill('SIGKILL');
});

// The parent is gone (exited, crashed, closed the channel): nothing it started may outlive it.
process.on('disconnect', () => {
  for (const child of children.values()) child.kill('SIGKILL');
  process.exit(0);
});
