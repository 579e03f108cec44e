import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findOnPath } from './probe.js';

/**
 * Which network a run had (the worker row's `network`, spec 04): `none` = a namespace of its own
 * with only its own loopback; `outbound` = that plus outbound network through slirp4netns with the
 * host's loopback cut off; `host` = the host's network, loopback and gaffer's API included.
 */
export type NetworkMode = 'none' | 'outbound' | 'host';

/** The network a sandboxed run asks for. */
export interface SandboxNetwork {
  /** `none` (its own loopback only) or `outbound` (slirp4netns, the host's loopback cut off; the host's network where slirp4netns is missing). */
  mode: 'none' | 'outbound';
  /** Host loopback ports reachable inside at 127.0.0.1:PORT, each connection handed out over the launcher's channel and relayed there; no other host port is. */
  loopbackPorts?: readonly number[];
}

/** What every sandboxed run gets unless its runner asks for more. */
export const NO_NETWORK: SandboxNetwork = { mode: 'none' };

/** What a run's network adds to its bwrap command. */
export interface NetworkPlan {
  mode: NetworkMode;
  /** bwrap flags, placed after the mounts that replace /tmp. */
  bwrapArgs: string[];
  /** The command inside the sandbox: as given, or behind the in-namespace relay when ports are forwarded. */
  inner: string[];
  /** The whole bwrap argv, or it behind the launcher (net-run.cjs) when the network needs one. */
  outer: (bwrapArgv: string[]) => string[];
  /** The host loopback ports relayed inside. */
  forwarded: number[];
}

/** slirp4netns on this machine (cached like the sandbox probe). */
export interface Slirp4netnsStatus {
  path: string | null;
  /** E.g. `slirp4netns version 1.2.0`; null when it is not installed. */
  version: string | null;
}

const NET_RUN = fileURLToPath(new URL('./net-run.cjs', import.meta.url));
/** bwrap's fds for --info-fd and --block-fd, as net-run.cjs opens them. */
const INFO_FD = '3';
const BLOCK_FD = '4';
/** A long TMPDIR falls back to /tmp (a run folder's path is bound into every sandbox). */
const RUN_DIR_ROOM = 80;

let cachedSlirp: Slirp4netnsStatus | null = null;

/** Whether slirp4netns is installed (PATH), and its version; run once per process (`refresh` looks again). */
export function slirp4netnsStatus(opts: { env?: NodeJS.ProcessEnv; refresh?: boolean } = {}): Slirp4netnsStatus {
  if (cachedSlirp !== null && opts.refresh !== true) return cachedSlirp;
  const env = opts.env ?? process.env;
  const path = findOnPath('slirp4netns', env);
  const run = path === null ? null : spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 5_000, env });
  const version = run?.status === 0 ? (run.stdout.split('\n')[0]?.trim() ?? null) : null;
  cachedSlirp = { path, version: version || null };
  return cachedSlirp;
}

/**
 * What `request` adds to a bwrap run of `inner`: `--unshare-net` always (bwrap brings up a loopback
 * of its own); for `outbound`, the launcher attaches slirp4netns before the command starts (or the
 * host's network where slirp4netns is missing: the run says `host`); for forwarded ports, the
 * launcher's relays on the host and the in-namespace relay. `none` without ports stays a plain
 * bwrap argv (no extra process). `userns`: bwrap makes a user namespace (unprivileged).
 */
