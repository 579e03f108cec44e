import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { buildInvocation } from '../../../src/runners/cli/invocation.js';
import { getCliProfile } from '../../../src/runners/cli/profiles.js';
import type { CliScenario } from './scenarios.js';
import {
  offlineCommand,
  offlineSupport,
  offlineUrl,
  startModelServer,
  type ModelServer,
  type ScriptStep,
  type ScriptOptions,
} from '../../support/model-server/index.js';

/** The test-only install folder of the real agent CLIs (scripts/install-agent-clis.sh). */
export const AGENTS_BIN = resolve('test/agents/node_modules/.bin');

/** The installed binary of a CLI, or null when the install script has not run. */
export function agentBinary(bin: string): string | null {
  const path = join(AGENTS_BIN, bin);
  return existsSync(path) ? path : null;
}

/** Why real-CLI tests cannot run here (no loopback-only namespace), or null when they can. */
export function offlineSkipReason(): string | null {
  const support = offlineSupport();
  return support.ok
    ? null
    : `real agent CLIs run only inside a loopback-only network namespace, and none can be made here: ${support.reason}`;
}

/** A scripted model server reachable only through a unix socket bridged to 127.0.0.1:8080 inside a namespace. */
export interface OfflineServer {
  server: ModelServer;
  /** The base URL a program inside the namespace uses (`http://127.0.0.1:8080`). */
  url: string;
  /** Prefixes an argv so it runs inside a fresh loopback-only namespace bridged to the server. */
  launch: (argv: string[]) => string[];
  close: () => Promise<void>;
}

/** Starts the scripted server on a unix socket in `dir`; programs reach it only from inside `launch`'s namespace. */
export async function startOfflineServer(
  dir: string,
  script: ScriptStep[] = [],
  options: ScriptOptions = {},
): Promise<OfflineServer> {
  mkdirSync(dir, { recursive: true });
  const socketPath = join(dir, 'model.sock');
  const server = await startModelServer({ socketPath, script, ...options });
  return {
    server,
    url: offlineUrl(),
    launch: (argv) => {
      const line = offlineCommand(socketPath, argv);
      return [line.file, ...line.args];
    },
    close: () => server.close(),
  };
}

/** Runs an argv to its end, collecting stdout and stderr lines (a raw run, for recordings). */
export function runRaw(
  argv: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number; stdin?: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const [file, ...args] = argv;
    const child = spawn(file ?? 'false', args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

const RECORDED_INSTRUCTION = 'Create hello.txt containing hello.';

/**
 * Runs a scenario's real CLI once in `ws` against the offline server, invoked as gaffer invokes it
 * (its files, state dirs and env written under `dir`), for the recording refreshers.
 */
export async function recordCliRun(
  scenario: CliScenario,
  dir: string,
  ws: string,
  offline: OfflineServer,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const profile = getCliProfile(scenario.key);
  const bin = agentBinary(profile?.binary ?? '');
  if (profile === undefined || bin === null) throw new Error(`${scenario.key} is not installed in test/agents`);
  const inv = buildInvocation(profile, {
    instruction: RECORDED_INSTRUCTION,
    model: scenario.model,
    resume: null,
    endpoint: { url: offline.url, key: 'sk-test-key' },
    home: join(dir, 'home'),
    userHome: join(dir, 'home'),
    tmpDir: join(dir, 'tmp'),
    instructionFile: join(dir, 'instruction.txt'),
    isRoot: process.getuid?.() === 0,
  });
  for (const d of [...inv.stateDirs, join(dir, 'tmp')]) mkdirSync(d, { recursive: true });
  for (const [path, content] of Object.entries(inv.files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...inv.env };
  return runRaw(offline.launch([bin, ...inv.args]), {
    cwd: ws,
    env,
    stdin: inv.promptOnStdin ? RECORDED_INSTRUCTION : undefined,
    timeoutMs,
  });
}
