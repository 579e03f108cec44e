// The cluster's figures (issue 17, spec 09/10), on a real redis-server the bench starts on loopback,
// a `gaffer serve --queue` coordinator and `gaffer node` processes of dist/ (bin/gaffer), each with its
// own data and work dir, every worker sandbox off (the sandbox's cost is bwrap's):
//  - `cluster_throughput_ratio`: jobs/s with 3 nodes ÷ jobs/s with 1 node, the same trivial batch
//    (shell `sleep 0.2` + a one-line change, verify none, one git workspace a job) submitted at once;
//  - `cluster_dispatch_latency_p99_ms`: from a job's submit to its worker starting on a node, one
//    job at a time on an idle cluster of 3 nodes.
// Both are skipped, saying why, without Debian's redis-server or the build.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { git, httpJson, log, makeTree, median, percentile, round, serveDataDir, sleep } from './lib.mjs';

const REDIS = process.env.GAFFER_REDIS_SERVER ?? 'redis-server';
const NODE_NAMES = ['n1', 'n2', 'n3'];
/** Where a coordinator's data dir keeps its nodes' credentials (their digests). */
const CREDENTIALS_FILE = 'node-credentials.json';
/** Attempts each node runs at once (`gaffer node --slots`). */
const SLOTS = 2;
const TASK = 'sleep 0.2';
/** Jobs in one throughput batch (one workspace each: no job waits for another's workspace lock). */
const tpJobs = (ctx) => (ctx.quick ? 12 : 30);
/** Dispatches timed for the latency (≥ 50: the bar is a p99), after LAT_WARMUP untimed ones. */
const latJobs = (ctx) => (ctx.quick ? 50 : 100);
const LAT_WARMUP = 3;
const START_MARK = 'gaffer-bench-worker-start';

/** Why the cluster cannot be measured here, or null. */
function missing(ctx) {
  if (spawnSync(REDIS, ['--version'], { stdio: 'ignore' }).status !== 0)
    return `no ${REDIS} on PATH (apt-get install redis-server, or set GAFFER_REDIS_SERVER)`;
  if (!existsSync(join(ctx.repoRoot, 'dist', 'interfaces', 'cli', 'main.js')))
    return 'gaffer is not built in dist/ (npm run build)';
  return null;
}

function skipped(figures, why) {
  log(`  skipped: ${why}`);
  return {
    rows: figures.map((figure) => ({ figure, value: 'skipped', reference: why.slice(0, 60) })),
    notes: [`${figures.join(', ')} skipped: ${why}`],
  };
}

// every process the cluster cases start is killed when the bench exits, however it exits
const started = new Set();
process.on('exit', () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function track(child) {
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}

async function stop(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/** Resolves once the child's stream prints `pattern`; rejects when it exits first or after `ms`. */
function untilPrinted(child, stream, pattern, what, ms = 30_000) {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start within ${ms / 1000} s: ${text.slice(-500)}`)),
      ms,
    );
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      text += chunk;
      if (pattern.test(text)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited ${code}: ${text.slice(-500)}`));
    });
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server of the bench's own on a free loopback port, no persistence. */
async function startRedis(dir) {
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    const child = track(
      spawn(
        REDIS,
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--logfile',
          '',
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      ),
    );
    try {
      await untilPrinted(child, child.stdout, /Ready to accept connections/, 'redis-server', 10_000);
      child.stdout.resume();
      return { child, url: `redis://127.0.0.1:${port}` };
    } catch (err) {
      await stop(child, 'SIGKILL');
      // the port was taken between the look and the bind: another one
      if (tries >= 3) throw err;
    }
  }
}

/** The environment of a node: none of this process's GAFFER_*, its own credential, the sandbox off. */
function clusterEnv(credential) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GAFFER_')) env[k] = v;
  return { ...env, GAFFER_NODE_TOKEN: credential, GAFFER_SANDBOX: 'off' };
}

/**
 * Each node's own credential, issued as an operator does (`gaffer nodes issue NAME`) into `dir`,
 * which then holds their digests (node-credentials.json) for every coordinator to start from.
 */
