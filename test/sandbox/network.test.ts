import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { runProcess, type ProcessResult } from '../../src/platform/process/run-process.js';
import { wrapWithSandbox, type SandboxCommand } from '../../src/platform/sandbox/bwrap.js';
import {
  hasOnlyLoopbackNameservers,
  loopbackPortOf,
  planNetwork,
  slirp4netnsStatus,
  type SandboxNetwork,
} from '../../src/platform/sandbox/network.js';
import {
  describeNetworks,
  networkSetupOf,
  verificationNetworkOf,
  vetServerPort,
} from '../../src/config/network-config.js';
import { BASE_FLAGS, probeSandbox } from '../../src/platform/sandbox/probe.js';
import { runSuite } from '../../src/verification/run-suite.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { runDoctor } from '../../src/engine/maintenance/doctor.js';
import { secretOf } from '../helpers/credential.js';
import { builtinInput } from '../runners/builtin/helpers.js';
import { startModelServer } from '../support/model-server/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually, gaffer, startServe } from '../reliability/helpers.js';

const probe = probeSandbox();
const slirp = slirp4netnsStatus();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;
const SKIP_SLIRP =
  probe.available && slirp.path !== null
    ? ''
    : ` — SKIPPED: ${probe.available ? 'slirp4netns is not installed' : 'bubblewrap does not work here'}`;
/** The host's first non-loopback IPv4 address: outbound is proved by reaching it (there is no internet here). */
const HOST_ADDRESS =
  Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address ?? null;
const CONNECT = resolve('test/fixtures/bin/net-connect.cjs');
const RUN_MS = 30_000;

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** A TCP server on the host that answers `hello <name>` and hangs up. */
async function startHostServer(name: string, host = '127.0.0.1'): Promise<number> {
  const server = createServer((socket) => socket.end(`hello ${name}`));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, host, r));
  return (server.address() as { port: number }).port;
}

/** `node net-connect.cjs HOST PORT` as a shell line. */
const connect = (host: string, port: number) =>
  `${JSON.stringify(process.execPath)} ${JSON.stringify(CONNECT)} ${host} ${port}`;

function wrap(shellCommand: string, network?: SandboxNetwork, extra: Partial<SandboxCommand> = {}) {
  const wrapped = wrapWithSandbox({ shellCommand, workspace: tempDir(), ...(network ? { network } : {}), ...extra });
  if (wrapped === null) throw new Error('bwrap does not work here');
  return wrapped;
}

async function run(argv: string[], timeoutMs = RUN_MS): Promise<ProcessResult> {
  return runProcess({ argv, cwd: tempDir(), env: process.env, timeoutMs });
}

/** The run folder of this run (its launcher's --run-dir, for a resolv.conf of its own), or null: the relays need none (issue 32). */
const runDirOf = (argv: string[]): string | null => {
  if (!argv.includes('--run-dir')) return null;
  const dir = argv[argv.indexOf('--run-dir') + 1];
  expect(dir, 'the run folder').toMatch(/gaffer-net-/);
  return dir as string;
};

