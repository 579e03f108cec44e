import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { Engine } from '../../src/engine/engine.js';
import { wrapWithSandbox } from '../../src/platform/sandbox/bwrap.js';
import { choosePrivateHome, listKeptHomePaths, buildPrivateHomeArgs } from '../../src/platform/sandbox/home.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { runSuite } from '../../src/verification/run-suite.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { resultOf } from '../helpers/answer.js';

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

// what nyc's spawn-wrap does at start: a folder straight in os.homedir(), then a cache below HOME
const HOME_WRITES = [
  `node -e "const fs=require('fs'),os=require('os'),p=require('path');const d=p.join(os.homedir(),'.node-spawn-wrap-test');fs.mkdirSync(d);fs.writeFileSync(p.join(d,'shim'),'x')"`,
  'mkdir -p "$HOME/.cache" && echo cached > "$HOME/.cache/x" && test "$(cat "$HOME/.cache/x")" = cached',
].join(' && ');

let realHome: string;
const savedHome = process.env.HOME;
beforeAll(() => {
  // the user's HOME for this file, outside /tmp (the private /tmp would hide it anyway): one holding
  // git's identity (kept visible) and a secret (not)
  realHome = mkdtempSync('/var/tmp/gaffer-home-');
  writeFileSync(join(realHome, '.gitconfig'), '[user]\n\tname = Home Owner\n');
  mkdirSync(join(realHome, '.ssh'));
  writeFileSync(join(realHome, '.ssh', 'id_ed25519'), 'secret\n');
  process.env.HOME = realHome;
});
afterAll(() => {
  process.env.HOME = savedHome;
  rmSync(realHome, { recursive: true, force: true });
});

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function runToEnd(body: Record<string, unknown>): Promise<CompactJob> {
  const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data') });
  engines.push(engine);
  const { job } = engine.submit(body);
  await engine.settled(job.id);
  return engine.get(job.id, { full: true });
}