export function planNetwork(request: SandboxNetwork, inner: string[], opts: { userns: boolean }): NetworkPlan {
  const slirp = request.mode === 'outbound' ? slirp4netnsStatus().path : null;
  if (request.mode === 'outbound' && slirp === null)
    return { mode: 'host', bwrapArgs: [], inner, outer: (argv) => argv, forwarded: [] };
  const ports = normalizePorts(request.loopbackPorts ?? []);
  const ownResolver = slirp !== null && hasOnlyLoopbackNameservers(readResolvConf());
  const dir = ownResolver ? makeNetDirPath() : null;
  const bwrapArgs = ['--unshare-net'];
  if (dir !== null) bwrapArgs.push('--ro-bind', dir, dir);
  // the host's resolver on its loopback (systemd-resolved's 127.0.0.53) is cut off: slirp4netns's own forwards to it
  if (dir !== null && ownResolver) bwrapArgs.push('--ro-bind', join(dir, 'resolv.conf'), '/etc/resolv.conf');
  if (slirp !== null) bwrapArgs.push('--info-fd', INFO_FD, '--block-fd', BLOCK_FD);
  const forwards = ports.flatMap((p) => ['--forward', String(p)]);
  const wrappedInner = ports.length === 0 ? inner : [process.execPath, NET_RUN, 'inside', ...forwards, '--', ...inner];
  const launcherArgs = [
    ...(dir === null ? [] : ['--run-dir', dir, '--resolv-conf']),
    ...forwards,
    ...(slirp === null ? [] : ['--slirp4netns', slirp, ...(opts.userns ? ['--userns'] : [])]),
  ];
  const outer =
    launcherArgs.length === 0
      ? (argv: string[]) => argv
      : (argv: string[]) => [process.execPath, NET_RUN, 'outside', ...launcherArgs, '--', ...argv];
  return { mode: slirp === null ? 'none' : 'outbound', bwrapArgs, inner: wrappedInner, outer, forwarded: ports };
}

/** Whether a resolv.conf names only loopback nameservers (or none), which a namespace of its own cannot reach. */
export function hasOnlyLoopbackNameservers(resolvConf: string | null): boolean {
  if (resolvConf === null) return false;
  const servers = [...resolvConf.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1] as string);
  return servers.length > 0 && servers.every((s) => /^127\./.test(s) || s === '::1');
}

/** The loopback port of a URL on 127.0.0.1, localhost or ::1 (its scheme's default when it names none); null elsewhere. */
export function loopbackPortOf(url: string): number | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const host = parsed.hostname.toLowerCase();
  if (host !== 'localhost' && host !== '[::1]' && !/^127\./.test(host)) return null;
  if (parsed.port !== '') return Number(parsed.port);
  return parsed.protocol === 'https:' ? 443 : parsed.protocol === 'http:' ? 80 : null;
}

function normalizePorts(ports: readonly number[]): number[] {
  return [...new Set(ports.filter((p) => Number.isInteger(p) && p >= 1 && p <= 65_535))].sort((a, b) => a - b);
}

function readResolvConf(): string | null {
  try {
    return readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    return null;
  }
}

/** A fresh path for one run's resolv.conf (the launcher makes it 0700 and removes it after the run). */
function makeNetDirPath(): string {
  const root = tmpdir().length <= RUN_DIR_ROOM ? tmpdir() : '/tmp';
  return join(root, `gaffer-net-${randomBytes(6).toString('hex')}`);
}

/** Who gets which network (config `network`, spec 04); verification's is the engine's (`verificationNetwork`). */
export interface NetworkSetup {
  /** Config `network.shell`: shell workers get `outbound` instead of `none`. */
  shell?: boolean;
  /** Config `network.loopback_ports`: forwarded into every sandboxed run. */
  loopbackPorts?: readonly number[];
  /** The loopback ports of the configured model endpoints: forwarded into agent CLIs, so one pointed at a local server reaches it. */
  endpointPorts?: readonly number[];
}

/** A shell worker's network: `none` unless config `network.shell`. */
export function shellNetwork(setup: NetworkSetup): SandboxNetwork {
  return { mode: setup.shell === true ? 'outbound' : 'none', loopbackPorts: setup.loopbackPorts ?? [] };
}

/** The builtin agent's commands' network: `none` (gaffer itself makes the model calls). */
export function builtinCommandNetwork(setup: NetworkSetup): SandboxNetwork {
  return { mode: 'none', loopbackPorts: setup.loopbackPorts ?? [] };
}

/** An agent CLI's network: `outbound` (its model API), the host's loopback cut, the endpoints' loopback ports and `loopback_ports` forwarded. */
export function agentCliNetwork(setup: NetworkSetup): SandboxNetwork {
  return { mode: 'outbound', loopbackPorts: [...(setup.loopbackPorts ?? []), ...(setup.endpointPorts ?? [])] };
}

/** Why config `sandbox: required` refuses a run that would get the host's network (outbound asked, slirp4netns missing). */
export function describeHostNetworkRefusal(): string {
  return "the sandbox is required (config sandbox: required), but slirp4netns is not installed, so this run would get the host network (gaffer's API included): install slirp4netns (apt-get install slirp4netns), or set sandbox: auto to run it on the host network";
}