describe('what a sandboxed run reaches', () => {
  it("knows a loopback URL's port, and a resolv.conf that names only loopback resolvers", () => {
    expect(loopbackPortOf('http://127.0.0.1:11434/v1')).toBe(11434);
    expect(loopbackPortOf('http://localhost/v1')).toBe(80);
    expect(loopbackPortOf('https://[::1]/v1')).toBe(443);
    expect(loopbackPortOf('https://api.anthropic.com')).toBeNull();
    expect(loopbackPortOf('not a url')).toBeNull();
    expect(hasOnlyLoopbackNameservers('nameserver 127.0.0.53\noptions edns0\n')).toBe(true);
    expect(hasOnlyLoopbackNameservers('nameserver 127.0.0.53\nnameserver 10.0.0.1\n')).toBe(false);
    expect(hasOnlyLoopbackNameservers('# none\n')).toBe(false);
  });

  it("maps the config: shell and verification none unless allowed, the endpoints' loopback ports forwarded into agent CLIs", () => {
    const models = {
      default: {
        url: 'http://127.0.0.1:11434/v1',
        api: 'openai-compatible' as const,
        model: null,
        key: null,
        keyFrom: null,
      },
      far: {
        url: 'https://api.example.com/v1',
        api: 'openai-compatible' as const,
        model: null,
        key: null,
        keyFrom: null,
      },
    };
    const config = { ...DEFAULT_CONFIG, models, network: { shell: false, verification: true, loopback_ports: [5432] } };
    expect(networkSetupOf(config)).toEqual({ shell: false, loopbackPorts: [5432], endpointPorts: [11434] });
    expect(verificationNetworkOf(config)).toEqual({ mode: 'outbound', loopbackPorts: [5432] });
    expect(verificationNetworkOf(DEFAULT_CONFIG)).toEqual({ mode: 'none', loopbackPorts: [] });
    expect(describeNetworks({ ...config, sandbox: 'off' }, true)).toEqual({
      shell: 'host',
      verification: 'host',
      builtin: 'host',
      'agent CLIs': 'host',
    });
    if (slirp.path !== null)
      expect(describeNetworks(config, true)).toEqual({
        shell: 'none',
        verification: 'outbound',
        builtin: 'none',
        'agent CLIs': 'outbound',
      });
  });

  it('refuses to serve on a port the config forwards into sandboxes, naming the field and the fix', () => {
    const config = { ...DEFAULT_CONFIG, network: { ...DEFAULT_CONFIG.network, loopback_ports: [7070] } };
    expect(() => vetServerPort(config, 7070)).toThrow(
      /network\.loopback_ports: 7070 is the port gaffer serves on.*remove 7070 from network\.loopback_ports, or serve on another port/,
    );
    expect(() => vetServerPort(config, 7071)).not.toThrow();
    const local = {
      ...DEFAULT_CONFIG,
      models: {
        default: {
          url: 'http://localhost:7071/v1',
          api: 'openai-compatible' as const,
          model: null,
          key: null,
          keyFrom: null,
        },
      },
    };
    expect(() => vetServerPort(local, 7071)).toThrow(expect.objectContaining({ field: 'models.default.url' }));
  });
});

