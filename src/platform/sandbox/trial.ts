import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wrapWithSandbox } from './bwrap.js';
import { probeSandbox } from './probe.js';

/** What a trial run under the sandbox showed. */
export interface SandboxTrial {
  ok: boolean;
  /** What worked, or what did not, in words. */
  detail: string;
}

const TRIAL_TIMEOUT_MS = 15_000;

/**
 * Runs what every sandboxed worker does, once, the way workers run (`gaffer doctor`): a write to
 * a workspace, which must land, and a write below HOME, which must work inside and be gone after
 * (spec 04: HOME writable, its writes discarded). Call only where the sandbox is available.
 */
export function trialSandbox(env: NodeJS.ProcessEnv = process.env): SandboxTrial {
  const workspace = mkdtempSync(join(tmpdir(), 'gaffer-sandbox-trial-'));
  const home = env.HOME;
  const name = `.gaffer-sandbox-trial-${randomBytes(4).toString('hex')}`;
  try {
    const script = `: > ./written || { echo "cannot write the workspace" >&2; exit 3; }; ${home === undefined ? '' : `mkdir -p "$HOME/${name}/cache" && : > "$HOME/${name}/cache/x" || { echo "cannot write HOME" >&2; exit 4; }`}`;
    const wrapped = wrapWithSandbox({ shellCommand: script, workspace, ...(home === undefined ? {} : { home }) });
    if (wrapped === null) return { ok: false, detail: 'bwrap does not work here' };
    const [file, ...args] = wrapped.argv;
    const run = spawnSync(file as string, args, {
      encoding: 'utf8',
      timeout: TRIAL_TIMEOUT_MS,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const leaked = home !== undefined && existsSync(join(home, name));
    if (run.status !== 0)
      return {
        ok: false,
        detail: `a trial worker failed: ${run.error?.message ?? (run.stderr.trim().split('\n').at(-1) || `exit ${run.status ?? run.signal}`)}`,
      };
    if (!existsSync(join(workspace, 'written')))
      return { ok: false, detail: "a trial worker's write to its workspace did not land" };
    if (leaked)
      return { ok: false, detail: `a trial worker's write below HOME landed in ${home}: its writes are not discarded` };
    const how = probeSandbox().tmpOverlay ? 'an overlay' : 'a private tmpfs (this bwrap has no --tmp-overlay)';
    return {
      ok: true,
      detail:
        home === undefined
          ? 'a trial worker wrote its workspace (no HOME is set)'
          : `a trial worker wrote its workspace and below HOME (${home}: ${how}, nothing left after)`,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
    removeQuietly(home === undefined ? null : join(home, name));
  }
}

/**
 * Runs `program args` inside the sandbox as an agent CLI runs there (its HOME as it is): whether a
 * program that works outside can be found and started inside too (a CLI installed under /tmp).
 */
export function trialProgramInSandbox(
  program: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): SandboxTrial {
  const workspace = mkdtempSync(join(tmpdir(), 'gaffer-sandbox-trial-'));
  try {
    const wrapped = wrapWithSandbox({ argv: [program, ...args], programs: [program], workspace, home: null });
    if (wrapped === null) return { ok: false, detail: 'bwrap does not work here' };
    const [file, ...rest] = wrapped.argv;
    const run = spawnSync(file as string, rest, {
      encoding: 'utf8',
      timeout: TRIAL_TIMEOUT_MS,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (run.status === 0) return { ok: true, detail: `${program} runs inside the sandbox` };
    const why = run.error?.message ?? (run.stderr.trim().split('\n').at(-1) || `exit ${run.status ?? run.signal}`);
    return { ok: false, detail: `${program} does not run inside the sandbox: ${why}` };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/**
 * Runs one `outbound` run as agent CLIs get it (`gaffer doctor`): slirp4netns attached before the
 * command starts (tap0 up), and the host's loopback not reachable behind 10.0.2.2. Call only where
 * the sandbox works and slirp4netns is installed.
 */
export function trialNetwork(env: NodeJS.ProcessEnv = process.env): SandboxTrial {
  const workspace = mkdtempSync(join(tmpdir(), 'gaffer-sandbox-trial-'));
  try {
    const wrapped = wrapWithSandbox({
      shellCommand: 'grep -q "tap0:" /proc/net/dev || { echo "no tap0 inside" >&2; exit 3; }',
      workspace,
      network: { mode: 'outbound' },
    });
    if (wrapped === null) return { ok: false, detail: 'bwrap does not work here' };
    if (wrapped.network !== 'outbound') return { ok: false, detail: 'slirp4netns is not installed' };
    const [file, ...rest] = wrapped.argv;
    const run = spawnSync(file as string, rest, {
      encoding: 'utf8',
      timeout: TRIAL_TIMEOUT_MS,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (run.status === 0)
      return { ok: true, detail: 'a trial run had its own tap0 through slirp4netns before it started' };
    return {
      ok: false,
      detail: `a trial run with outbound network failed: ${run.error?.message ?? (run.stderr.trim().split('\n').at(-1) || `exit ${run.status ?? run.signal}`)}`,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/**
 * Whether a `none` run reaches no unix socket of the host (`gaffer doctor`, issue 32): a trial
 * worker's node must fail to make one (EAFNOSUPPORT: the filter refused socket(AF_UNIX)) for a
 * path that exists outside; without the filter it would fail otherwise or connect.
 */
export function trialUnixSockets(env: NodeJS.ProcessEnv = process.env): SandboxTrial {
  const probe = probeSandbox();
  if (!probe.unixSocketFilter) return { ok: false, detail: probe.unixSocketFilterReason };
  const workspace = mkdtempSync(join(tmpdir(), 'gaffer-sandbox-trial-'));
  try {
    const script =
      "require('net').connect('/run/gaffer-doctor-no-such.sock').on('error', (e) => { console.log(e.code); process.exit(e.code === 'EAFNOSUPPORT' ? 0 : 3); }).on('connect', () => process.exit(4))";
    const wrapped = wrapWithSandbox({ argv: [process.execPath, '-e', script], workspace });
    if (wrapped === null) return { ok: false, detail: 'bwrap does not work here' };
    const [file, ...rest] = wrapped.argv;
    const run = spawnSync(file as string, rest, {
      encoding: 'utf8',
      timeout: TRIAL_TIMEOUT_MS,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (run.status === 0)
      return {
        ok: true,
        detail:
          'a trial worker could not make a unix socket (EAFNOSUPPORT): runs with a network of their own (none, outbound) reach no unix socket of the host',
      };
    const got = run.stdout.trim() || run.stderr.trim().split('\n').at(-1) || `exit ${run.status ?? run.signal}`;
    return {
      ok: false,
      detail: `a trial worker could still make a unix socket (${got}): runs can reach the host's unix sockets`,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

function removeQuietly(path: string | null): void {
  if (path === null) return;
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // a HOME that is not a directory holds nothing to remove
  }
}
