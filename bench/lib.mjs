// Helpers of the benchmark harness: timing, child processes, a hermetic git environment for the
// reference commands, and fixture generation. Nothing here knows about a particular figure.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** Median of a list of numbers (mean of the middle two for an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Milliseconds an async function takes (wall clock, monotonic). */
export async function timeAsync(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/** Log progress on stderr so stdout stays the table. */
export function log(...parts) {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);
}

/**
 * The environment of every reference git command: the same hermetic setup gaffer gives its own git
 * calls (no global/system config, C locale, the caller's GIT_* removed), plus the repository,
 * work tree and index of the reference, and an identity for commits.
 */
export function gitEnv({ gitDir, workTree, indexFile } = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toUpperCase().startsWith('GIT_')) env[k] = v;
  Object.assign(env, {
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@localhost',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@localhost',
    // no automatic gc or maintenance: a commit of 50,000 new objects would start one in the
    // background, and it would run during the next measurements (as gaffer's shadow repos never do)
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: 'gc.auto',
    GIT_CONFIG_VALUE_0: '0',
    GIT_CONFIG_KEY_1: 'maintenance.auto',
    GIT_CONFIG_VALUE_1: 'false',
  });
  if (gitDir) env.GIT_DIR = gitDir;
  if (workTree) env.GIT_WORK_TREE = workTree;
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  return env;
}

/**
 * Runs a command as a child process and times it from spawn to exit (the same way gaffer's own
 * git calls are spawned: async, pipes). Throws on a non-zero exit.
 */
export function run(cmd, args, { cwd, env, input } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd, env: env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr.trim().slice(-500)}`));
      else resolve({ ms, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}

/** `git <args>` with a reference environment; resolves to { ms, stdout }. */
export function git(args, envOpts, opts = {}) {
  return run('git', args, { ...opts, env: gitEnv(envOpts) });
}

// ---------------------------------------------------------------------------------------------
// Fixtures

const FILES_PER_DIR = 50;
const DIRS_PER_TOP = 20;

/** A pool of base64 text in 76-column lines: file bodies are slices of it (random-ish, text-like). */
function textPool(bytes) {
  const b64 = randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64');
  return b64.replace(/(.{76})/g, '$1\n');
}

let pool = null;
function getPool() {
  pool ??= textPool(8 * 1024 * 1024);
  return pool;
}

/** Random-ish text of about `avgBytes` (uniform in [avg/2, 3avg/2]), unique by its header line. */
export function fileBody(header, avgBytes) {
  const p = getPool();
  const len = Math.floor(avgBytes / 2 + Math.random() * avgBytes);
  const at = Math.floor(Math.random() * (p.length - len));
  return `// ${header}\n${p.slice(at, at + len)}\n`;
}

/**
 * Writes `files` files of ~`avgBytes` each under `root` in nested folders
 * (`dNN/eNN/fNN.txt`, 50 files a folder, 20 folders a top folder). A plain folder: no `.git`.
 * Returns the relative paths, in creation order.
 */
export function makeTree(root, files, avgBytes = 4096) {
  const paths = [];
  const tops = Math.ceil(files / (FILES_PER_DIR * DIRS_PER_TOP));
  const pad = (n) => String(n).padStart(2, '0');
  outer: for (let a = 0; a < tops; a++) {
    for (let b = 0; b < DIRS_PER_TOP; b++) {
      const dir = `d${pad(a)}/e${pad(b)}`;
      mkdirSync(join(root, dir), { recursive: true });
      for (let f = 0; f < FILES_PER_DIR; f++) {
        if (paths.length >= files) break outer;
        const rel = `${dir}/f${pad(f)}.txt`;
        writeFileSync(join(root, rel), fileBody(rel, avgBytes));
        paths.push(rel);
      }
    }
  }
  return paths;
}

/** `count` paths spread over the tree, different for each `rep`. */
export function pickSpread(paths, count, rep) {
  const out = new Set();
  const step = Math.max(1, Math.floor(paths.length / count));
  let i = (rep * 7919) % paths.length;
  while (out.size < Math.min(count, paths.length)) {
    out.add(paths[i % paths.length]);
    i += step + 1;
  }
  return [...out];
}

/** Rewrites files with new content (new size, new bytes, new mtime). */
export function modifyFiles(root, rels, stamp) {
  for (const rel of rels) writeFileSync(join(root, rel), fileBody(`${rel} modified ${stamp}`, 4096));
}

/** Writes new files next to existing ones; returns their relative paths. */
export function addFiles(root, nearRels, stamp) {
  return nearRels.map((near, k) => {
    const rel = near.replace(/[^/]+$/, `new-${stamp}-${k}.txt`);
    writeFileSync(join(root, rel), fileBody(rel, 4096));
    return rel;
  });
}

// ---------------------------------------------------------------------------------------------
// Latency and live-job helpers