function issueCredentials(ctx, dir) {
  const credentials = new Map();
  for (const name of NODE_NAMES) {
    const issued = spawnSync(
      process.execPath,
      [join(ctx.repoRoot, 'bin', 'gaffer'), '--data-dir', dir, 'nodes', 'issue', name],
      { encoding: 'utf8', env: clusterEnv('') },
    );
    if (issued.status !== 0) throw new Error(`gaffer nodes issue ${name} failed: ${issued.stderr}`);
    credentials.set(name, issued.stdout.trim());
  }
  return credentials;
}

/**
 * Redis, the coordinator and the nodes, shared by both cases (closed once all ran). A node is
 * started when first asked for and keeps its data and work dir (its git caches) when stopped and
 * started again.
 */
async function cluster(ctx) {
  if (ctx.shared.cluster) return ctx.shared.cluster;
  const root = join(ctx.tmp, 'cluster');
  const issued = join(root, 'issued');
  const credentials = issueCredentials(ctx, issued);
  const redis = await startRedis(ctx.tmp);
  let coordinators = 0;
  const serveCoordinator = async () => {
    const dataDir = join(root, `coordinator-${++coordinators}`);
    // every coordinator knows the nodes' credentials (the nodes stay when it is renewed)
    mkdirSync(dataDir, { recursive: true });
    copyFileSync(join(issued, CREDENTIALS_FILE), join(dataDir, CREDENTIALS_FILE));
    const served = await serveDataDir(ctx, dataDir, { GAFFER_SANDBOX: 'off' }, ['--queue', redis.url]);
    track(served.child);
    return served;
  };
  let coordinator;
  try {
    coordinator = await serveCoordinator();
  } catch (err) {
    await stop(redis.child);
    throw err;
  }
  const nodes = new Map();
  const c = {
    url: coordinator.url,
    redis,
    coordinator,
    nodes,
    /** Jobs this coordinator has run. */
    jobs: 0,
    /** Another coordinator, on a data dir of its own, in this one's place (the nodes stay). */
    async renewCoordinator() {
      await stop(c.coordinator.child);
      c.coordinator = await serveCoordinator();
      c.url = c.coordinator.url;
      c.jobs = 0;
    },
    /** Exactly the first `count` nodes running, the others stopped. */
    async size(count) {
      for (const [k, name] of NODE_NAMES.entries()) {
        const running = nodes.get(name);
        if (k >= count) {
          if (running) {
            nodes.delete(name);
            await stop(running);
          }
          continue;
        }
        if (running) continue;
        const dir = join(root, name);
        const child = track(
          spawn(
            process.execPath,
            [
              join(ctx.repoRoot, 'bin', 'gaffer'),
              '--data-dir',
              join(dir, 'data'),
              'node',
              '--queue',
              redis.url,
              '--name',
              name,
              '--runners',
              'shell',
              '--slots',
              String(SLOTS),
              '--work-dir',
              join(dir, 'work'),
            ],
            {
              env: clusterEnv(credentials.get(name)),
              stdio: ['ignore', 'ignore', 'pipe'],
            },
          ),
        );
        await untilPrinted(child, child.stderr, /attempts from/, `gaffer node ${name}`);
        child.stderr.resume();
        nodes.set(name, child);
      }
    },
    async close() {
      for (const child of nodes.values()) await stop(child);
      await stop(c.coordinator.child);
      await stop(redis.child);
    },
  };
  ctx.shared.cluster = c;
  ctx.shared.cleanups ??= [];
  ctx.shared.cleanups.push(() => c.close());
  return c;
}

/** `count` git workspaces of 20 small files, one commit each. */
async function gitWorkspaces(ctx, name, count) {
  const roots = [];
  for (let w = 0; w < count; w++) {
    const root = join(ctx.tmp, name, `w${String(w).padStart(2, '0')}`);
    makeTree(root, 20, 1024);
    await git(['init', '-q', '-b', 'main'], {}, { cwd: root });
    await git(['add', '-A'], {}, { cwd: root });
    await git(['commit', '-q', '-m', 'bench fixture'], {}, { cwd: root });
    roots.push(root);
  }
  return roots;
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU seconds of a process and all its live descendants, with what they reaped (their children's git, shells, workers). */
function treeCpuS(rootPid) {
  const procs = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields from the 3rd: state, ppid, …, utime (14th), stime, cutime, cstime
      procs.set(Number(entry), {
        ppid: Number(f[1]),
        ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
      });
    } catch {
      // gone meanwhile
    }
  }
  const children = new Map();
  for (const [pid, p] of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  let ticks = 0;
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop();
    ticks += procs.get(pid)?.ticks ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return ticks / CLK_TCK;
}

/** The machine's busy and total CPU seconds since boot, every core and every process (/proc/stat). */
function machineCpuS() {
  const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is in user already)
  const idle = f[3] + f[4];
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / CLK_TCK, total: total / CLK_TCK };
}

