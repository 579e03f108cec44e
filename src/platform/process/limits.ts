import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import {
  cleanStaleCgroups,
  cgroupProcsFiles,
  createRunCgroup,
  detectCgroupSupport,
  killCgroupMembers,
  readCgroupCounts,
  removeRunCgroup,
  type RunCgroup,
} from './cgroup.js';
import { listProcessGroupMembers } from './proc-stat.js';
import { singleQuoted } from './shell-quote.js';

/**
 * A worker's or a verification's process-count cap, memory cap and CPU weight (issue 11 "Limits").
 * Enforced by the kernel in a cgroup of the run's own where gaffer can make one (v2, else v1), else
 * by a watchdog that polls the run's process group and kills it when over.
 */
export interface RunLimits {
  /** At most this many processes (in a cgroup: tasks, so threads count too). */
  processes: number;
  /** At most this much memory, bytes (RSS summed over the group, for the watchdog). */
  memoryBytes: number;
  /** CPU weight on cgroup v2's scale (100 = an equal share): below gaffer's own, so its API stays responsive. */
  cpuWeight: number;
}

/** Which limit ended a run. */
export type LimitKind = 'processes' | 'memory';

/** How limits are enforced here. */
export type LimitMechanism = 'cgroup2' | 'cgroup1' | 'watchdog';

/** The limits a run had and how they held, as its result says. */
export interface AppliedLimits extends RunLimits {
  mechanism: LimitMechanism;
}

/** What a run's limits saw by its end. */
export interface LimitOutcome {
  /** The limit that ended the run; null when none did. */
  limitHit: LimitKind | null;
  /** Most processes at once (cgroup: tasks), when known. */
  peakProcesses: number | null;
  /** Most memory at once, bytes, when known. */
  peakMemoryBytes: number | null;
  /** Processes of the run outside its process group (setsid, `timeout`) that were killed with it. */
  escapedKilled: number;
}

/** Enforces one run's limits, from before its spawn to after its end. */
export interface LimitEnforcer {
  readonly applied: AppliedLimits;
  /** The command to spawn instead: it enters the run's cgroup (or lowers its priority) before it execs. */
  wrap(command: { file: string; args: string[] }): { file: string; args: string[] };
  /** Starts watching the spawned group; `onHit` is called once, when a limit is hit. */
  watch(pgid: number, onHit: (kind: LimitKind) => void): void;
  /** Ends the whole run at once on a hit: no fork gets through meanwhile where a cgroup holds it. */
  killAll(): Promise<void>;
  /** After the group is gone: the last counts, leftovers killed, the cgroup removed. `exitedCleanly`: exit 0 by itself. */
  finish(exitedCleanly: boolean): Promise<LimitOutcome>;
}

/** How often a run's counters (or, for the watchdog, its group) are read, ms. */
export const LIMIT_POLL_MS = 100;

/** After start, when a dead gaffer's run cgroups are looked at again: restart recovery has killed their survivors by then. */
const AFTER_RECOVERY_MS = 15_000;

let defaults: RunLimits | null = null;
let hasCleaned = false;

/**
 * Sets the limits every run gets unless it passes its own (the CLI registers the config's at start,
 * so runners and the verification need no new parameter); null: none.
 */
export function setRunLimits(limits: RunLimits | null): void {
  defaults = limits;
  if (limits === null || hasCleaned) return;
  hasCleaned = true;
  cleanStaleCgroups();
  setTimeout(cleanStaleCgroups, AFTER_RECOVERY_MS).unref();
}

/** The limits set by `setRunLimits`, null when none. */
export function defaultRunLimits(): RunLimits | null {
  return defaults;
}

/** The config's `limits` (`memory_mb` in MiB) as RunLimits. */
export function runLimitsFromConfig(limits: { processes: number; memory_mb: number; cpu_weight: number }): RunLimits {
  return { processes: limits.processes, memoryBytes: limits.memory_mb * 1024 * 1024, cpuWeight: limits.cpu_weight };
}

/** Which mechanism enforces limits on this machine, and in words why (`gaffer doctor`). */
export function detectLimitMechanism(): { mechanism: LimitMechanism; detail: string } {
  const { support, why } = detectCgroupSupport();
  if (support === null)
    return {
      mechanism: 'watchdog',
      detail: `a watchdog over each run's process group (polls every ${LIMIT_POLL_MS} ms): ${why}`,
    };
  return { mechanism: support.version === 2 ? 'cgroup2' : 'cgroup1', detail: `a cgroup per run: ${why}` };
}

/** A limit hit in words, naming its value (`ended by the process-count limit (64)`). */
export function describeLimitHit(kind: LimitKind, limits: RunLimits | null): string {
  if (kind === 'processes') return `ended by the process-count limit${limits === null ? '' : ` (${limits.processes})`}`;
  return `ended by the memory limit${limits === null ? '' : ` (${Math.round(limits.memoryBytes / 1024 / 1024)} MiB)`}`;
}

/** The enforcer for a run: a cgroup where one can be made, else the watchdog. `forceWatchdog` skips cgroups (tests). */
export function prepareLimits(limits: RunLimits, opts: { forceWatchdog?: boolean } = {}): LimitEnforcer {
  const support = opts.forceWatchdog === true ? null : detectCgroupSupport().support;
  const cg = support === null ? null : createRunCgroup(support, limits);
  return cg === null ? new WatchdogEnforcer(limits) : new CgroupEnforcer(limits, cg);
}

