import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isPidAlive } from './process-identity.js';

/**
 * Per-run cgroups (issue 11 "Limits"): the kernel enforces a run's process count and memory, so a
 * fork bomb stops at its cap instead of at the machine's, and an allocation that grows without
 * bound is ended by gaffer's cap, not by the machine's OOM killer. Each run's cgroup is a child of
 * gaffer's own (a parent's limits still hold), named `gaffer-<gaffer pid>-<n>` so a later gaffer
 * can tell a dead owner's leftovers from a live one's.
 */

/** The controllers a run's cgroup uses; `cpu` is optional (a weight, not a cap). */
export type CgroupController = 'pids' | 'memory' | 'cpu';

/** Where run cgroups can be made here: the parent directory per controller (v2: one for all). */
export interface CgroupSupport {
  version: 1 | 2;
  pids: string;
  memory: string;
  /** null when no cpu controller can be used here (the weight is then not applied). */
  cpu: string | null;
}

/** One run's cgroup: its directory per controller (v2: the same one thrice). */
export interface RunCgroup extends CgroupSupport {
  name: string;
}

/** What a run's cgroup counted. */
export interface CgroupCounts {
  /** Times a fork failed at pids.max. */
  pidsMaxHits: number;
  /** Processes the kernel's OOM killer ended inside the cgroup. */
  oomKills: number;
  /** Most tasks at once (threads count), when the kernel keeps it. */
  peakTasks: number | null;
  /** Most memory at once, bytes, when the kernel keeps it. */
  peakMemoryBytes: number | null;
}

const RUN_NAME = /^gaffer-(\d+)-(\d+|probe)$/;

interface MountLine {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function parseMountInfo(text: string): MountLine[] {
  const mounts: MountLine[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const fields = left.split(' ');
    const [fsType, , superOptions = ''] = right.split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (root === undefined || mountPoint === undefined || fsType === undefined) continue;
    mounts.push({
      root: unescapeMount(root),
      mountPoint: unescapeMount(mountPoint),
      fsType,
      superOptions: superOptions.split(','),
    });
  }
  return mounts;
}

// mountinfo writes a space, tab, newline and backslash in a path as \040, \011, \012, \134
function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** `/proc/self/cgroup`: v1 controller name (or `''` for the v2 line) → this process's cgroup path. */
function parseSelfCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, controllers = '', path = '/'] = match;
    if (controllers === '') paths.set('', path);
    for (const c of controllers.split(',')) if (c !== '') paths.set(c, path);
  }
  return paths;
}

function dirUnder(mount: MountLine, path: string): string | null {
  const inside = relative(mount.root, path);
  // our cgroup lies outside what this mount shows (another cgroup namespace's view): unusable
  if (inside.startsWith('..')) return null;
  return join(mount.mountPoint, inside);
}

/**
 * The directories run cgroups would be made in, from `/proc/self/mountinfo` and `/proc/self/cgroup`
 * (pure: tests give the texts): v2 when gaffer's own v2 cgroup offers pids and memory, else the v1
 * hierarchies of pids and memory (and cpu), else null. Nothing is checked on disk here.
 */