function cpuNow(c) {
  const nodes = [...c.nodes.values()].reduce((sum, child) => sum + treeCpuS(child.pid), 0);
  return {
    coordinator: treeCpuS(c.coordinator.child.pid),
    nodes,
    redis: treeCpuS(c.redis.child.pid),
    machine: machineCpuS(),
  };
}

/** Submits one job per workspace at once, waits for all: { ms, failed, cpu, takenBy }. */
async function batch(c, roots, tag) {
  const cpu0 = cpuNow(c);
  const t0 = performance.now();
  const ids = await Promise.all(
    roots.map(async (workspace) => {
      const job = await httpJson('POST', `${c.url}/api/jobs`, {
        workspace,
        title: `cluster batch ${tag}`,
        verify: 'none',
        tasks: [
          { name: 'write', instruction: 'benchmark: a trivial change', command: `${TASK}; echo ${tag} > out.txt` },
        ],
      });
      return job.id;
    }),
  );
  c.jobs += ids.length;
  const answers = await Promise.all(
    ids.map((id) => httpJson('GET', `${c.url}/api/jobs/${id}/wait?for=done&timeout_s=300`)),
  );
  const ms = performance.now() - t0;
  const cpu1 = cpuNow(c);
  const failed = [];
  for (const [k, a] of answers.entries()) {
    if (a.met && a.state.status === 'done') continue;
    // the attempts' own words say what went wrong (the verdict only that one did)
    const full = await httpJson('GET', `${c.url}/api/jobs/${ids[k]}?full=1`);
    const workers = (full.result?.workers ?? []).map(
      (w) => `${w.name} ${w.status}/${w.stop_reason}${w.error ? `: ${w.error}` : ''}`,
    );
    failed.push(`${ids[k]} ${a.state.status} — ${workers.join('; ').slice(0, 400)}`);
  }
  const takenBy = {};
  for (const id of ids) {
    const { events } = await httpJson('GET', `${c.url}/api/jobs/${id}/events`);
    for (const e of events)
      if (e.event === 'node' && e.node_event === 'taken') takenBy[e.node] = (takenBy[e.node] ?? 0) + 1;
  }
  const cpu = {
    coordinator: cpu1.coordinator - cpu0.coordinator,
    nodes: cpu1.nodes - cpu0.nodes,
    redis: cpu1.redis - cpu0.redis,
    busy: cpu1.machine.busy - cpu0.machine.busy,
    total: cpu1.machine.total - cpu0.machine.total,
  };
  return { ms, failed, takenBy, cpu };
}

/** Where a batch's CPU went: the cluster's processes, and the whole machine (other work on it included). */
const describeCpu = (runs) => {
  const m = (k) => round(median(runs.map((r) => r.cpu[k])), 2);
  const busy = round(median(runs.map((r) => (100 * r.cpu.busy) / r.cpu.total)), 0);
  return `CPU s per batch (median): coordinator ${m('coordinator')} (with its git), nodes ${m('nodes')} (with their workers and git), redis ${m('redis')}; the machine's cores ${busy}% busy meanwhile (every process on it)`;
};

/**
 * cluster_throughput: a batch of trivial jobs (shell `sleep 0.2` and a one-line change, verify none,
 * one git workspace a job, each run changing its workspace again) submitted at once to the
 * coordinator, submit → all done, with 1 node and with 3 nodes (each --slots 2), alternating after
 * a warm-up of each. The ratio is jobs/s with 3 ÷ jobs/s with 1: 3 when nodes were the limit.
 */
