import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { FILTER_FD, unixSocketFilterFile, withFilterFd } from './seccomp.js';

/** Whether bubblewrap works on this machine, and how (spec 04 "The sandbox"). */
export interface SandboxProbe {
  /** True when a trial run under bwrap succeeded with the filesystem read-only. */
  available: boolean;
  /** Why, in words: what worked, or what failed and its message. */
  reason: string;
  /** `bwrap --version`, e.g. `bubblewrap 0.8.0`; null when it is not installed. */
  version: string | null;
  /** Absolute path of the bwrap binary; null when none is on PATH. */
  binary: string | null;
  /** Flags this machine needs besides the usual ones (e.g. `--unshare-user`). */
  flags: string[];
  /** This bwrap has `--tmp-overlay` (0.10+) and an overlay of HOME worked in a trial: HOME gets a discarded overlay, not an empty tmpfs. */
  tmpOverlay: boolean;
  /** bwrap loads gaffer's unix-socket filter here (seccomp.ts): runs with a network of their own get it. */
  unixSocketFilter: boolean;
  /** Why the filter is (not) used, in words (`gaffer doctor`). */
  unixSocketFilterReason: string;
}

/** The flags every sandboxed run uses; the trial runs with exactly these. */
export const BASE_FLAGS: readonly string[] = [
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--unshare-pid',
  '--die-with-parent',
  '--cap-drop',
  'ALL',
];

/** Tried in order: as root in a container bwrap works without a user namespace; unprivileged it needs one. */
const FLAG_CANDIDATES: readonly (readonly string[])[] = [[], ['--unshare-user']];

const TRIAL_TIMEOUT_MS = 10_000;
/** The trial's exit code when it could write outside its binds: the sandbox does not hold. */
const ESCAPED = 42;

let cached: SandboxProbe | null = null;

/** The sandbox probe, run once per process and cached (`refresh` runs it again). */
export function probeSandbox(opts: { env?: NodeJS.ProcessEnv; refresh?: boolean } = {}): SandboxProbe {
  if (cached !== null && opts.refresh !== true) return cached;
  cached = runProbe(opts.env ?? process.env);
  return cached;
}

/** Finds an executable `name` on PATH; null when there is none. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

function runProbe(env: NodeJS.ProcessEnv): SandboxProbe {
  if (process.platform !== 'linux')
    return unavailable(null, null, `bubblewrap needs Linux; this is ${process.platform}`);
  const binary = findOnPath('bwrap', env);
  if (binary === null) return unavailable(null, null, 'bwrap is not on PATH');
  const versionRun = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: TRIAL_TIMEOUT_MS, env });
  const version = versionRun.status === 0 ? versionRun.stdout.trim() || null : null;

  // The trial writes to a path that is NOT bound writable: it must fail, or the sandbox does not hold.
  const dir = mkdtempSync(join(tmpdir(), 'gaffer-sandbox-probe-'));
  const marker = join(dir, 'escaped');
  const failures: string[] = [];
  try {
    for (const extra of FLAG_CANDIDATES) {
      const run = spawnSync(
        binary,
        [
          ...extra,
          ...BASE_FLAGS,
          '--',
          '/bin/sh',
          '-c',
          `if (: > "$1") 2>/dev/null; then exit ${ESCAPED}; fi; exit 0`,
          'sh',
          marker,
        ],
        {
          encoding: 'utf8',
          timeout: TRIAL_TIMEOUT_MS,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const label = extra.length === 0 ? 'bwrap' : `bwrap ${extra.join(' ')}`;
      if (run.status === 0 && !existsSync(marker)) {
        const how = extra.length === 0 ? '' : ` with ${extra.join(' ')}`;
        const tmpOverlay = overlayWorks(binary, extra, dir, env);
        const filter = filterWorks(binary, extra, env);
        return {
          available: true,
          reason: `a trial run under bwrap${how} succeeded (read-only root, private pid namespace, no capabilities)`,
          version,
          binary,
          flags: [...extra],
          tmpOverlay,
          unixSocketFilter: filter.works,
          unixSocketFilterReason: filter.reason,
        };
      }
      if (run.status === ESCAPED || existsSync(marker)) {
        rmSync(marker, { force: true });
        failures.push(`${label}: the trial could write outside its binds`);
        continue;
      }
      const why =
        run.error?.message ?? (run.stderr.trim().split('\n').at(-1) || `exit ${run.status ?? run.signal ?? 'unknown'}`);
      failures.push(`${label}: ${why}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return unavailable(
    version,
    binary,
    `bwrap is installed but a trial run failed (${failures.join('; ')}) — user namespaces may be off (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0) or the container forbids them`,
  );
}

/**
 * Whether this bwrap can lay a discarded overlay over a directory: it must list `--tmp-overlay`
 * (bubblewrap 0.10+; Debian 12 ships 0.8.0 without it) and a trial write through one must work
 * and leave the directory untouched (the kernel may refuse overlayfs in a user namespace).
 */
function overlayWorks(binary: string, extra: readonly string[], dir: string, env: NodeJS.ProcessEnv): boolean {
  const help = spawnSync(binary, ['--help'], { encoding: 'utf8', timeout: TRIAL_TIMEOUT_MS, env });
  if (!`${help.stdout}${help.stderr}`.includes('--tmp-overlay')) return false;
  const run = spawnSync(
    binary,
    [
      ...extra,
      ...BASE_FLAGS,
      '--overlay-src',
      dir,
      '--tmp-overlay',
      dir,
      '--',
      '/bin/sh',
      '-c',
      ': > "$1/overlay"',
      'sh',
      dir,
    ],
    {
      encoding: 'utf8',
      timeout: TRIAL_TIMEOUT_MS,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const held = !existsSync(join(dir, 'overlay'));
  rmSync(join(dir, 'overlay'), { force: true });
  return run.status === 0 && held;
}

/**
 * Whether bwrap loads the unix-socket filter here: there is one for this machine's syscalls, and
 * a trial run under it starts (a kernel without seccomp filters refuses `--seccomp`).
 */
function filterWorks(
  binary: string,
  extra: readonly string[],
  env: NodeJS.ProcessEnv,
): { works: boolean; reason: string } {
  let file: string | null;
  try {
    file = unixSocketFilterFile();
  } catch (error) {
    return { works: false, reason: `the unix-socket filter could not be written: ${(error as Error).message}` };
  }
  if (file === null)
    return {
      works: false,
      reason: `gaffer has no unix-socket filter for ${process.arch} (only x64 and arm64): sandboxed runs can reach the host's unix sockets`,
    };
  const [sh, ...args] = withFilterFd(
    [binary, ...extra, ...BASE_FLAGS, '--seccomp', String(FILTER_FD), '--', '/bin/sh', '-c', 'exit 0'],
    file,
  );
  const run = spawnSync(sh as string, args, {
    encoding: 'utf8',
    timeout: TRIAL_TIMEOUT_MS,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (run.status === 0) return { works: true, reason: 'bwrap loads the unix-socket filter (seccomp)' };
  const why =
    run.error?.message ?? (run.stderr.trim().split('\n').at(-1) || `exit ${run.status ?? run.signal ?? 'unknown'}`);
  return {
    works: false,
    reason: `bwrap cannot load the unix-socket filter here (${why}): sandboxed runs can reach the host's unix sockets`,
  };
}

function unavailable(version: string | null, binary: string | null, reason: string): SandboxProbe {
  return {
    available: false,
    reason,
    version,
    binary,
    flags: [],
    tmpOverlay: false,
    unixSocketFilter: false,
    unixSocketFilterReason: 'no sandbox',
  };
}