export function findCgroupParents(
  mountInfo: string,
  selfCgroup: string,
  v2Controllers: (dir: string) => string[],
): CgroupSupport | null {
  const mounts = parseMountInfo(mountInfo);
  const own = parseSelfCgroup(selfCgroup);
  const v2Mount = mounts.find((m) => m.fsType === 'cgroup2');
  const v2Path = own.get('');
  if (v2Mount !== undefined && v2Path !== undefined) {
    const dir = dirUnder(v2Mount, v2Path);
    const offered = dir === null ? [] : v2Controllers(dir);
    if (dir !== null && offered.includes('pids') && offered.includes('memory')) {
      return { version: 2, pids: dir, memory: dir, cpu: offered.includes('cpu') ? dir : null };
    }
  }
  const v1Dir = (controller: CgroupController): string | null => {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    const path = own.get(controller);
    return mount === undefined || path === undefined ? null : dirUnder(mount, path);
  };
  const pids = v1Dir('pids');
  const memory = v1Dir('memory');
  if (pids === null || memory === null) return null;
  return { version: 1, pids, memory, cpu: v1Dir('cpu') };
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function v2ControllersAt(dir: string): string[] {
  return (readText(join(dir, 'cgroup.controllers')) ?? '').trim().split(/\s+/).filter(Boolean);
}

/**
 * v2: run cgroups under ours need our `cgroup.subtree_control` to hand the controllers down. Writing
 * it fails (EBUSY) while processes sit in our cgroup itself, unless it is the root: then v2 is not
 * usable here and the caller falls back.
 */
function enableV2Subtree(support: CgroupSupport): boolean {
  if (support.version === 1) return true;
  const file = join(support.pids, 'cgroup.subtree_control');
  const wanted = ['pids', 'memory', ...(support.cpu === null ? [] : ['cpu'])];
  const enabled = (readText(file) ?? '').trim().split(/\s+/);
  const missing = wanted.filter((c) => !enabled.includes(c));
  if (missing.length === 0) return true;
  try {
    writeFileSync(file, missing.map((c) => `+${c}`).join(' '));
    return true;
  } catch {
    return false;
  }
}

let nextRun = 0;

function runDirs(cg: CgroupSupport): string[] {
  return [...new Set([cg.pids, cg.memory, ...(cg.cpu === null ? [] : [cg.cpu])])];
}

/** Makes a cgroup named `name` under each parent; null (and nothing left behind) when any mkdir fails. */
function makeCgroup(support: CgroupSupport, name: string): RunCgroup | null {
  const cg: RunCgroup = {
    name,
    version: support.version,
    pids: join(support.pids, name),
    memory: join(support.memory, name),
    cpu: support.cpu === null ? null : join(support.cpu, name),
  };
  const made: string[] = [];
  try {
    for (const dir of runDirs(cg)) {
      mkdirSync(dir);
      made.push(dir);
    }
    return cg;
  } catch {
    for (const dir of made) tryRmdir(dir);
    return null;
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

let detected: { support: CgroupSupport | null; why: string } | null = null;

/**
 * Whether run cgroups can be made here, found once by a trial (a probe cgroup is made with the limit
 * files it needs, then removed): the support, or null and why not.
 */
export function detectCgroupSupport(): { support: CgroupSupport | null; why: string } {
  detected ??= probeCgroupSupport();
  return detected;
}

function probeCgroupSupport(): { support: CgroupSupport | null; why: string } {
  const mountInfo = readText('/proc/self/mountinfo');
  const selfCgroup = readText('/proc/self/cgroup');
  if (mountInfo === null || selfCgroup === null)
    return { support: null, why: 'no /proc/self/cgroup: not Linux, or /proc is not mounted' };
  const support = findCgroupParents(mountInfo, selfCgroup, v2ControllersAt);
  if (support === null)
    return {
      support: null,
      why: 'no cgroup with the pids and memory controllers (v2 offers none here, and no v1 hierarchy has them)',
    };
  if (!enableV2Subtree(support))
    return {
      support: null,
      why: `cgroup v2 at ${support.pids}: cannot hand pids and memory down to child cgroups (processes sit in gaffer's own cgroup)`,
    };
  const probe = makeCgroup(support, `gaffer-${process.pid}-probe`);
  if (probe === null)
    return {
      support: null,
      why: `cannot create a cgroup under ${support.pids} (not root, and not delegated to this user)`,
    };
  const needed =
    support.version === 1
      ? [join(probe.pids, 'pids.max'), join(probe.memory, 'memory.limit_in_bytes')]
      : [join(probe.pids, 'pids.max'), join(probe.pids, 'memory.max')];
  const complete = needed.every((file) => existsSync(file));
  for (const dir of runDirs(probe)) tryRmdir(dir);
  if (!complete)
    return {
      support: null,
      why: `a cgroup under ${support.pids} lacks ${needed.map((f) => f.split('/').at(-1)).join(' or ')}`,
    };
  const where =
    support.version === 1
      ? `${support.pids}, ${support.memory}${support.cpu === null ? '' : `, ${support.cpu}`}`
      : support.pids;
  return { support, why: `cgroup v${support.version} (${where})` };
}

/**
 * Removes the empty run cgroups a dead gaffer left (crash, kill -9). One that still holds
 * processes stays: they are a dead job's survivors, which restart recovery kills.
 */
export function removeStaleCgroups(support: CgroupSupport): number {
  let removed = 0;
  for (const parent of runDirs(support)) {
    let entries: string[];
    try {
      entries = readdirSync(parent);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const owner = RUN_NAME.exec(entry)?.[1];
      if (owner === undefined || Number(owner) === process.pid || isPidAlive(Number(owner))) continue;
      if (tryRmdir(join(parent, entry))) removed++;
    }
  }
  return removed;
}

/** `removeStaleCgroups` where run cgroups can be made here; nothing elsewhere. */
export function cleanStaleCgroups(): void {
  const { support } = detectCgroupSupport();
  if (support !== null) removeStaleCgroups(support);
}

/** Makes a fresh run cgroup with the caps written; null when it cannot (the caller falls back). */
export function createRunCgroup(
  support: CgroupSupport,
  limits: { processes: number; memoryBytes: number; cpuWeight: number },
): RunCgroup | null {
  // each run, not once: a dead gaffer's cgroup is empty only after restart recovery killed its survivors
  removeStaleCgroups(support);
  const cg = makeCgroup(support, `gaffer-${process.pid}-${nextRun++}`);
  if (cg === null) return null;
  try {
    writeFileSync(join(cg.pids, 'pids.max'), String(limits.processes));
    if (cg.version === 1) {
      writeFileSync(join(cg.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // without this, swap would stretch the cap; the file exists only with swap accounting
      writeOptional(join(cg.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      if (cg.cpu !== null) writeOptional(join(cg.cpu, 'cpu.shares'), String(weightToShares(limits.cpuWeight)));
    } else {
      writeFileSync(join(cg.memory, 'memory.max'), String(limits.memoryBytes));
      writeOptional(join(cg.memory, 'memory.swap.max'), '0');
      if (cg.cpu !== null) writeOptional(join(cg.cpu, 'cpu.weight'), String(limits.cpuWeight));
    }
    return cg;
  } catch {
    for (const dir of runDirs(cg)) tryRmdir(dir);
    return null;
  }
}

function writeOptional(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // a kernel without that file: the cap holds without it
  }
}

/** cgroup v2's weight (1..10000, 100 = an equal share) as v1 `cpu.shares` (1024 = an equal share). */
export function weightToShares(weight: number): number {
  return Math.min(262_144, Math.max(2, Math.round((weight * 1024) / 100)));
}

/** The `cgroup.procs` files a process must be written into to enter the run's cgroup (one per v1 hierarchy). */
export function cgroupProcsFiles(cg: RunCgroup): string[] {
  return runDirs(cg).map((dir) => join(dir, 'cgroup.procs'));
}

function counter(text: string | null, key: string): number {
  const match = text === null ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match?.[1] === undefined ? 0 : Number(match[1]);
}

function numberIn(file: string): number | null {
  const text = readText(file);
  const n = text === null ? NaN : Number(text.trim());
  return Number.isFinite(n) ? n : null;
}

/** Reads the run cgroup's hit counters and peaks (v1 `memory.oom_control`, v2 `memory.events`). */
export function readCgroupCounts(cg: RunCgroup): CgroupCounts {
  const v1 = cg.version === 1;
  return {
    pidsMaxHits: counter(readText(join(cg.pids, 'pids.events')), 'max'),
    oomKills: counter(readText(join(cg.memory, v1 ? 'memory.oom_control' : 'memory.events')), 'oom_kill'),
    peakTasks: numberIn(join(cg.pids, 'pids.peak')),
    peakMemoryBytes: numberIn(join(cg.memory, v1 ? 'memory.max_usage_in_bytes' : 'memory.peak')),
  };
}

function membersOf(cg: RunCgroup): number[] {
  return (readText(join(cg.pids, 'cgroup.procs')) ?? '')
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

/**
 * SIGKILLs every process in the run's cgroup, also those that left its process group (setsid,
 * `timeout`): forks are stopped first (pids.max 0; v2 has `cgroup.kill`), so a fork bomb cannot
 * refill it between reads. Bounded; true when it is empty.
 */
export async function killCgroupMembers(cg: RunCgroup, waitMs = 3000): Promise<{ isEmpty: boolean; killed: number }> {
  const killed = new Set<number>();
  const deadline = performance.now() + waitMs;
  for (let round = 0; ; round++) {
    const members = membersOf(cg);
    if (members.length === 0) return { isEmpty: true, killed: killed.size };
    if (performance.now() > deadline) return { isEmpty: false, killed: killed.size };
    if (round === 0) {
      writeOptional(join(cg.pids, 'pids.max'), '0');
      if (cg.version === 2) writeOptional(join(cg.pids, 'cgroup.kill'), '1');
    }
    for (const pid of members) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch {
        // gone meanwhile
      }
    }
    await sleep(10);
  }
}

/** Removes the run's cgroup directories (an empty cgroup may take a moment to be removable). */
export async function removeRunCgroup(cg: RunCgroup, waitMs = 1000): Promise<boolean> {
  const deadline = performance.now() + waitMs;
  let left = runDirs(cg);
  for (;;) {
    left = left.filter((dir) => !tryRmdir(dir));
    if (left.length === 0) return true;
    if (performance.now() > deadline) return false;
    await sleep(20);
  }
}