/** Nearest-rank percentile (q in 0..1) of a list of numbers. */
export function percentile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A runner for latency cases: its worker stays alive until stopped and reports detected states on
 * demand through the runner contract's `onState` — the callback the shell and agent runners use for
 * a detected state. The engine itself records it (attempt row + `state` event in the store) and
 * announces it on its bus: the same append → publish path every event of a live job takes, without
 * the 250 ms coalescing of `output` events. Nothing of the engine is bypassed or reached into.
 */
export class EventRunner {
  key = 'bench-events';
  canResume = false;
  #attached = new Map();
  #waiting = new Map();

  /** Resolves, once the job's worker runs, to `{ emit(text), stop() }`. */
  attached(jobId) {
    const handle = this.#attached.get(jobId);
    if (handle) return Promise.resolve(handle);
    return new Promise((resolve) => this.#waiting.set(jobId, resolve));
  }

  async run(input) {
    const t0 = performance.now();
    let stop;
    const stopped = new Promise((resolve) => {
      stop = resolve;
      input.signal.addEventListener('abort', resolve, { once: true });
    });
    const handle = {
      emit: (text) => input.onState({ state: 'waiting_for_input', why: text, matched: text, confidence: 1 }),
      stop,
    };
    this.#attached.set(input.jobId, handle);
    this.#waiting.get(input.jobId)?.(handle);
    this.#waiting.delete(input.jobId);
    await stopped;
    this.#attached.delete(input.jobId);
    const cancelled = input.signal.aborted;
    const { blankReport } = await import('../dist/runners/report.js');
    return blankReport({
      status: cancelled ? 'cancelled' : 'done',
      outcome: cancelled ? 'cancelled' : 'success',
      stopReason: cancelled ? 'cancelled' : 'complete',
      exitCode: cancelled ? null : 0,
      isCancelled: cancelled,
      summary: 'bench event runner stopped',
      durationMs: performance.now() - t0,
    });
  }
}

/** The data dir secret of each server the bench started, by origin: the API needs one even on loopback (issue 11). */
const bearers = new Map();

/** Remembers the secret of the server at `url` (read from its data dir): httpGet, httpJson and sseClient send it. */
export function rememberServer(url, dataDir) {
  bearers.set(new URL(url).origin, readFileSync(join(dataDir, 'secret'), 'utf8').trim());
}

function authHeaders(url) {
  const secret = bearers.get(new URL(url).origin);
  return secret ? { authorization: `Bearer ${secret}` } : {};
}

/** A keep-alive HTTP GET whose body is read whole; resolves to { status, body, ms } (ms: request to last byte). */
export function httpGet(url, { agent, headers } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get(url, { agent, headers: { ...authHeaders(url), ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** A JSON request (POST/GET) with a body; resolves to the parsed answer, throws on a non-2xx. */
export function httpJson(method, url, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = http.request(
      url,
      {
        method,
        headers: {
          ...authHeaders(url),
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 500) >= 300)
            reject(new Error(`${method} ${url} → ${res.statusCode}: ${text.slice(0, 300)}`));
          else resolve(JSON.parse(text));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}

/**
 * A streaming SSE client on a real socket: calls `onFrame({ event, id, data, at })` for every frame
 * as its bytes arrive (`at`: performance.now() when the chunk that completed it was read).
 * Returns `{ close() }`.
 */
export function sseClient(url, onFrame) {
  let buffer = '';
  const req = http.get(url, { headers: { accept: 'text/event-stream', ...authHeaders(url) } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      const at = performance.now();
      buffer += chunk;
      let cut;
      while ((cut = buffer.indexOf('\n\n')) !== -1) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const frame = { event: 'message', id: null, data: '', at };
        for (const line of raw.split('\n')) {
          if (line.startsWith('event:')) frame.event = line.slice(6).trim();
          else if (line.startsWith('id:')) frame.id = line.slice(3).trim();
          else if (line.startsWith('data:')) frame.data += (frame.data ? '\n' : '') + line.slice(5).replace(/^ /, '');
        }
        if (raw.startsWith(':')) continue; // a comment (heartbeat)
        onFrame(frame);
      }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  return { close: () => req.destroy() };
}

/** Resident and peak-resident memory of a process, MB (from /proc/<pid>/status); null when it is gone. */
export function procMemoryMb(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/**
 * Starts `bin/gaffer --data-dir D serve --port 0 [serveArgs]` (the dist build; GAFFER_* of this
 * process left out, `env` added) and resolves to { child, url, stderr } once it serves.
 */
export function serveDataDir(ctx, dataDir, env = {}, serveArgs = []) {
  const childEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GAFFER_')) childEnv[k] = v;
  Object.assign(childEnv, env);
  const child = spawn(
    process.execPath,
    [join(ctx.repoRoot, 'bin', 'gaffer'), '--data-dir', dataDir, 'serve', '--port', '0', ...serveArgs],
    { env: childEnv, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not start within 20 s: ${err.slice(-500)}`));
    }, 20_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      err += chunk;
      const m = /serving (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        rememberServer(m[1], dataDir);
        resolve({ child, url: m[1], stderr: () => err });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited ${code}: ${err.slice(-500)}`));
    });
  });
}