function run(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): { status: number | null; stdout: string; stderr: string } {
  const [file, ...args] = argv;
  const r = spawnSync(file as string, args, { encoding: 'utf8', timeout: 30_000, env });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const homeEntries = () => readdirSync(realHome).sort();

const NYC_FIXTURE = resolve('test/fixtures/projects/nyc');
const nycInstalled = existsSync(join(NYC_FIXTURE, 'node_modules', '.bin', 'nyc'));

describe('choosing the private HOME', () => {
  it('an overlay where bwrap has --tmp-overlay, else a tmpfs with the kept paths; none without a HOME to replace', () => {
    const ws = makeWorkspace({});
    expect(buildPrivateHomeArgs(choosePrivateHome(realHome, ws, true))).toEqual([
      '--overlay-src',
      realHome,
      '--tmp-overlay',
      realHome,
    ]);
    expect(listKeptHomePaths(choosePrivateHome(realHome, ws, true))).toEqual([]);
    expect(buildPrivateHomeArgs(choosePrivateHome(realHome, ws, false))).toEqual(['--tmpfs', realHome]);
    expect(listKeptHomePaths(choosePrivateHome(realHome, ws, false))).toContain(join(realHome, '.gitconfig'));
    for (const home of [
      undefined,
      '',
      'relative',
      '/',
      ws,
      join(ws, 'inner'),
      join(realHome, '.gitconfig'),
      '/nonexistent-home',
    ]) {
      if (home === join(ws, 'inner')) mkdirSync(home);
      expect(choosePrivateHome(home, ws, false)).toBeNull();
    }
  });
});

describe.skipIf(!probe.available)(`a private HOME under the sandbox${SKIP}`, () => {
  it('a sandboxed shell worker and its verification write below HOME (as nyc and npm do), and nothing lands in the real HOME', async () => {
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const job = await runToEnd({
      workspace: ws,
      verify: `${HOME_WRITES} && echo verified`,
      fix_rounds: 0,
      tasks: [{ instruction: 'write below HOME', command: `${HOME_WRITES} && echo done > done.txt` }],
    });
    const r = resultOf(job);
    expect(r.workers[0]).toMatchObject({ status: 'done', sandboxed: true });
    expect(readFileSync(join(ws, 'done.txt'), 'utf8')).toBe('done\n');
    expect(r.verification).toMatchObject({ ran: true, ok: true });
    expect(homeEntries()).toEqual(['.gitconfig', '.ssh']);
  }, 60_000);

  it('a sandboxed verification run on its own: HOME writable, the writes discarded', async () => {
    const ws = makeWorkspace({});
    const logDir = tempDir('gaffer-log-');
    const suite = await runSuite({
      command: HOME_WRITES,
      cwd: ws,
      kind: null,
      timeoutMs: 30_000,
      signal: new AbortController().signal,
      logFile: join(logDir, 'v.log'),
      sandbox: true,
    });
    expect(suite.exitCode).toBe(0);
    expect(homeEntries()).toEqual(['.gitconfig', '.ssh']);
  }, 60_000);

  it.skipIf(!nycInstalled)(
    `nyc 14 (spawn-wrap writes ~/.node-spawn-wrap-*) passes under the sandboxed verification${nycInstalled ? '' : ' — SKIPPED: run scripts/setup-fixtures.sh'}`,
    async () => {
      const ws = join(tempDir('gaffer-nyc-'), 'ws');
      cpSync(NYC_FIXTURE, ws, { recursive: true, verbatimSymlinks: true });
      const suite = await runSuite({
        command: 'npm test',
        cwd: ws,
        kind: 'npm',
        timeoutMs: 60_000,
        signal: new AbortController().signal,
        logFile: join(tempDir('gaffer-log-'), 'v.log'),
        sandbox: true,
      });
      expect(suite.tail).not.toMatch(/EROFS/);
      expect(suite.exitCode).toBe(0);
      expect(suite.parsed.passed).toContain('add adds');
      expect(suite.sandboxRefused).toEqual([]);
      expect(homeEntries()).toEqual(['.gitconfig', '.ssh']);
    },
    90_000,
  );

  it('keeps git identity visible read-only and hides what is not kept (~/.ssh)', () => {
    const ws = makeWorkspace({});
    const wrapped = wrapWithSandbox({
      shellCommand:
        'cat "$HOME/.gitconfig"; test -e "$HOME/.ssh/id_ed25519" && echo SSH-SEEN; echo x >> "$HOME/.gitconfig" || echo gitconfig-read-only',
      workspace: ws,
    });
    const r = run(wrapped?.argv ?? []);
    expect(r.stdout).toContain('name = Home Owner');
    expect(r.stdout).not.toContain('SSH-SEEN');
    expect(r.stdout).toContain('gitconfig-read-only');
    expect(readFileSync(join(realHome, '.gitconfig'), 'utf8')).toBe('[user]\n\tname = Home Owner\n');
  });

  it("what the workspace links to below HOME: a virtualenv's interpreter from a kept toolchain stays visible, a package linked straight to a folder below HOME does not (issue 32)", () => {
    const ws = makeWorkspace({});
    const linked = join(realHome, 'dev', 'linked');
    mkdirSync(linked, { recursive: true });
    writeFileSync(join(linked, 'index.js'), "module.exports = 'linked package';\n");
    mkdirSync(join(ws, 'node_modules'));
    symlinkSync(linked, join(ws, 'node_modules', 'linked'));
    // a Python pyenv installed below HOME that the venv's bin/python points at; it needs its lib/
    const python = join(realHome, '.pyenv', 'versions', '3.12.0');
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
    try {
      const wrapped = wrapWithSandbox({
        shellCommand: `.venv/bin/python && node -e "console.log(require('linked'))"`,
        workspace: ws,
      });
      const r = run(wrapped?.argv ?? []);
      expect(r.stdout).toBe('stdlib\n');
      // the workspace's own link decides no bind: a worker could have pointed it anywhere
      expect(r.stderr).toContain("Cannot find module 'linked'");
    } finally {
      rmSync(join(realHome, 'dev'), { recursive: true, force: true });
      rmSync(join(realHome, '.pyenv'), { recursive: true, force: true });
    }
  });

  it('a PATH entry that is HOME itself does not bring the real HOME back', () => {
    const savedPath = process.env.PATH;
    process.env.PATH = `${realHome}:${savedPath ?? ''}`;
    try {
      const wrapped = wrapWithSandbox({
        shellCommand: 'test -e "$HOME/.ssh/id_ed25519" && echo SSH-SEEN; echo x > "$HOME/.w" && echo WROTE',
        workspace: makeWorkspace({}),
      });
      const r = run(wrapped?.argv ?? []);
      expect(r.stdout).toBe('WROTE\n');
    } finally {
      process.env.PATH = savedPath;
    }
    expect(homeEntries()).toEqual(['.gitconfig', '.ssh']);
  });

  it('agent CLIs keep their own home handling: home: null leaves HOME as it is (read-only), only its credential stores masked (masks.ts)', () => {
    const ws = makeWorkspace({});
    const wrapped = wrapWithSandbox({
      shellCommand:
        'echo x > "$HOME/.cli-write" 2>/dev/null && echo WROTE; test -e "$HOME/.ssh/id_ed25519" && echo SSH-SEEN; true',
      workspace: ws,
      home: null,
    });
    expect(wrapped?.argv.join(' ')).not.toContain(`--tmpfs ${realHome} `);
    const r = run(wrapped?.argv ?? []);
    expect(r.stdout).not.toContain('WROTE');
    expect(r.stdout).not.toContain('SSH-SEEN');
    expect(existsSync(join(realHome, '.cli-write'))).toBe(false);
  });
});

describe.skipIf(!probe.available)(`programs under /tmp stay visible in the sandbox${SKIP}`, () => {
  it('a CLI installed under /tmp runs inside: its PATH link is followed to the package and the dependencies beside it', () => {
    // an npm global prefix under /tmp: bin/fakecli → ../lib/node_modules/fakecli/cli.js, which needs a hoisted dependency
    const prefix = tempDir('gaffer-prefix-');
    const modules = join(prefix, 'lib', 'node_modules');
    mkdirSync(join(modules, 'fakecli'), { recursive: true });
    mkdirSync(join(modules, 'fakedep'), { recursive: true });
    writeFileSync(join(modules, 'fakedep', 'index.js'), "module.exports = 'from the dependency';\n");
    writeFileSync(
      join(modules, 'fakecli', 'cli.js'),
      "#!/usr/bin/env node\nconsole.log('fakecli ran: ' + require('../fakedep'));\n",
    );
    chmodSync(join(modules, 'fakecli', 'cli.js'), 0o755);
    mkdirSync(join(prefix, 'bin'));
    symlinkSync('../lib/node_modules/fakecli/cli.js', join(prefix, 'bin', 'fakecli'));
    const env = { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` };
    const savedPath = process.env.PATH;
    process.env.PATH = env.PATH;
    try {
      const wrapped = wrapWithSandbox({ shellCommand: 'fakecli', workspace: makeWorkspace({}) });
      const r = run(wrapped?.argv ?? [], env);
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('fakecli ran: from the dependency\n');
      expect(r.status).toBe(0);
      // an absolute program outside PATH is followed too (an agent CLI found in a runner's own bin dir)
      const direct = wrapWithSandbox({ argv: [join(prefix, 'bin', 'fakecli')], workspace: makeWorkspace({}) });
      process.env.PATH = savedPath;
      expect(run(direct?.argv ?? []).stdout).toBe('fakecli ran: from the dependency\n');
    } finally {
      process.env.PATH = savedPath;
    }
  });
});