export async function clusterThroughput(ctx) {
  const why = missing(ctx);
  if (why) return skipped(['cluster_throughput_ratio'], why);
  const c = await cluster(ctx);
  const jobs = tpJobs(ctx);
  const roots = await gitWorkspaces(ctx, 'cluster-tp-ws', jobs);
  const runs = { 1: [], 3: [] };
  const notes = [];
  // --quick stays under a minute with the latency case: 2 repetitions of each size
  const reps = ctx.quick ? Math.min(ctx.reps, 2) : ctx.reps;
  for (let i = 0; i <= reps; i++) {
    const order = i % 2 === 0 ? [1, 3] : [3, 1];
    for (const size of order) {
      await c.size(size);
      const r = await batch(c, roots, `r${i}-n${size}`);
      if (r.failed.length > 0)
        notes.push(
          `cluster_throughput ${size} node(s), ${i === 0 ? 'warm-up' : `rep ${i}`}: ${r.failed.length} of ${jobs} jobs not done — ${r.failed[0]}`,
        );
      if (i > 0) runs[size].push(r);
      log(
        `  cluster_throughput: ${i === 0 ? 'warm-up' : `rep ${i}/${reps}`}, ${size} node(s): ${Math.round(r.ms)} ms, taken ${JSON.stringify(r.takenBy)}`,
      );
    }
  }
  const one = median(runs[1].map((r) => r.ms));
  const three = median(runs[3].map((r) => r.ms));
  const ratio = one / three;
  const paired = median(runs[1].map((r, k) => r.ms / runs[3][k].ms));
  notes.push(
    `cluster_throughput, 1 node: ${describeCpu(runs[1])}`,
    `cluster_throughput, 3 nodes: ${describeCpu(runs[3])}; taken (last rep) ${JSON.stringify(runs[3].at(-1).takenBy)}`,
    `cluster_throughput: the paired ratio (each rep's two batches back to back) ${round(paired, 2)}`,
  );
  return {
    figures: {
      cluster_1node_ms: round(one),
      cluster_3node_ms: round(three),
      cluster_1node_jobs_per_s: round((jobs / one) * 1000, 2),
      cluster_3node_jobs_per_s: round((jobs / three) * 1000, 2),
      cluster_throughput_ratio: round(ratio, 3),
    },
    samples: {
      cluster_1node_ms: runs[1].map((r) => Math.round(r.ms)),
      cluster_3node_ms: runs[3].map((r) => Math.round(r.ms)),
      paired_ratio_cluster_throughput: round(paired, 3),
    },
    rows: [
      {
        figure: 'cluster_1node_ms',
        value: Math.round(one),
        unit: 'ms',
        reference: `${jobs} jobs (\`${TASK}\` + a change), 1 node × ${SLOTS} slots = ${round((jobs / one) * 1000, 1)} jobs/s`,
      },
      {
        figure: 'cluster_3node_ms',
        value: Math.round(three),
        unit: 'ms',
        reference: `the same, 3 nodes × ${SLOTS} slots = ${round((jobs / three) * 1000, 1)} jobs/s`,
      },
      {
        figure: 'cluster_throughput_ratio',
        value: round(ratio, 2),
        exact: ratio,
        reference: 'jobs/s 3 nodes ÷ 1 node (3 = nodes were the limit)',
      },
    ],
    notes,
  };
}

/**
 * cluster_dispatch_latency: one job at a time on an idle cluster of 3 nodes (each changing its
 * workspace, so each dispatch exports a new base and the node fetches it): from the bench's clock
 * just before the submit's POST to the worker's first command on a node, which prints the time
 * (`date +%s%N`). All on one machine: the bench's Date.now(), the worker's `date` and the
 * coordinator's event `ts` read the same system clock.
 */