describe.skipIf(!probe.available)(`network none (the default)${SKIP}`, () => {
  it("cannot connect to a server on the host's 127.0.0.1, at once, and stays a plain bwrap argv", async () => {
    const port = await startHostServer('host');
    const wrapped = wrap(connect('127.0.0.1', port));
    expect(wrapped.network).toBe('none');
    // bwrap behind the shell that opens the unix-socket filter for it (issue 32), no launcher
    expect(wrapped.argv[4]).toBe(probe.binary);
    expect(wrapped.argv).toContain('--unshare-net');
    expect(wrapped.argv.join(' ')).not.toContain('net-run.cjs');
    const r = await run(wrapped.argv);
    expect(r.tail.trim()).toBe('failed ECONNREFUSED');
    expect(r.exitCode).toBe(3);
    // refused, not a timeout: well under the probe's own 5 s
    expect(r.durationMs).toBeLessThan(4_000);
  });

  it('binds and uses a loopback port of its own (tests that bind ports still work)', async () => {
    const script = `const net = require('net'); const s = net.createServer((c) => c.end('own loopback')).listen(0, '127.0.0.1', () => { net.connect(s.address().port, '127.0.0.1').on('data', (d) => { console.log(String(d)); s.close(); }); });`;
    const r = await run(wrap(`${JSON.stringify(process.execPath)} -e ${JSON.stringify(script)}`).argv);
    expect(r.exitCode).toBe(0);
    expect(r.tail.trim()).toBe('own loopback');
  });

  it('with loopbackPorts reaches exactly those host ports at 127.0.0.1 and no other, with no relay socket on the host', async () => {
    const allowed = await startHostServer('allowed');
    const other = await startHostServer('other');
    const wrapped = wrap(`${connect('127.0.0.1', allowed)}; ${connect('127.0.0.1', other)}; exit 7`, {
      mode: 'none',
      loopbackPorts: [allowed],
    });
    expect(runDirOf(wrapped.argv)).toBeNull();
    expect(wrapped.network).toBe('none');
    const r = await run(wrapped.argv);
    expect(r.tail.trim().split('\n')).toEqual(['hello allowed', 'failed ECONNREFUSED']);
    // the launcher passes the command's exit code through
    expect(r.exitCode).toBe(7);
    expect(r.isGroupGone).toBe(true);
  });

  it('a forwarded port whose host service is down reads as a closed connection, not a hang', async () => {
    const down = await startHostServer('soon gone');
    await new Promise((r) => servers.pop()?.close(r));
    const r = await run(wrap(connect('127.0.0.1', down), { mode: 'none', loopbackPorts: [down] }).argv);
    expect(r.tail.trim()).toMatch(/^(failed ECONNRESET|)$/);
    expect(r.durationMs).toBeLessThan(4_000);
  });

  it('the verification runs with network none by default, and reaches a forwarded port when given one', async () => {
    const port = await startHostServer('for the tests');
    const ws = tempDir();
    const suite = (network?: SandboxNetwork) =>
      runSuite({
        command: connect('127.0.0.1', port),
        cwd: ws,
        kind: null,
        timeoutMs: RUN_MS,
        signal: new AbortController().signal,
        logFile: join(tempDir(), 'v.log'),
        sandbox: true,
        ...(network ? { network } : {}),
      });
    const cut = await suite();
    expect(cut.tail.trim()).toBe('failed ECONNREFUSED');
    const forwarded = await suite({ mode: 'none', loopbackPorts: [port] });
    expect(forwarded.tail.trim()).toBe(`hello for the tests`);
    expect(forwarded.exitCode).toBe(0);
  });

  it('shell workers run with network none and say so on their report; network.shell gives them outbound', async () => {
    const port = await startHostServer('api');
    const input = (ws: string) => ({
      jobId: 'j',
      workerName: 'w',
      attempt: 1,
      role: 'worker' as const,
      instruction: 'probe',
      workspace: ws,
      command: connect('127.0.0.1', port),
      model: null,
      timeoutMs: RUN_MS,
      maxRounds: 1,
      resume: null,
      files: [],
      outputs: [],
      sandbox: true,
      env: process.env,
      logFile: join(ws, '..', 'w.log'),
      instructionFile: join(ws, '..', 'w.txt'),
      signal: new AbortController().signal,
    });
    const shell = createRunners({ sandbox: 'auto' }).get('shell');
    const report = await shell?.run(input(tempDir()));
    expect(report).toMatchObject({ sandboxed: true, network: 'none', status: 'error' });
    expect(report?.summary).toContain('failed ECONNREFUSED');
    if (slirp.path === null) return;
    const open = await createRunners({ sandbox: 'auto', network: { shell: true } })
      .get('shell')
      ?.run(input(tempDir()));
    // outbound still has no route to the host's loopback
    expect(open).toMatchObject({ sandboxed: true, network: 'outbound', status: 'error' });
    expect(open?.summary).toContain('failed ECONNREFUSED');
  });
});

