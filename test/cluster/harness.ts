import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { credentialDigest, NODE_CREDENTIALS_FILE } from '../../src/config/node-credentials.js';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { BIN, call, startServe, type Served } from '../reliability/helpers.js';

/** True when Debian's `redis-server` is installed (`.ci/run` installs it); the cluster tests skip, saying so, without it. */
export const HAS_REDIS = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** A value shaped like the shared node token of old: no node's credential. */
export const NODE_TOKEN = 'test-node-token-0123456789abcdef';

/** Each node's credential in this test, by name: issued into every coordinator data dir of the test. */
const credentials = new Map<string, string>();
/** The data dirs of this test's coordinators. */
const coordinatorDirs: string[] = [];

/** Node `name`'s credential in this test (issued on first ask), written into every coordinator data dir of the test. */
export function credentialOf(name: string): string {
  let credential = credentials.get(name);
  if (credential === undefined) {
    credential = `${name}.${randomBytes(32).toString('base64url')}`;
    credentials.set(name, credential);
    for (const dir of coordinatorDirs) grant(dir, name, credential);
  }
  return credential;
}

/**
 * A coordinator data dir of this test (one an in-process coordinator opens): every node credential
 * of the test, issued before or after, is written into it as `gaffer nodes issue` does.
 */
export function coordinatorDataDir(dataDir: string): string {
  coordinatorDirs.push(dataDir);
  for (const [name, credential] of credentials) grant(dataDir, name, credential);
  return dataDir;
}

/** Writes a credential's digest into a coordinator data dir as `gaffer nodes issue` does. */
function grant(dataDir: string, name: string, credential: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, NODE_CREDENTIALS_FILE);
  const nodes = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { nodes: unknown[] }).nodes : [];
  nodes.push({ name, digest: credentialDigest(credential), issued: new Date().toISOString(), revoked: null });
  writeFileSync(file, JSON.stringify({ v: 1, nodes }), { mode: 0o600 });
}

const children: ChildProcess[] = [];
/** Redis servers apart: stopped after everything else, whenever a test (re)started one. */
const servers: ChildProcess[] = [];
afterEach(async () => {
  credentials.clear();
  coordinatorDirs.splice(0);
  // nodes and coordinators first, Redis last: nothing is left reconnecting to a dead server
  for (const c of [...children.splice(0).reverse(), ...servers.splice(0).reverse()]) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
    }
  }
});

/** A free loopback port now. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A test's redis-server: its URL, process, port and dir (a restart uses the same two). */
export interface RunningRedis {
  url: string;
  child: ChildProcess;
  port: number;
  dir: string;
  /** True when it keeps an append-only file (`--appendonly yes --appendfsync always`). */
  aof: boolean;
}

/**
 * A redis-server of the test's own on a free loopback port, in a temp dir; stopped after the test.
 * No persistence, or with `aof` an append-only file fsynced on every write (what a restart reads back).
 */
export async function startRedis(opts: { aof?: boolean } = {}): Promise<RunningRedis> {
  const dir = tempDir('gaffer-redis-');
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    const started = await spawnRedis(port, dir, opts.aof === true);
    if ('child' in started) return started;
    // the port was taken between the look and the bind: another one
    if (tries >= 3) throw new Error(`redis-server did not start: ${started.out}`);
  }
}

