// Issue 32 point 4: no unix socket of the host from inside a sandbox with a network of its own.
// Listeners sit under /var/tmp and /run (the red team's redis socket under /var/tmp; docker.sock,
// the session bus and ssh-agents live under /run); sandboxed workers try to drive them to write a
// marker outside, with node, python, curl, a datagram socketpair and redis-cli. The marker must
// not appear, and honest work (node, git, npm test, node's IPC) must still run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { wrapWithSandbox, type SandboxCommand } from '../../src/platform/sandbox/bwrap.js';
import { slirp4netnsStatus, type SandboxNetwork } from '../../src/platform/sandbox/network.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { buildUnixSocketFilter, unixSocketFilterFile } from '../../src/platform/sandbox/seccomp.js';
import { runProcess, type ProcessResult } from '../../src/platform/process/run-process.js';
import { runDoctor } from '../../src/engine/maintenance/doctor.js';
import { Engine } from '../../src/engine/engine.js';
import { resultOf, verificationOf } from '../helpers/answer.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const probe = probeSandbox();
const slirp = slirp4netnsStatus();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;
const SKIP_SLIRP =
  probe.available && slirp.path !== null
    ? ''
    : ` — SKIPPED: ${probe.available ? 'slirp4netns is not installed' : 'bubblewrap does not work here'}`;
const REDIS =
  spawnSync('sh', ['-c', 'command -v redis-server && command -v redis-cli'], { encoding: 'utf8' }).status === 0;
const PYTHON = spawnSync('python3', ['-c', 'pass']).status === 0;
const CURL = spawnSync('curl', ['--version']).status === 0;
const NODE = JSON.stringify(process.execPath);
const RUN_MS = 30_000;

const cleanups: (() => void)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** A folder of this test under `root` (/var/tmp, /run), removed after. */
function hostDir(root: string): string {
  const dir = join(root, `gaffer-unix-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { mode: 0o755 });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A host service on a unix socket that writes whatever a client sends into `marker` (what the red
 * team made redis do), on a stream socket at `dir/stream.sock` and a datagram socket at `dir/dgram.sock`.
 */
async function startWritingService(dir: string): Promise<{ stream: string; dgram: string; marker: string }> {
  const marker = join(dir, 'marker');
  const stream = join(dir, 'stream.sock');
  const server: Server = createServer((c) => {
    // a client that hangs up at once (curl, after its answer) must not fail the test file
    c.on('error', () => c.destroy());
    c.on('data', (d) => {
      appendFileSync(marker, d);
      c.end('HTTP/1.0 200 OK\r\n\r\n');
    });
  });
  await new Promise<void>((r) => server.listen(stream, r));
  cleanups.push(() => server.close());
  // node has no unix datagram sockets: python's stands in for journald's or syslog's
  const dgram = join(dir, 'dgram.sock');
  let py: ChildProcess | null = null;
  if (PYTHON) {
    py = spawn(
      'python3',
      [
        '-c',
        `import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint('ready',flush=True)\nwhile True:\n  d=s.recv(4096)\n  open(sys.argv[2],'ab').write(d)`,
        dgram,
        marker,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    cleanups.push(() => py?.kill('SIGKILL'));
    await new Promise<void>((r) => py?.stdout?.once('data', () => r()));
  }
  return { stream, dgram, marker };
}

function wrap(shellCommand: string, network?: SandboxNetwork, extra: Partial<SandboxCommand> = {}) {
  const wrapped = wrapWithSandbox({
    shellCommand,
    workspace: extra.workspace ?? tempDir(),
    ...(network ? { network } : {}),
    ...extra,
  });
  if (wrapped === null) throw new Error('bwrap does not work here');
  return wrapped;
}

async function run(argv: string[], cwd = tempDir()): Promise<ProcessResult> {
  return runProcess({ argv, cwd, env: process.env, timeoutMs: RUN_MS });
}

/** Each way a worker would drive a unix socket at `stream` (and `dgram`) to write `pwned-<how>`; each prints `<how>: <outcome>`. */
function attacks(stream: string, dgram: string): string {
  const nodeConnect = `const s=require('net').connect(${JSON.stringify(stream)});s.on('connect',()=>{s.end('pwned-node');console.log('node: connected')});s.on('error',(e)=>console.log('node: '+e.code))`;
  const lines = [`${NODE} -e ${JSON.stringify(nodeConnect)}`];
  if (PYTHON) {
    const py = [
      'import socket',
      'try:',
      `  s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(${JSON.stringify(stream)}); s.sendall(b"pwned-python"); print("python: connected")`,
      'except OSError as e: print("python: " + str(e))',
      'try:',
      `  a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"pwned-dgram", ${JSON.stringify(dgram)}); print("dgram: sent")`,
      'except OSError as e: print("dgram: " + str(e))',
    ].join('\n');
    lines.push(`python3 -c '${py}'`);
  }
  if (CURL)
    lines.push(
      `curl -s -m 3 --unix-socket ${JSON.stringify(stream)} -d pwned-curl http://x/ >/dev/null 2>&1; echo "curl: $?"`,
    );
  return lines.join('; ');
}

