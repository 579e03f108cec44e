import { mkdirSync } from 'node:fs';
import { choosePrivateHome, listKeptHomePaths, buildPrivateHomeArgs } from './home.js';
import { buildSecretMaskArgs } from './masks.js';
import { NO_NETWORK, planNetwork, type NetworkMode, type SandboxNetwork } from './network.js';
import { BASE_FLAGS, probeSandbox } from './probe.js';
import { FILTER_FD, unixSocketFilterFile, withFilterFd } from './seccomp.js';
import { listProgramDirs, realPath } from './visible.js';

/** Config `sandbox` (spec 04): `auto` uses it where it works, `required` refuses a worker without it, `off` never uses it. */
export type SandboxPolicy = 'auto' | 'off' | 'required';
export const SANDBOX_POLICIES: readonly SandboxPolicy[] = ['auto', 'off', 'required'];

/** What to run inside the sandbox. Give `shellCommand` (run through `/bin/sh -c`) or `argv`. */
export interface SandboxCommand {
  shellCommand?: string;
  argv?: string[];
  /** The only tree the command may write besides the private /tmp and `writable`; also its cwd. */
  workspace: string;
  /** More writable directories (an agent CLI's state dir, e.g. ~/.claude); created when missing. */
  writable?: string[];
  /** Files or directories to keep visible read-only although /tmp is replaced (e.g. an instruction file). */
  readable?: string[];
  /** A writable TMPDIR inside gaffer's data dir; default: the private /tmp. */
  tmpDir?: string;
  /** The run's network (network.ts); default `none`: a loopback of its own, no route to the host's (nor to gaffer's API). */
  network?: SandboxNetwork;
  /** Programs the command runs besides its first element (an agent CLI behind `sh -c 'exec "$0"'`): kept visible like it. */
  programs?: string[];
  /**
   * The HOME made private for the run (writable, its writes discarded: spec 04); default the
   * process's `HOME`. Null leaves HOME as it is (agent CLIs keep their own configured homes).
   */
  home?: string | null;
}

/** A command wrapped in bwrap. */
export interface SandboxedCommand {
  argv: string[];
  sandboxed: true;
  /** The network it gets: `host` only where `outbound` was asked and slirp4netns is missing. */
  network: NetworkMode;
  /** Whether the run gets the unix-socket filter (seccomp.ts): no unix socket of the host is reachable from inside. */
  unixSocketFilter?: boolean;
}

/** `gaffer doctor`'s and the runner table's view of the sandbox. */
export interface SandboxStatus {
  available: boolean;
  reason: string;
  version: string | null;
}

/** Whether the sandbox works here, why (not), and bwrap's version. */
export function sandboxStatus(): SandboxStatus {
  const probe = probeSandbox();
  return { available: probe.available, reason: probe.reason, version: probe.version };
}

/**
 * Wraps a command in bubblewrap: the filesystem read-only, the workspace (and `writable`)
 * read-write, a private /tmp that TMPDIR points into, a private HOME whose writes are discarded
 * (home.ts; nyc, npm's and pip's caches write there), fresh /dev and /proc, a private pid
 * namespace that dies with bwrap, no capabilities (as root in a container bwrap would otherwise
 * keep them, and a root with CAP_SYS_ADMIN could remount / read-write), a network namespace of
 * its own (network.ts: `none` unless asked; never a route to the host's loopback, where gaffer's
 * API listens). Null when bwrap does not work here.
 *
 * No `--new-session`: the worker is already the leader of its own session without a terminal
 * (spawned detached, stdin on /dev/null), and staying in bwrap's process group is what lets the
 * engine's group kill reach it. When bwrap dies, `--die-with-parent` kills the namespace's init
 * and with it every process inside, even one that ignores SIGTERM or called setsid.
 */
export function wrapWithSandbox(cmd: SandboxCommand): SandboxedCommand | null {
  const probe = probeSandbox();
  if (!probe.available || probe.binary === null) return null;
  const inner = cmd.shellCommand !== undefined ? ['/bin/sh', '-c', cmd.shellCommand] : (cmd.argv ?? []);
  if (inner.length === 0) return null;
  const workspace = realPath(cmd.workspace);
  const home = cmd.home === null ? null : choosePrivateHome(cmd.home ?? process.env.HOME, workspace, probe.tmpOverlay);
  const argv = [probe.binary, ...probe.flags, ...BASE_FLAGS, '--tmpfs', '/tmp', ...buildPrivateHomeArgs(home)];
  // binds after the mounts that empty /tmp and HOME: a workspace or data dir there must stay visible on
  // top of them, and so must the programs a worker runs from there (this checkout, node, PATH entries
  // and the packages their links lead to)
  // an overlay hides nothing of HOME; a tmpfs hides all of it
  const hidden = home === null || home.how === 'overlay' ? ['/tmp'] : ['/tmp', home.home];
  const programs = [inner[0] as string, ...(cmd.programs ?? [])];
  for (const path of [...listProgramDirs(hidden, { programs, workspace }), ...(cmd.readable ?? [])])
    argv.push('--ro-bind-try', realPath(path), realPath(path));
  for (const path of listKeptHomePaths(home)) argv.push('--ro-bind-try', realPath(path), path);
  let tmp = '/tmp';
  if (cmd.tmpDir !== undefined) {
    tmp = ensureDir(cmd.tmpDir);
    argv.push('--bind', tmp, tmp);
  }
  argv.push('--bind', workspace, workspace);
  for (const dir of cmd.writable ?? []) {
    const real = ensureDir(dir);
    argv.push('--bind-try', real, real);
  }
  argv.push(...buildSecretMaskArgs(home, cmd));
  const net = planNetwork(cmd.network ?? NO_NETWORK, inner, { userns: probe.flags.includes('--unshare-user') });
  argv.push(...net.bwrapArgs);
  // issue 32: a run with a network of its own reaches no unix socket of the host either (seccomp.ts);
  // a `host` run has the host's network, abstract sockets and gaffer's API included: filtering paths would promise nothing
  const filter = net.mode === 'host' || !probe.unixSocketFilter ? null : unixSocketFilterFile();
  if (filter !== null) argv.push('--seccomp', String(FILTER_FD));
  argv.push('--setenv', 'TMPDIR', tmp, '--chdir', workspace, '--', ...net.inner);
  return {
    argv: net.outer(filter === null ? argv : withFilterFd(argv, filter)),
    sandboxed: true,
    network: net.mode,
    unixSocketFilter: filter !== null,
  };
}

function ensureDir(dir: string): string {
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    // --bind-try skips a directory that still does not exist
  }
  return realPath(dir);
}