/** Stops a test's redis-server as an operator would (SIGTERM: it writes out what it holds and exits), and waits for it to be gone. */
export async function stopRedis(redis: RunningRedis): Promise<void> {
  const { child } = redis;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** The same redis-server again: same port, same dir (with AOF, its data read back). */
export async function restartRedis(redis: RunningRedis): Promise<RunningRedis> {
  await stopRedis(redis);
  const started = await spawnRedis(redis.port, redis.dir, redis.aof);
  if (!('child' in started)) throw new Error(`redis-server did not start again on port ${redis.port}: ${started.out}`);
  return started;
}

async function spawnRedis(port: number, dir: string, aof: boolean): Promise<RunningRedis | { out: string }> {
  const persistence = aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', ...persistence, '--logfile', ''],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  servers.push(child);
  let out = '';
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (ready) return { url: `redis://127.0.0.1:${port}`, child, port, dir, aof };
  child.kill('SIGKILL');
  return { out };
}

/** `gaffer serve --queue` (the coordinator), its data dir its own. */
export async function startCoordinator(
  redis: string,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<Served & { dataDir: string }> {
  const dataDir = coordinatorDataDir(join(tempDir(), 'coordinator'));
  return {
    ...(await startServe(dataDir, { env: { ...clusterEnv(), ...env }, serveArgs: ['--queue', redis, ...args] })),
    dataDir,
  };
}

/** A running `gaffer node`. */
export interface RunningNode {
  name: string;
  child: ChildProcess;
  /** Its `--work-dir` (caches, worktrees, its own logs of the workers). */
  workDir: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `gaffer node` as a child process with a data dir and work dir of its own; resolves once it takes attempts. */
export async function startNode(
  redis: string,
  name: string,
  opts: { slots?: number; stallS?: number; runners?: string; env?: NodeJS.ProcessEnv; args?: string[] } = {},
): Promise<RunningNode> {
  const dir = tempDir(`gaffer-node-${name}-`);
  const args = [
    '--data-dir',
    join(dir, 'data'),
    'node',
    '--queue',
    redis,
    '--name',
    name,
    '--runners',
    opts.runners ?? 'shell',
    '--slots',
    String(opts.slots ?? 2),
    '--work-dir',
    join(dir, 'work'),
  ];
  if (opts.stallS !== undefined) args.push('--stall-s', String(opts.stallS));
  args.push(...(opts.args ?? []));
  const child = spawn(BIN, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...clusterEnv(), GAFFER_NODE_TOKEN: credentialOf(name), ...opts.env },
  });
  children.push(child);
  let stderr = '';
  child.stdout?.resume();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gaffer node ${name} did not start: ${stderr}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('attempts from')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`gaffer node ${name} exited: ${stderr}`));
    });
  });
  return { name, child, workDir: join(dir, 'work'), stderr: () => stderr, exited };
}

function clusterEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GAFFER_URL: '' };
  delete env.GAFFER_NODE_TOKEN;
  return env;
}

/** Waits for a job's condition over the coordinator's API (spec 02 wait_for); throws when it is not met in time. */
export async function waitFor(server: Served, id: string, condition: string, timeoutS = 60): Promise<any> {
  const res = await call(
    server.url,
    'GET',
    `/api/jobs/${id}/wait?for=${encodeURIComponent(condition)}&timeout_s=${timeoutS}`,
  );
  if (res.status !== 200 || res.json.met !== true)
    // the coordinator's own log says what it was waiting for (an offer, a node, a slot)
    throw new Error(
      `job ${id}: ${condition} not met in ${timeoutS} s: ${res.text.slice(0, 2000)}\ncoordinator log (tail):\n${server.stderr().slice(-4000)}`,
    );
  return res.json;
}

/** A job's events over the API. */
export async function eventsOf(
  server: Served,
  id: string,
): Promise<{ name: string; event: string; message: string; [k: string]: unknown }[]> {
  return (await call(server.url, 'GET', `/api/jobs/${id}/events`)).json.events;
}

/** A bare repository with one commit on `main` — the remote a cluster's jobs name by URL. */
export function bareRemote(files: Record<string, string>): string {
  const src = makeWorkspace(files, { git: true });
  const bare = join(tempDir('gaffer-remote-'), 'origin.git');
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: src, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  git('branch', '-M', 'main');
  execFileSync('git', ['clone', '-q', '--bare', src, bare]);
  return bare;
}

/** A file of a branch of the bare remote, or null when the branch or file is not there. */
export function remoteFile(bare: string, branch: string, file: string): string | null {
  try {
    return execFileSync('git', ['--git-dir', bare, 'show', `refs/heads/${branch}:${file}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return null;
  }
}

/** Every value Redis holds, as text, key by key: what any node with the Redis URL can read. */
export async function readAllOfRedis(url: string): Promise<Map<string, string>> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  const all = new Map<string, string>();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'COUNT', 500);
      cursor = next;
      for (const key of keys) {
        const type = await redis.type(key);
        const value =
          type === 'string'
            ? await redis.get(key)
            : type === 'hash'
              ? await redis.hgetall(key)
              : type === 'list'
                ? await redis.lrange(key, 0, -1)
                : type === 'set'
                  ? await redis.smembers(key)
                  : type === 'zset'
                    ? await redis.zrange(key, 0, -1)
                    : type === 'stream'
                      ? await redis.xrange(key, '-', '+')
                      : null;
        all.set(key, JSON.stringify(value));
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return all;
}