describe('the unix-socket filter program', () => {
  it('is classic BPF for x86_64 and aarch64 (arch checked, x32 and io_uring refused), and none elsewhere', () => {
    for (const arch of ['x64', 'arm64']) {
      const bytes = buildUnixSocketFilter(arch);
      expect(bytes).not.toBeNull();
      expect((bytes as Buffer).length % 8).toBe(0);
      // first: load seccomp_data.arch (BPF_LD|BPF_W|BPF_ABS, k = 4)
      expect((bytes as Buffer).readUInt16LE(0)).toBe(0x20);
      expect((bytes as Buffer).readUInt32LE(4)).toBe(4);
      expect((bytes as Buffer).length / 8).toBeLessThan(64);
    }
    expect((buildUnixSocketFilter('x64') as Buffer).includes(Buffer.from([0x3e, 0x00, 0x00, 0xc0]))).toBe(true);
    expect((buildUnixSocketFilter('arm64') as Buffer).includes(Buffer.from([0xb7, 0x00, 0x00, 0xc0]))).toBe(true);
    expect(buildUnixSocketFilter('riscv64')).toBeNull();
  });
});

describe.skipIf(!probe.available)(`network none: no unix socket of the host${SKIP}`, () => {
  it('bwrap loads the filter here', () => {
    expect(probe.unixSocketFilter, probe.unixSocketFilterReason).toBe(true);
  });

  for (const root of ['/var/tmp', '/run']) {
    it(`a worker cannot drive a service on a socket under ${root} to write outside`, async () => {
      const { stream, dgram, marker } = await startWritingService(hostDir(root));
      // the service works from outside: the attacks would land without the filter
      const outside = await run(['/bin/sh', '-c', attacks(stream, dgram)]);
      expect(outside.tail).toContain('node: connected');
      await new Promise((r) => setTimeout(r, 200));
      expect(readFileSync(marker, 'utf8')).toContain('pwned-node');
      rmSync(marker);

      const wrapped = wrap(attacks(stream, dgram));
      expect(wrapped.network).toBe('none');
      expect(wrapped.unixSocketFilter).toBe(true);
      const r = await run(wrapped.argv);
      expect(r.tail).toContain('node: EAFNOSUPPORT');
      if (PYTHON) expect(r.tail).toContain('python: [Errno 97] Address family not supported by protocol');
      if (PYTHON) expect(r.tail).toContain('dgram: [Errno 97] Address family not supported by protocol');
      if (CURL) expect(r.tail).toMatch(/curl: [1-9]/);
      await new Promise((r) => setTimeout(r, 200));
      expect(existsSync(marker), `the service wrote ${existsSync(marker) ? readFileSync(marker, 'utf8') : ''}`).toBe(
        false,
      );
    });
  }

  it.skipIf(!REDIS)(
    'redis-server on a socket under /var/tmp: redis-cli from inside cannot make it write a file outside',
    async () => {
      const dir = hostDir('/var/tmp');
      const socket = join(dir, 'redis.sock');
      const redis = spawn(
        'redis-server',
        [
          '--port',
          '0',
          '--unixsocket',
          socket,
          '--unixsocketperm',
          '777',
          '--dir',
          dir,
          '--dbfilename',
          'pwned.rdb',
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        { stdio: 'ignore' },
      );
      cleanups.push(() => redis.kill('SIGKILL'));
      const deadline = Date.now() + 10_000;
      while (!existsSync(socket) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const drive = `redis-cli -s ${socket} SET k pwned; redis-cli -s ${socket} SAVE`;
      const r = await run(wrap(`${drive}; echo done`).argv);
      expect(r.tail).toContain('done');
      expect(r.tail).not.toContain('OK');
      expect(existsSync(join(dir, 'pwned.rdb'))).toBe(false);
      // the same from outside writes it: the service was there to drive
      spawnSync('sh', ['-c', drive]);
      expect(existsSync(join(dir, 'pwned.rdb'))).toBe(true);
    },
  );

  it('honest work still runs: node with a child over IPC, git, npm test of a fixture, a stream socketpair, its own loopback', async () => {
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const ipc = `const {fork}=require('child_process'); if (process.send) { process.send('pong'); process.exit(0) } const c=fork(__filename); c.on('message',(m)=>console.log('ipc '+m))`;
    mkdirSync(join(ws, 'lib'));
    writeFileSync(join(ws, 'lib', 'ipc.cjs'), ipc);
    const lines = [
      `${NODE} lib/ipc.cjs`,
      'git status --short && git -c user.name=t -c user.email=t@t commit -qam x --allow-empty && echo git ok',
      ...(PYTHON
        ? [`python3 -c "import socket; a,b=socket.socketpair(); a.send(b'pair ok'); print(b.recv(9).decode())"`]
        : []),
      `${NODE} -e "const n=require('net');const s=n.createServer(c=>c.end('tcp ok')).listen(0,'127.0.0.1',()=>n.connect(s.address().port,'127.0.0.1').on('data',d=>{console.log(String(d));s.close()}))"`,
    ];
    const r = await run(wrap(lines.join(' && '), undefined, { workspace: ws }).argv, ws);
    expect(r.exitCode, r.tail).toBe(0);
    expect(r.tail).toContain('ipc pong');
    expect(r.tail).toContain('git ok');
    if (PYTHON) expect(r.tail).toContain('pair ok');
    expect(r.tail).toContain('tcp ok');
  });

  it('what it costs: a test that listens on a unix socket inside (a path in the workspace, or an abstract name) fails with EAFNOSUPPORT', async () => {
    const ws = makeWorkspace({});
    const listen = (where: string) =>
      `${NODE} -e "require('net').createServer().listen(${where}, () => console.log('listening')).on('error', (e) => console.log('listen ' + e.code))"`;
    const r = await run(
      wrap(`${listen("'./own.sock'")}; ${listen("'\\\\0gaffer-abstract'")}`, undefined, { workspace: ws }).argv,
      ws,
    );
    expect(r.tail.trim().split('\n')).toEqual(['listen EAFNOSUPPORT', 'listen EAFNOSUPPORT']);
  });

  it.skipIf(!PYTHON || process.arch !== 'x64')(
    'io_uring cannot be set up inside (it would make and connect sockets past the filter)',
    async () => {
      const py = [
        'import ctypes',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'r = libc.syscall(425, 4, ctypes.create_string_buffer(120))',
        'print("io_uring", r, ctypes.get_errno())',
      ].join('\n');
      const r = await run(wrap(`python3 -c '${py}'`).argv);
      expect(r.tail.trim()).toBe('io_uring -1 38');
    },
  );

  it('writes the filter again when something removed it (a tmp cleaner under a long gaffer serve): a run never goes unfiltered', async () => {
    const first = unixSocketFilterFile() as string;
    // one file per user and filter, shared by this user's gaffer processes, in a folder only it can write
    expect(dirname(first)).toBe(join(tmpdir(), `gaffer-seccomp-${process.getuid?.() ?? ''}`));
    expect(statSync(dirname(first)).mode & 0o777).toBe(0o700);
    expect(statSync(first).mode & 0o777).toBe(0o600);
    rmSync(dirname(first), { recursive: true, force: true });
    const wrapped = wrap(attacks('/run/none.sock', '/run/none-dgram.sock'));
    const second = unixSocketFilterFile() as string;
    expect(wrapped.argv).toContain(second);
    expect(readFileSync(second)).toEqual(buildUnixSocketFilter());
    const r = await run(wrapped.argv);
    expect(r.tail).toContain('node: EAFNOSUPPORT');

    // a shared folder anyone can write (planted in a shared /tmp) is not used: one of this process's own is
    const oldTmp = process.env.TMPDIR;
    const tmp = tempDir();
    mkdirSync(join(tmp, `gaffer-seccomp-${process.getuid?.() ?? ''}`), { mode: 0o777 });
    chmodSync(join(tmp, `gaffer-seccomp-${process.getuid?.() ?? ''}`), 0o777);
    process.env.TMPDIR = tmp;
    try {
      rmSync(second);
      const third = unixSocketFilterFile() as string;
      expect(dirname(third)).toMatch(new RegExp(`^${tmp}/gaffer-seccomp-(?!${process.getuid?.() ?? ''}$)`));
      expect(readFileSync(third)).toEqual(buildUnixSocketFilter());
    } finally {
      process.env.TMPDIR = oldTmp;
      if (oldTmp === undefined) delete process.env.TMPDIR;
    }
  });

  it('npm test of the node-test fixture gives the same counts inside as outside', async () => {
    const ws = makeWorkspace({});
    cpSync(resolve('test/fixtures/projects/node-test'), ws, { recursive: true });
    const env = { ...process.env, FLAKY_STATE_DIR: tempDir() };
    const outside = await runProcess({ argv: ['/bin/sh', '-c', 'npm test 2>&1'], cwd: ws, env, timeoutMs: 60_000 });
    const inside = await runProcess({
      argv: wrap('npm test 2>&1', undefined, { workspace: ws }).argv,
      cwd: ws,
      env: { ...env, FLAKY_STATE_DIR: tempDir() },
      timeoutMs: 60_000,
    });
    const counts = (t: string) => t.match(/^# (pass|fail|skipped) \d+$/gm);
    expect(counts(inside.tail)).toEqual(counts(outside.tail));
    expect(counts(inside.tail)).not.toBeNull();
    expect(inside.exitCode).toBe(outside.exitCode);
  });

  it('with forwarded loopback ports the relay still works (no unix socket inside), and host sockets stay out of reach', async () => {
    const { stream, dgram, marker } = await startWritingService(hostDir('/run'));
    const server = createServer((c) => c.end('hello relayed'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => server.close());
    const port = (server.address() as { port: number }).port;
    const wrapped = wrap(
      `${NODE} ${JSON.stringify(resolve('test/fixtures/bin/net-connect.cjs'))} 127.0.0.1 ${port}; ${attacks(stream, dgram)}`,
      { mode: 'none', loopbackPorts: [port] },
    );
    expect(wrapped.argv.join(' ')).not.toContain('--socket-dir');
    const r = await run(wrapped.argv);
    expect(r.tail).toContain('hello relayed');
    expect(r.tail).toContain('node: EAFNOSUPPORT');
    expect(existsSync(marker)).toBe(false);
  });
});

describe.skipIf(!probe.available)(`through the engine${SKIP}`, () => {
  it("a shell job's worker and its verification cannot drive a host socket under /var/tmp; the job still runs", async () => {
    const { stream, dgram, marker } = await startWritingService(hostDir('/var/tmp'));
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data') });
    cleanups.push(() => void engine.close());
    const ws = makeWorkspace({ 'a.txt': 'a\n', 'attack.sh': `${attacks(stream, dgram)}\n` }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      // passes only when the verification's own attempt was refused
      verify: 'sh attack.sh | grep "node: EAFNOSUPPORT"',
      fix_rounds: 0,
      tasks: [{ instruction: 'reach the host', command: 'sh attack.sh > attack.txt; echo b > b.txt' }],
    });
    await engine.settled(job.id);
    const done = engine.get(job.id, { full: true });
    expect(resultOf(done).workers[0]).toMatchObject({ sandboxed: true, network: 'none' });
    expect(verificationOf(done)).toMatchObject({ ran: true, ok: true });
    expect(readFileSync(join(ws, 'attack.txt'), 'utf8')).toContain('node: EAFNOSUPPORT');
    expect(readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('b\n');
    await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(marker), existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe(false);
  });
});

describe.skipIf(!probe.available || slirp.path === null)(`network outbound: only gaffer's relays${SKIP_SLIRP}`, () => {
  it('reaches a forwarded port through the relay, and no unix socket of the host under /var/tmp or /run', async () => {
    const a = await startWritingService(hostDir('/var/tmp'));
    const b = await startWritingService(hostDir('/run'));
    const server = createServer((c) => c.end('hello outbound relay'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => server.close());
    const port = (server.address() as { port: number }).port;
    const wrapped = wrap(
      `${NODE} ${JSON.stringify(resolve('test/fixtures/bin/net-connect.cjs'))} 127.0.0.1 ${port}; ${attacks(a.stream, a.dgram)}; ${attacks(b.stream, b.dgram)}`,
      { mode: 'outbound', loopbackPorts: [port] },
    );
    expect(wrapped.network).toBe('outbound');
    expect(wrapped.unixSocketFilter).toBe(true);
    const r = await run(wrapped.argv);
    expect(r.tail).toContain('hello outbound relay');
    expect(r.tail.match(/node: EAFNOSUPPORT/g)).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(a.marker) || existsSync(b.marker)).toBe(false);
  });

  it("a run on the host network (outbound asked, slirp4netns missing) gets no filter: it has the host's network anyway", () => {
    slirp4netnsStatus({ refresh: true, env: { PATH: '/nonexistent' } });
    try {
      const wrapped = wrap('true', { mode: 'outbound' });
      expect(wrapped.network).toBe('host');
      expect(wrapped.unixSocketFilter).toBe(false);
      expect(wrapped.argv).not.toContain('--seccomp');
    } finally {
      slirp4netnsStatus({ refresh: true });
    }
  });
});

describe.skipIf(!probe.available)(`gaffer doctor${SKIP}`, () => {
  it('says the unix-socket filter holds: a trial worker could not make a unix socket', async () => {
    const report = await runDoctor({
      dataDir: join(tempDir('gaffer-doctor-data-'), 'data'),
      env: { ...process.env, GAFFER_CONFIG: '' },
    });
    const check = report.checks.find((c) => c.name === 'sandbox');
    expect(check?.status, check?.detail).toBe('ok');
    expect(check?.detail).toContain(
      'unix sockets: a trial worker could not make a unix socket (EAFNOSUPPORT): runs with a network of their own (none, outbound) reach no unix socket of the host',
    );
  });
});
