import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { Engine } from '../../src/engine/engine.js';
import { wrapWithSandbox } from '../../src/platform/sandbox/bwrap.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { listProgramDirs, resolveOutside } from '../../src/platform/sandbox/visible.js';
import { runSuite } from '../../src/verification/run-suite.js';
import { BuiltinRunner } from '../../src/runners/builtin/builtin-runner.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { startModelServer } from '../support/model-server/index.js';
import { builtinInput, endpointOf } from '../runners/builtin/helpers.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { resultOf, verificationOf } from '../helpers/answer.js';

// issue 32, point 3: what a worker plants in a dependency folder or a virtualenv must not decide what
// the next sandbox gaffer builds binds (its verification, a fix round, the next job), and the
// credential stores stay masked whatever the private HOME is (this bwrap has no --tmp-overlay: an
// empty tmpfs HOME, where the masks used to be skipped)

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

const savedHome = process.env.HOME;
const homes: string[] = [];
afterAll(() => {
  process.env.HOME = savedHome;
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

interface FakeHome {
  home: string;
  /** In ~/.ssh/id_rsa, ~/.aws/credentials and a private project's notes below HOME. */
  marker: string;
}

/** A HOME below `parent` (outside /tmp, so only the sandbox's private HOME hides it) with a key, AWS credentials and a private project. */
function makeHome(parent: string): FakeHome {
  const home = mkdtempSync(join(parent, 'gaffer-home-'));
  homes.push(home);
  const marker = `PLANTED-${randomBytes(6).toString('hex')}`;
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  writeFileSync(join(home, '.ssh', 'id_rsa'), `-----BEGIN KEY----- ${marker}\n`);
  mkdirSync(join(home, '.aws'));
  writeFileSync(join(home, '.aws', 'credentials'), `aws_secret_access_key = ${marker}\n`);
  mkdirSync(join(home, 'projects', 'private', 'bin'), { recursive: true });
  writeFileSync(join(home, 'projects', 'private', 'notes.txt'), `notes ${marker}\n`);
  writeFileSync(
    join(home, 'projects', 'private', 'bin', 'pip'),
    `#!/bin/sh\ncat ${join(home, 'projects', 'private', 'notes.txt')}\n`,
  );
  chmodSync(join(home, 'projects', 'private', 'bin', 'pip'), 0o755);
  return { home, marker };
}

/** The shell a worker runs to plant the links: a dependency folder's and a scoped package's into credential stores, a venv's into a key and a private project. */
function plantLinks(home: string): string {
  const q = (p: string) => JSON.stringify(p);
  return [
    'mkdir -p node_modules/@s .venv/bin',
    `ln -s ${q(join(home, '.ssh'))} node_modules/x`,
    `ln -s ${q(join(home, '.aws'))} node_modules/@s/y`,
    `ln -s ${q(join(home, 'projects', 'private'))} node_modules/z`,
    `ln -s ${q(join(home, '.ssh', 'id_rsa'))} .venv/bin/python`,
    `ln -s ${q(join(home, 'projects', 'private', 'bin', 'pip'))} .venv/bin/pip`,
  ].join(' && ');
}

/** What reads every planted link back. */
const READ_BACK =
  'cat node_modules/x/id_rsa node_modules/@s/y/credentials node_modules/z/notes.txt .venv/bin/python; .venv/bin/pip; true';

function run(argv: string[], cwd?: string): { status: number | null; stdout: string; stderr: string } {
  const [file, ...args] = argv;
  const r = spawnSync(file as string, args, {
    encoding: 'utf8',
    timeout: 30_000,
    ...(cwd === undefined ? {} : { cwd }),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every regular file below `dir` whose content holds `text` (the data dir's logs, the workspace). */
function filesHolding(dir: string, text: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      // the links themselves are not followed: this reads what landed in the folder, not what a link shows
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (st === undefined) continue;
      if (st.isDirectory()) walk(path);
      else if (st.isFile() && st.size < 10_000_000 && readFileSync(path).includes(text)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function openEngine(): Promise<{ engine: Engine; dataDir: string }> {
  const dataDir = join(tempDir('gaffer-data-'), 'data');
  const engine = await Engine.open({ dataDir });
  engines.push(engine);
  return { engine, dataDir };
}

async function runToEnd(engine: Engine, body: Record<string, unknown>): Promise<CompactJob> {
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

describe.skipIf(!probe.available)(`links a worker plants bind nothing into the next sandbox${SKIP}`, () => {
  let fake: FakeHome;
  beforeEach(() => {
    fake = makeHome('/var/tmp');
    process.env.HOME = fake.home;
  });

  it("a wrapped command does not see through a dependency folder's, a scoped package's or a virtualenv's link out of the workspace", () => {
    const ws = makeWorkspace({});
    expect(run(['/bin/sh', '-c', plantLinks(fake.home)], ws).status).toBe(0);
    // the sandbox has no overlay here: HOME is an empty tmpfs, where only a bind could bring the targets back
    const wrapped = wrapWithSandbox({ shellCommand: READ_BACK, workspace: ws });
    expect(wrapped?.argv).toContain('--tmpfs');
    const r = run(wrapped?.argv ?? []);
    expect(`${r.stdout}${r.stderr}`).not.toContain(fake.marker);
    // and nothing the links point at is bound at all (the credential stores are masked: an empty tmpfs over them)
    const argv = wrapped?.argv ?? [];
    const bound = argv.flatMap((arg, i) => (/^--(ro-)?bind(-try)?$/.test(arg) ? [argv[i + 1]] : []));
    const targets = ['.ssh', '.aws', 'projects'].map((rel) => join(fake.home, rel));
    expect(bound.filter((source) => targets.some((t) => source === t || source?.startsWith(`${t}/`)))).toEqual([]);
  });

  it("a shell worker plants the links; its verification, its fix round and the next job's worker read none of their targets", async () => {
    const { engine, dataDir } = await openEngine();
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    // the first round plants; the fix round (after the verification failed) copies what the links show into the workspace
    const command = `if [ -L node_modules/x ]; then (${READ_BACK}) > leak-fix.txt 2>&1; else ${plantLinks(fake.home)}; fi`;
    const first = await runToEnd(engine, {
      workspace: ws,
      verify: 'cat node_modules/x/id_rsa',
      fix_rounds: 1,
      tasks: [{ instruction: 'plant links', command }],
    });
    expect(resultOf(first).workers[0]).toMatchObject({ sandboxed: true });
    expect(verificationOf(first)).toMatchObject({ ran: true, ok: false });
    expect(existsSync(join(ws, 'leak-fix.txt'))).toBe(true);
    const next = await runToEnd(engine, {
      workspace: ws,
      verify: 'none',
      tasks: [{ instruction: 'read links', command: `(${READ_BACK}) > leak-next.txt 2>&1` }],
    });
    expect(resultOf(next).workers[0]).toMatchObject({ status: 'done', sandboxed: true });
    expect(existsSync(join(ws, 'leak-next.txt'))).toBe(true);
    // not in the workspace, nor in any log, answer or evidence gaffer kept
    const leaked = [...filesHolding(ws, fake.marker), ...filesHolding(dataDir, fake.marker)];
    expect(leaked.map((f) => `${f}: ${readFileSync(f, 'utf8').slice(0, 300)}`)).toEqual([]);
  }, 120_000);

  it("the builtin agent's run_command reads none of the targets either: nothing reaches the model endpoint", async () => {
    const ws = makeWorkspace({});
    // planted as a sandboxed worker would
    expect(run(wrapWithSandbox({ shellCommand: plantLinks(fake.home), workspace: ws })?.argv ?? []).status).toBe(0);
    const server = await startModelServer();
    try {
      server.script([
        { toolCalls: [{ name: 'run_command', args: { command: READ_BACK } }] },
        { text: 'read them.\nFiles changed:\n(none)' },
      ]);
      const runner = new BuiltinRunner({
        endpoint: endpointOf(server, 'openai-compatible'),
        sandbox: createSandbox('auto'),
      });
      const report = await runner.run(builtinInput(ws, tempDir('gaffer-builtin-data-'), { sandbox: true }));
      expect(report.sandboxed).toBe(true);
      expect(server.requests.length).toBe(2);
      expect(server.requests[1]?.toolResults[0]?.output).toContain('No such file');
      expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain(fake.marker);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("in a worktree job, the verification reaches the workspace's node_modules through gaffer's link, and nothing once the worker repointed it", async () => {
    const dataDir = join(tempDir('gaffer-data-'), 'data');
    const engine = await Engine.open({ dataDir, worktrees: {} });
    engines.push(engine);
    // below /tmp: inside the sandbox only a bind shows the workspace's node_modules to the worktree's link
    const ws = makeWorkspace(
      { '.gitignore': 'node_modules/\n', 'package-lock.json': '{"lockfileVersion":3}\n', 'a.txt': 'a\n' },
      { git: true },
    );
    mkdirSync(join(ws, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'module.exports = 42;\n');
    const honest = await runToEnd(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: `node -e "process.exit(require('dep') === 42 ? 0 : 1)"`,
      fix_rounds: 0,
      tasks: [{ name: 'edit', instruction: 'edit', files: ['a.txt'], command: 'echo b > a.txt' }],
    });
    expect(resultOf(honest).workers[0]).toMatchObject({ sandboxed: true });
    expect(honest.result?.worktrees?.tasks[0]?.setup?.deps).toEqual(['node_modules linked from the workspace']);
    expect(verificationOf(honest)).toMatchObject({ ran: true, ok: true });
    const hostile = await runToEnd(engine, {
      workspace: ws,
      isolation: 'worktree',
      verify: 'cat node_modules/id_rsa && echo pwned > node_modules/authorized_keys',
      fix_rounds: 0,
      tasks: [
        {
          name: 'repoint',
          instruction: 'repoint',
          files: ['a.txt'],
          command: `rm node_modules && ln -s ${JSON.stringify(join(fake.home, '.ssh'))} node_modules && echo c > a.txt`,
        },
      ],
    });
    expect(resultOf(hostile).workers[0]).toMatchObject({ sandboxed: true });
    expect(verificationOf(hostile)).toMatchObject({ ran: true, ok: false });
    expect(existsSync(join(fake.home, '.ssh', 'authorized_keys'))).toBe(false);
    expect(filesHolding(dataDir, fake.marker)).toEqual([]);
  }, 120_000);

  it('HOME on a real tmpfs (/dev/shm): the planted links show nothing either', () => {
    const onShm = makeHome('/dev/shm');
    process.env.HOME = onShm.home;
    expect(statSync(onShm.home).isDirectory()).toBe(true);
    const ws = makeWorkspace({});
    expect(run(['/bin/sh', '-c', plantLinks(onShm.home)], ws).status).toBe(0);
    const r = run(wrapWithSandbox({ shellCommand: READ_BACK, workspace: ws })?.argv ?? []);
    expect(`${r.stdout}${r.stderr}`).not.toContain(onShm.marker);
  });

  it('a dependency folder the worker turned into a link out is neither shown nor written by the verification', async () => {
    const ws = makeWorkspace({});
    // another project's dependencies below HOME: what a write there would run the next time the user runs that project
    const other = join(fake.home, 'projects', 'other', 'node_modules');
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, 'index.js'), `module.exports = '${fake.marker}';\n`);
    // the worker's `node_modules` itself: once into a credential store, once into the other project's dependencies
    for (const target of [join(fake.home, '.ssh'), other]) {
      rmSync(join(ws, 'node_modules'), { force: true });
      symlinkSync(target, join(ws, 'node_modules'));
      const suite = await runSuite({
        command: 'cat node_modules/*; echo pwned > node_modules/authorized_keys; true',
        cwd: ws,
        kind: null,
        timeoutMs: 30_000,
        signal: new AbortController().signal,
        logFile: join(tempDir('gaffer-log-'), 'v.log'),
        sandbox: true,
      });
      expect(suite.exitCode).toBe(0);
      expect(suite.tail).not.toContain(fake.marker);
      expect(existsSync(join(target, 'authorized_keys'))).toBe(false);
    }
  }, 60_000);

  it('a PATH entry in the workspace, or a PATH link that leads through it, is not followed out', () => {
    const ws = makeWorkspace({});
    mkdirSync(join(ws, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(join(fake.home, '.ssh', 'id_rsa'), join(ws, 'node_modules', '.bin', 'tool'));
    symlinkSync(join(fake.home, 'projects', 'private'), join(ws, 'node_modules', 'pkg'));
    // a user's tool in a PATH folder outside, linked into the workspace's package (which the worker repointed)
    const bin = tempDir('gaffer-bin-');
    symlinkSync(join(ws, 'node_modules', 'pkg', 'bin', 'pip'), join(bin, 'pip'));
    const path = `${join(ws, 'node_modules', '.bin')}:${bin}:node_modules/.bin:${process.env.PATH ?? ''}`;
    const dirs = listProgramDirs(['/tmp', fake.home], { path, workspace: ws, programs: [join(bin, 'pip')] });
    expect(dirs.filter((d) => d.startsWith(fake.home))).toEqual([]);
    expect(resolveOutside(join(bin, 'pip'), [ws])).toBeNull();
    // the same path resolves where no workspace is in the way
    expect(resolveOutside(join(bin, 'pip'), [])).toBe(join(fake.home, 'projects', 'private', 'bin', 'pip'));
    const savedPath = process.env.PATH;
    process.env.PATH = path;
    try {
      const r = run(
        wrapWithSandbox({
          shellCommand: 'cat node_modules/.bin/tool; pip; true',
          workspace: ws,
          programs: [join(bin, 'pip')],
        })?.argv ?? [],
      );
      expect(`${r.stdout}${r.stderr}`).not.toContain(fake.marker);
    } finally {
      process.env.PATH = savedPath;
    }
  });

  it('the credential stores stay masked under a tmpfs HOME even where a bind lands on them', () => {
    const ws = makeWorkspace({});
    const wrapped = wrapWithSandbox({
      shellCommand: `cat ${JSON.stringify(join(fake.home, '.ssh', 'id_rsa'))} ${JSON.stringify(join(fake.home, '.aws', 'credentials'))}; true`,
      workspace: ws,
      readable: [join(fake.home, '.ssh'), join(fake.home, '.aws', 'credentials')],
    });
    const r = run(wrapped?.argv ?? []);
    expect(`${r.stdout}${r.stderr}`).not.toContain(fake.marker);
  });

  it("gaffer's default data and config places below HOME are masked too, though this process uses another data dir", () => {
    for (const rel of [join('.local', 'share', 'gaffer'), join('.config', 'gaffer')]) {
      mkdirSync(join(fake.home, rel), { recursive: true });
      writeFileSync(join(fake.home, rel, 'gaffer.config.json'), `{"tokens": ["${fake.marker}"]}\n`);
    }
    const read = `cat ${JSON.stringify(join(fake.home, '.local/share/gaffer/gaffer.config.json'))} ${JSON.stringify(join(fake.home, '.config/gaffer/gaffer.config.json'))}; true`;
    // an agent CLI's run keeps the user's HOME (read-only): only the masks stand between it and these
    for (const home of [null, undefined]) {
      const r = run(
        wrapWithSandbox({
          shellCommand: read,
          workspace: makeWorkspace({}),
          ...(home === null ? { home } : {}),
          readable: [join(fake.home, '.config')],
        })?.argv ?? [],
      );
      expect(`${r.stdout}${r.stderr}`).not.toContain(fake.marker);
    }
  });
});

describe.skipIf(!probe.available)(`what honest tooling keeps${SKIP}`, () => {
  let fake: FakeHome;
  beforeEach(() => {
    fake = makeHome('/var/tmp');
    process.env.HOME = fake.home;
  });

  it('links inside the workspace, and a virtualenv on a Python from a toolchain HOME keeps (pyenv), work in the sandbox', () => {
    const ws = makeWorkspace({ 'packages/lib/index.js': "module.exports = 'in the workspace';\n" });
    mkdirSync(join(ws, 'node_modules'));
    symlinkSync('../packages/lib', join(ws, 'node_modules', 'lib'));
    const python = join(fake.home, '.pyenv', 'versions', '3.12.0');
    mkdirSync(join(python, 'bin'), { recursive: true });
    mkdirSync(join(python, 'lib'));
    writeFileSync(join(python, 'lib', 'site.txt'), 'stdlib\n');
    writeFileSync(
      join(python, 'bin', 'python3'),
      '#!/bin/sh\ncat "$(dirname "$(readlink -f "$0")")/../lib/site.txt"\n',
    );
    chmodSync(join(python, 'bin', 'python3'), 0o755);
    mkdirSync(join(ws, '.venv', 'bin'), { recursive: true });
    symlinkSync(join(python, 'bin', 'python3'), join(ws, '.venv', 'bin', 'python'));
    const r = run(
      wrapWithSandbox({ shellCommand: `node -e "console.log(require('lib'))" && .venv/bin/python`, workspace: ws })
        ?.argv ?? [],
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('in the workspace\nstdlib\n');
  });

  it("a package `npm link`ed through npm's global folder is bound; the same folder linked straight from the workspace is not", () => {
    const ws = makeWorkspace({});
    const linked = join(fake.home, 'dev', 'linked');
    mkdirSync(linked, { recursive: true });
    const globalModules = tempDir('gaffer-npm-global-');
    symlinkSync(linked, join(globalModules, 'linked'));
    mkdirSync(join(ws, 'node_modules'));
    symlinkSync(join(globalModules, 'linked'), join(ws, 'node_modules', 'linked'));
    expect(listProgramDirs(['/tmp', fake.home], { workspace: ws, npmGlobal: globalModules, path: '' })).toContain(
      linked,
    );
    expect(
      listProgramDirs(['/tmp', fake.home], { workspace: ws, npmGlobal: tempDir('gaffer-npm-empty-'), path: '' }),
    ).not.toContain(linked);
    // the linked package is a project a worker may work in: a PATH link that leads through a link it planted there is not followed
    mkdirSync(join(linked, 'bin'));
    symlinkSync(join(fake.home, 'projects', 'private', 'bin', 'pip'), join(linked, 'bin', 'cli'));
    const bin = tempDir('gaffer-prefix-bin-');
    symlinkSync(join(globalModules, 'linked', 'bin', 'cli'), join(bin, 'cli'));
    const dirs = listProgramDirs(['/tmp', fake.home], { workspace: ws, npmGlobal: globalModules, path: bin });
    expect(dirs).toContain(linked);
    expect(dirs.filter((d) => d.startsWith(join(fake.home, 'projects')))).toEqual([]);
  });
});