class CgroupEnforcer implements LimitEnforcer {
  readonly applied: AppliedLimits;
  readonly #cg: RunCgroup;
  #timer: NodeJS.Timeout | null = null;
  #hit: LimitKind | null = null;

  constructor(limits: RunLimits, cg: RunCgroup) {
    this.applied = { ...limits, mechanism: cg.version === 2 ? 'cgroup2' : 'cgroup1' };
    this.#cg = cg;
  }

  wrap(command: { file: string; args: string[] }): { file: string; args: string[] } {
    // the pid enters the cgroup before it execs the command: a fork bomb starts in microseconds
    const enter = cgroupProcsFiles(this.#cg)
      .map((file) => `echo $$ > ${singleQuoted(file)}`)
      .join(' && ');
    return { file: '/bin/sh', args: ['-c', `${enter} && exec "$0" "$@"`, command.file, ...command.args] };
  }

  watch(_pgid: number, onHit: (kind: LimitKind) => void): void {
    this.#timer = setInterval(() => {
      const hit = this.#readHit();
      if (hit === null) return;
      this.#stopWatching();
      this.#hit = hit;
      onHit(hit);
    }, LIMIT_POLL_MS);
  }

  async killAll(): Promise<void> {
    await killCgroupMembers(this.#cg);
  }

  async finish(exitedCleanly: boolean): Promise<LimitOutcome> {
    this.#stopWatching();
    // read before the leftovers are killed: stopping forks there counts as pids.max hits
    const counts = readCgroupCounts(this.#cg);
    const late = exitedCleanly ? null : this.#readHit();
    const leftovers = await killCgroupMembers(this.#cg);
    await removeRunCgroup(this.#cg);
    return {
      limitHit: this.#hit ?? late,
      peakProcesses: counts.peakTasks,
      peakMemoryBytes: counts.peakMemoryBytes,
      escapedKilled: leftovers.killed,
    };
  }

  #readHit(): LimitKind | null {
    const counts = readCgroupCounts(this.#cg);
    // the memory cap first: an OOM kill can also make a later fork fail
    if (counts.oomKills > 0) return 'memory';
    if (counts.pidsMaxHits > 0) return 'processes';
    return null;
  }

  #stopWatching(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}

let pageSize: number | null = null;

function readPageSize(): number {
  if (pageSize === null) {
    try {
      pageSize = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim()) || 4096;
    } catch {
      pageSize = 4096;
    }
  }
  return pageSize;
}

/**
 * The fallback: polls the group's live members (their count and summed RSS) and reports a hit when
 * over. It cannot see processes that left the group, nor stop a fork between two polls; the CPU
 * weight becomes a nice value.
 */
class WatchdogEnforcer implements LimitEnforcer {
  readonly applied: AppliedLimits;
  #timer: NodeJS.Timeout | null = null;
  #hit: LimitKind | null = null;
  #peakProcesses = 0;
  #peakMemoryBytes = 0;

  constructor(limits: RunLimits) {
    this.applied = { ...limits, mechanism: 'watchdog' };
  }

  wrap(command: { file: string; args: string[] }): { file: string; args: string[] } {
    const increment = weightToNice(this.applied.cpuWeight);
    if (increment === 0 || !existsSync('/usr/bin/nice')) return command;
    return { file: '/usr/bin/nice', args: ['-n', String(increment), command.file, ...command.args] };
  }

  watch(pgid: number, onHit: (kind: LimitKind) => void): void {
    const page = readPageSize();
    this.#timer = setInterval(() => {
      const live = listProcessGroupMembers(pgid).filter((m) => m.state !== 'Z' && m.state !== 'X');
      const rss = live.reduce((sum, m) => sum + m.rssPages * page, 0);
      this.#peakProcesses = Math.max(this.#peakProcesses, live.length);
      this.#peakMemoryBytes = Math.max(this.#peakMemoryBytes, rss);
      const hit =
        live.length >= this.applied.processes ? 'processes' : rss > this.applied.memoryBytes ? 'memory' : null;
      if (hit === null) return;
      this.#stopWatching();
      this.#hit = hit;
      onHit(hit);
    }, LIMIT_POLL_MS);
  }

  killAll(): Promise<void> {
    // the group is killed by the caller; nothing outside it is known here
    return Promise.resolve();
  }

  finish(): Promise<LimitOutcome> {
    this.#stopWatching();
    return Promise.resolve({
      limitHit: this.#hit,
      peakProcesses: this.#peakProcesses || null,
      peakMemoryBytes: this.#peakMemoryBytes || null,
      escapedKilled: 0,
    });
  }

  #stopWatching(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/**
 * A weight (100 = an equal share) as a nice increment: each nice step is ~1.25× less CPU (the
 * kernel's table), so weight 50 is nice 3. Never below 0: a run is never given more than gaffer.
 */
export function weightToNice(weight: number): number {
  if (weight >= 100) return 0;
  return Math.min(19, Math.round(Math.log(100 / weight) / Math.log(1.25)));
}