export async function clusterDispatchLatency(ctx) {
  const why = missing(ctx);
  if (why) return skipped(['cluster_dispatch_latency_p99_ms'], why);
  const c = await cluster(ctx);
  // a coordinator of its own, as a case measures nothing of the one before: the throughput case's is
  // past retention.jobs (200) and prunes every workspace's old snapshots after each job while
  // nothing is live, which runs into the next dispatch here (docs/performance.md)
  if (c.jobs > 0) await c.renewCoordinator();
  await c.size(NODE_NAMES.length);
  const [workspace] = await gitWorkspaces(ctx, 'cluster-lat-ws', 1);
  const count = latJobs(ctx);
  const started = [];
  const taken = [];
  const lost = [];
  /** Each kind of event's offsets from the submit, ms: where the dispatch's time goes. */
  const phases = new Map();
  for (let k = 0; k < LAT_WARMUP + count; k++) {
    c.jobs++;
    const submitted = Date.now();
    const job = await httpJson('POST', `${c.url}/api/jobs`, {
      workspace,
      title: `cluster dispatch ${k}`,
      verify: 'none',
      tasks: [
        {
          name: 'stamp',
          instruction: 'benchmark: say when the worker starts',
          command: `echo "${START_MARK} $(date +%s%N)"; echo ${k} > stamp.txt`,
        },
      ],
    });
    const waited = await httpJson('GET', `${c.url}/api/jobs/${job.id}/wait?for=done&timeout_s=60`);
    if (!waited.met || waited.state.status !== 'done')
      throw new Error(`dispatch job ${k} did not end done: ${waited.state.status} ${waited.state.verdict ?? ''}`);
    const { events } = await httpJson('GET', `${c.url}/api/jobs/${job.id}/events`);
    const ns = events.map((e) => new RegExp(`${START_MARK} (\\d+)`).exec(e.message ?? '')?.[1]).find(Boolean);
    const took = events.find((e) => e.event === 'node' && e.node_event === 'taken');
    if (ns === undefined || took === undefined) {
      lost.push(job.id);
      continue;
    }
    if (k < LAT_WARMUP) continue;
    const start = Number(BigInt(ns) / 1000n) / 1000 - submitted;
    started.push(start);
    const seen = new Set();
    for (const e of events) {
      const kind = `${e.name} ${e.event}${e.node_event ? ` ${e.node_event}` : ''}`;
      if (seen.has(kind)) continue;
      seen.add(kind);
      phases.set(kind, [...(phases.get(kind) ?? []), e.ts * 1000 - submitted]);
    }
    taken.push(took.ts * 1000 - submitted);
    // a short pause between jobs: the previous one's background work (maintenance) is not the next's
    await sleep(20 + Math.random() * 30);
  }
  if (started.length < 50)
    throw new Error(
      `only ${started.length} dispatches timed (${lost.length} without a start mark or a taken event): the bar needs ≥ 50`,
    );
  const p50 = percentile(started, 0.5);
  const p99 = percentile(started, 0.99);
  const before = [...phases]
    .map(([kind, xs]) => [kind, median(xs)])
    .filter(([, m]) => m <= p50)
    .sort((a, b) => a[1] - b[1]);
  return {
    figures: {
      cluster_dispatch_latency_p50_ms: round(p50, 1),
      cluster_dispatch_latency_p99_ms: round(p99, 1),
      cluster_taken_latency_p99_ms: round(percentile(taken, 0.99), 1),
    },
    samples: {
      cluster_dispatch_latency_ms: started.map((x) => round(x, 1)),
      cluster_taken_latency_ms: taken.map((x) => round(x, 1)),
    },
    rows: [
      {
        figure: 'cluster_dispatch_latency_p50_ms',
        value: round(p50, 1),
        unit: 'ms',
        reference: `${started.length} jobs one at a time, 3 idle nodes`,
      },
      {
        figure: 'cluster_dispatch_latency_p99_ms',
        value: round(p99, 1),
        exact: p99,
        unit: 'ms',
        reference: `p99 of the same (max ${round(Math.max(...started), 1)} ms)`,
        bar: { max: 250 },
      },
    ],
    notes: [
      `cluster_dispatch_latency: submit → the coordinator hearing a node took the attempt (its \`node\` event's ts): p50 ${round(percentile(taken, 0.5), 1)} ms, p99 ${round(percentile(taken, 0.99), 1)} ms; the rest to the worker's start is the node fetching the base and adding its worktree`,
      `cluster_dispatch_latency: the job's events before the worker's start, median ms after the submit: ${before.map(([kind, m]) => `${kind} ${round(m, 1)}`).join(', ')}; the worker's start ${round(p50, 1)}`,
      `cluster_dispatch_latency: one clock (the system's, on one machine): the bench's Date.now() before the POST, the worker's \`date +%s%N\`, the coordinator's event ts`,
      ...(lost.length > 0
        ? [`cluster_dispatch_latency: ${lost.length} job(s) had no start mark or taken event and were not counted`]
        : []),
    ],
  };
}

/** The cluster's cases, run after the others (they share one Redis, coordinator and set of nodes, closed at the end). */
export const clusterCases = [
  { name: 'cluster_throughput', run: clusterThroughput },
  { name: 'cluster_dispatch_latency', run: clusterDispatchLatency },
];