describe.skipIf(!probe.available)(`the builtin agent's commands${SKIP}`, () => {
  it("run with network none: a command cannot reach the host's loopback while gaffer itself talks to the model there", async () => {
    const server = await startModelServer();
    try {
      const port = Number(new URL(server.url).port);
      server.script([
        { toolCalls: [{ name: 'run_command', args: { command: connect('127.0.0.1', port) } }] },
        { text: 'Tried.\nFiles changed:\n(none)' },
      ]);
      const builtin = createRunners({
        sandbox: 'auto',
        builtin: { endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' } },
      }).get('builtin');
      const data = tempDir();
      const report = await builtin?.run(builtinInput(tempDir(), data, { sandbox: true }));
      expect(report).toMatchObject({ status: 'done', sandboxed: true, network: 'none' });
      expect(server.requests[1]?.toolResults[0]?.output).toContain('failed ECONNREFUSED');
    } finally {
      await server.close();
    }
  });
});

describe.skipIf(SKIP_SLIRP !== '')(`network outbound (slirp4netns)${SKIP_SLIRP}`, () => {
  afterEach(() => {
    slirp4netnsStatus({ refresh: true });
  });

  it('has its network before the command starts: tap0 up at 10.0.2.100 with a default route, every time', async () => {
    for (let i = 0; i < 5; i++) {
      const wrapped = wrap('ip -4 -o addr show tap0; ip route show default', { mode: 'outbound' });
      expect(wrapped.network).toBe('outbound');
      const r = await run(wrapped.argv);
      expect(r.exitCode).toBe(0);
      expect(r.tail).toMatch(/tap0\s+inet 10\.0\.2\.100\//);
      expect(r.tail).toMatch(/^default via 10\.0\.2\.2 dev tap0/m);
    }
  });

  it.skipIf(HOST_ADDRESS === null)(
    `reaches the host's non-loopback address but not its loopback (127.0.0.1 nor 10.0.2.2)${HOST_ADDRESS === null ? ' — SKIPPED: this host has no non-loopback IPv4 address' : ''}`,
    async () => {
      const outside = await startHostServer('eth0', HOST_ADDRESS ?? '0.0.0.0');
      const loop = await startHostServer('loopback');
      const r = await run(
        wrap(`${connect(HOST_ADDRESS ?? '', outside)}; ${connect('127.0.0.1', loop)}; ${connect('10.0.2.2', loop)}`, {
          mode: 'outbound',
        }).argv,
      );
      // slirp4netns answers for the host's loopback behind 10.0.2.2 with an ICMP unreachable
      expect(r.tail.trim().split('\n')).toEqual([
        'hello eth0',
        'failed ECONNREFUSED',
        expect.stringMatching(/^failed (ECONNREFUSED|ENETUNREACH)$/),
      ]);
      expect(r.durationMs).toBeLessThan(8_000);
    },
  );

  it('forwards the chosen loopback port and only it', async () => {
    const allowed = await startHostServer('endpoint');
    const other = await startHostServer('api');
    const r = await run(
      wrap(`${connect('127.0.0.1', allowed)}; ${connect('127.0.0.1', other)}; ${connect('10.0.2.2', other)}; exit 5`, {
        mode: 'outbound',
        loopbackPorts: [allowed],
      }).argv,
    );
    expect(r.tail.trim().split('\n')).toEqual([
      'hello endpoint',
      'failed ECONNREFUSED',
      expect.stringMatching(/^failed (ECONNREFUSED|ENETUNREACH)$/),
    ]);
    expect(r.exitCode).toBe(5);
  });

  it("stays in the run's process group: a timeout ends the launcher, bwrap and slirp4netns, and its run folder goes", async () => {
    const port = await startHostServer('x');
    const mark = `gaffer-net-wait-${process.pid}-${Date.now()}`;
    const wrapped = wrap(`sleep 60 # ${mark}`, { mode: 'outbound', loopbackPorts: [port] });
    const runDir = runDirOf(wrapped.argv);
    const r = await run(wrapped.argv, 1_500);
    expect(r.timedOut).toBe(true);
    expect(r.isGroupGone).toBe(true);
    expect(listGroupMembers(r.pgid ?? -1)).toEqual([]);
    if (runDir !== null) expect(existsSync(runDir)).toBe(false);
  });

  it('passes a signal that ended bwrap through as the same signal', async () => {
    const wrapped = wrap('sleep 60', { mode: 'outbound' });
    const ac = new AbortController();
    const running = runProcess({
      argv: wrapped.argv,
      cwd: tempDir(),
      env: process.env,
      timeoutMs: RUN_MS,
      signal: ac.signal,
    });
    await new Promise((r) => setTimeout(r, 500));
    ac.abort();
    const r = await running;
    expect(r.isCancelled).toBe(true);
    expect(r.signal).toBe('SIGTERM');
  });

  it('works unprivileged too: bwrap in a user namespace of its own, slirp4netns joining it', async () => {
    const port = await startHostServer('userns');
    const inner = ['/bin/sh', '-c', `ip -4 -o addr show tap0 && ${connect('127.0.0.1', port)}`];
    const plan = planNetwork({ mode: 'outbound', loopbackPorts: [port] }, inner, { userns: true });
    const argv = plan.outer([
      probe.binary ?? 'bwrap',
      '--unshare-user',
      ...BASE_FLAGS,
      ...plan.bwrapArgs,
      '--',
      ...plan.inner,
    ]);
    expect(argv).toContain('--userns');
    const r = await run(argv);
    expect(r.exitCode, r.tail).toBe(0);
    expect(r.tail).toMatch(/tap0\s+inet 10\.0\.2\.100\//);
    expect(r.tail).toContain('hello userns');
  });

  it('gaffer doctor says slirp4netns was found, its trial worked, and the network of each kind of run', async () => {
    const report = await runDoctor({
      dataDir: join(tempDir('gaffer-doctor-data-'), 'data'),
      env: { ...process.env, GAFFER_CONFIG: '' },
    });
    const check = report.checks.find((c) => c.name === 'network');
    expect(check?.status).toBe('ok');
    expect(check?.detail).toContain(`${slirp.version ?? ''} at ${slirp.path ?? ''}`);
    expect(check?.detail).toContain('a trial run had its own tap0 through slirp4netns before it started');
    expect(check?.detail).toContain('shell none, verification none, builtin none, agent CLIs outbound');
  });

  it('without slirp4netns falls back to the host network and says so; sandbox: required refuses instead', async () => {
    slirp4netnsStatus({ refresh: true, env: { PATH: '/nonexistent' } });
    const wrapped = wrap('true', { mode: 'outbound' });
    expect(wrapped.network).toBe('host');
    expect(wrapped.argv).not.toContain('--unshare-net');
    const refused = createSandbox('required').wrap({
      shellCommand: 'true',
      workspace: tempDir(),
      network: { mode: 'outbound' },
    });
    expect('refused' in refused ? refused.refused : null).toMatch(
      /sandbox: required.*slirp4netns is not installed.*apt-get install slirp4netns/,
    );
    expect(
      createSandbox('auto').wrap({ shellCommand: 'true', workspace: tempDir(), network: { mode: 'outbound' } }),
    ).toMatchObject({ sandboxed: true, network: 'host' });
    const report = await runDoctor({
      dataDir: join(tempDir('gaffer-doctor-data-'), 'data'),
      env: { ...process.env, GAFFER_CONFIG: '' },
    });
    expect(report.checks.find((c) => c.name === 'network')).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining(
        "slirp4netns not found: runs that need outbound network get the host network, gaffer's API included: shell none, verification none, builtin none, agent CLIs host",
      ),
      fix: 'install slirp4netns (apt-get install slirp4netns)',
    });
  });
});

const FINAL = ['done', 'partial', 'error', 'cancelled', 'interrupted'];

async function settle(url: string, id: string): Promise<any> {
  let job: any;
  await eventually(
    async () => FINAL.includes((job = (await call(url, 'GET', `/api/jobs/${id}?full=1`)).json)?.status),
    90_000,
    `job ${id} to settle`,
  );
  return job;
}

describe.skipIf(!probe.available)(`the attack of issue 11: a sandboxed worker drives gaffer's API${SKIP}`, () => {
  it('a shell worker and its verification have no route to a real gaffer serve — even holding its secret; no job is created, none cancelled', async () => {
    const data = join(tempDir(), 'data');
    const served = await startServe(data);
    const { url } = served;
    const outside = tempDir('gaffer-attack-target-');
    const victim = await call(url, 'POST', '/api/jobs', {
      workspace: makeWorkspace({ 'a.txt': 'a\n' }),
      verify: 'none',
      timeout_s: 120,
      tasks: [{ instruction: 'wait', command: 'sleep 60' }],
    });
    expect(victim.status, victim.text).toBe(202);
    // the credential is masked inside the sandbox; the worker is handed it here so only the network stands in the way
    const auth = `authorization: Bearer ${secretOf(url)}`;
    const create = JSON.stringify({
      workspace: outside,
      verify: 'none',
      tasks: [{ instruction: 'escape', command: 'touch pwned' }],
    });
    const attack = [
      `curl -sS -m 5 -X POST -H '${auth}' -H 'content-type: application/json' -d '${create}' ${url}/api/jobs; echo "create: curl exit $?"`,
      `curl -sS -m 5 -X POST -H '${auth}' ${url}/api/jobs/${victim.json.id}/cancel; echo "cancel: curl exit $?"`,
      `${JSON.stringify(process.execPath)} -e 'fetch(process.argv[1]).then((r) => console.log("fetch:", r.status), (e) => console.log("fetch failed:", e.cause?.code))' ${url}/api/health`,
      'exit 0',
    ].join('\n');
    const posted = await call(url, 'POST', '/api/jobs', {
      workspace: makeWorkspace({ 'b.txt': 'b\n' }),
      timeout_s: 60,
      verify: `curl -sS -m 5 -H '${auth}' ${url}/api/health && exit 1 || exit 0`,
      tasks: [{ name: 'attacker', instruction: 'drive the API', command: attack }],
    });
    expect(posted.status, posted.text).toBe(202);
    const job = await settle(url, posted.json.id);
    const worker = job.result.workers[0];
    expect(worker).toMatchObject({ name: 'attacker', sandboxed: true, network: 'none', status: 'done' });
    const log = (await call(url, 'GET', `/api/jobs/${posted.json.id}/workers/attacker/log`)).text;
    expect(log).toMatch(/create: curl exit 7/);
    expect(log).toMatch(/cancel: curl exit 7/);
    expect(log).toContain('fetch failed: ECONNREFUSED');
    // the verification could not reach the API either (its curl failing is what makes it pass)
    expect(job.result.verification).toMatchObject({ ran: true, ok: true });
    // the API's state is unchanged: the two jobs only, the victim still running, nothing written outside
    const jobs = (await call(url, 'GET', '/api/jobs')).json;
    expect(jobs.jobs.map((j: any) => j.id).sort()).toEqual([victim.json.id, posted.json.id].sort());
    expect((await call(url, 'GET', `/api/jobs/${victim.json.id}`)).json.status).toBe('running');
    expect(existsSync(join(outside, 'pwned'))).toBe(false);
    await call(url, 'POST', `/api/jobs/${victim.json.id}/cancel`);
    await settle(url, victim.json.id);
  });

  it('config network.loopback_ports reaches a worker and the verification of a real gaffer serve, and no other host port does', async () => {
    const db = await startHostServer('database');
    const other = await startHostServer('other');
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ network: { loopback_ports: [db] } }));
    const { url } = await startServe(data);
    const posted = await call(url, 'POST', '/api/jobs', {
      workspace: makeWorkspace({ 'c.txt': 'c\n' }),
      timeout_s: 60,
      verify: `${connect('127.0.0.1', db)} | grep -qx 'hello database'`,
      tasks: [
        {
          name: 'client',
          instruction: 'use the database',
          command: `${connect('127.0.0.1', db)}; ${connect('127.0.0.1', other)}; exit 0`,
        },
      ],
    });
    expect(posted.status, posted.text).toBe(202);
    const job = await settle(url, posted.json.id);
    expect(job.result.workers[0]).toMatchObject({ sandboxed: true, network: 'none', status: 'done' });
    const log = (await call(url, 'GET', `/api/jobs/${posted.json.id}/workers/client/log`)).text;
    expect(log).toContain('hello database\nfailed ECONNREFUSED');
    expect(job.result.verification).toMatchObject({ ran: true, ok: true });
  });

  it('gaffer serve refuses a port the config forwards into sandboxes', async () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ network: { loopback_ports: [47_913] } }));
    const r = await gaffer(data, ['serve', '--port', '47913']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('network.loopback_ports: 47913 is the port gaffer serves on');
  });
});

/** Live processes of process group `pgid`, read from /proc (slirp4netns and the launcher would be there). */
function listGroupMembers(pgid: number): string[] {
  return readdirSync('/proc').filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields[0] !== 'Z' && Number(fields[2]) === pgid;
    } catch {
      return false;
    }
  });
}
