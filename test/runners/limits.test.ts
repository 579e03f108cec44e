import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/engine/maintenance/doctor.js';
import { detectCgroupSupport, findCgroupParents, weightToShares } from '../../src/platform/process/cgroup.js';
import {
  describeLimitHit,
  detectLimitMechanism,
  weightToNice,
  type RunLimits,
} from '../../src/platform/process/limits.js';
import { runProcess } from '../../src/platform/process/run-process.js';
import { liveGroupMembers, makeTempDir } from './helpers.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const MIB = 1024 * 1024;
const small: RunLimits = { processes: 32, memoryBytes: 128 * MIB, cpuWeight: 50 };

// every loop below is bounded: the bomb by its cap (and `timeout`), the allocation by 1 GiB
const FORK_BOMB = "timeout 20 sh -c 'bomb() { bomb | bomb & }; bomb; sleep 20'";
const ALLOCATE = `node -e 'const a = []; setInterval(() => { if (a.length < 256) a.push(Buffer.alloc(4 << 20, 1)); }, 5)'`;

/** Our run cgroups still on disk, read straight from the cgroup filesystems. */
function ourCgroups(): string[] {
  const parents = ['/sys/fs/cgroup/pids', '/sys/fs/cgroup/cpu', '/sys/fs/cgroup/unified'];
  const memory = /^\d+:memory:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
  if (memory !== undefined) parents.push(join('/sys/fs/cgroup/memory', memory));
  const found: string[] = [];
  for (const parent of parents) {
    if (!existsSync(parent)) continue;
    for (const entry of readdirSync(parent))
      if (entry.startsWith(`gaffer-${process.pid}-`)) found.push(join(parent, entry));
  }
  return found;
}

afterAll(() => {
  expect(ourCgroups()).toEqual([]);
});

describe('cgroup detection', () => {
  const v1MountInfo = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');
  const v1Self = '8:pids:/\n4:memory:/jobs/a1\n1:cpu,cpuacct:/\n0::/';

  it("uses the v1 hierarchies under gaffer's own cgroups when v2 offers no controllers", () => {
    expect(findCgroupParents(v1MountInfo, v1Self, () => [])).toEqual({
      version: 1,
      pids: '/sys/fs/cgroup/pids',
      memory: '/sys/fs/cgroup/memory/jobs/a1',
      cpu: '/sys/fs/cgroup/cpu,cpuacct',
    });
  });

  it("prefers v2 when gaffer's own v2 cgroup offers pids and memory", () => {
    const mountInfo = '30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate';
    const seen: string[] = [];
    const support = findCgroupParents(mountInfo, '0::/user.slice/gaffer.service', (dir) => {
      seen.push(dir);
      return ['cpuset', 'cpu', 'io', 'memory', 'pids'];
    });
    expect(seen).toEqual(['/sys/fs/cgroup/user.slice/gaffer.service']);
    expect(support).toEqual({ version: 2, pids: seen[0], memory: seen[0], cpu: seen[0] });
  });

  it("finds nothing without pids or memory, and nothing outside the mount's view", () => {
    expect(findCgroupParents('30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw', '0::/', () => ['cpu'])).toBeNull();
    const noPids = v1MountInfo
      .split('\n')
      .filter((l) => !l.includes('pids'))
      .join('\n');
    expect(findCgroupParents(noPids, v1Self, () => [])).toBeNull();
    // a mount whose root is /other shows nothing of /jobs/a1
    const elsewhere = v1MountInfo.replace('0:32 / /sys/fs/cgroup/memory', '0:32 /other /sys/fs/cgroup/memory');
    expect(findCgroupParents(elsewhere, v1Self, () => [])).toBeNull();
  });

  it('agrees with the machine: v1 here when v2 has no controllers and the v1 pids and memory hierarchies take a cgroup', () => {
    const v2Empty =
      !existsSync('/sys/fs/cgroup/unified/cgroup.controllers') ||
      readFileSync('/sys/fs/cgroup/unified/cgroup.controllers', 'utf8').trim() === '';
    const v1Writable =
      process.getuid?.() === 0 &&
      existsSync('/sys/fs/cgroup/pids/cgroup.procs') &&
      existsSync('/sys/fs/cgroup/memory/cgroup.procs');
    const { mechanism, detail } = detectLimitMechanism();
    if (v2Empty && v1Writable) expect(mechanism).toBe('cgroup1');
    else if (!v1Writable && v2Empty) expect(mechanism).toBe('watchdog');
    expect(detail).toMatch(mechanism === 'watchdog' ? /watchdog/ : /cgroup v[12]/);
  });

  it('gaffer doctor names the mechanism and the configured limits', async () => {
    const data = join(makeTempDir(), 'data');
    mkdirSync(data);
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({ limits: { processes: 64, memory_mb: 256, cpu_weight: 40 } }),
    );
    const report = await runDoctor({ dataDir: data, env: { ...process.env, GAFFER_SANDBOX: 'off' } });
    const check = report.checks.find((c) => c.name === 'limits');
    const { mechanism } = detectLimitMechanism();
    expect(check).toMatchObject({ status: mechanism === 'watchdog' ? 'warn' : 'ok' });
    expect(check?.detail).toMatch(/^64 processes, 256 MiB, CPU weight 40 per worker and verification, held by /);
    expect(check?.detail).toContain(
      mechanism === 'watchdog' ? 'a watchdog over each run' : `a cgroup per run: cgroup v${mechanism.slice(-1)}`,
    );
  });

  it("converts the weight to cpu.shares and to a nice increment, never above gaffer's own share", () => {
    expect(weightToShares(100)).toBe(1024);
    expect(weightToShares(50)).toBe(512);
    expect(weightToShares(1)).toBe(10);
    expect(weightToNice(100)).toBe(0);
    expect(weightToNice(400)).toBe(0);
    expect(weightToNice(50)).toBe(3);
    expect(weightToNice(1)).toBe(19);
  });

  it('names the limit and its value', () => {
    expect(describeLimitHit('processes', small)).toBe('ended by the process-count limit (32)');
    expect(describeLimitHit('memory', small)).toBe('ended by the memory limit (128 MiB)');
  });
});

const hasCgroups = detectCgroupSupport().support !== null;

describe.runIf(hasCgroups)('limits in a cgroup', () => {
  it('ends a fork bomb at its process cap, well before the timeout, and leaves nothing behind', async () => {
    const result = await runProcess({
      shellCommand: FORK_BOMB,
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
    });
    console.info(
      `fork bomb in a cgroup: peak ${result.peak.processes} tasks, ended after ${Math.round(result.durationMs)} ms`,
    );
    expect(result.limitHit).toBe('processes');
    expect(result.timedOut).toBe(false);
    expect(result.limits?.mechanism).toMatch(/^cgroup[12]$/);
    expect(result.durationMs).toBeLessThan(10_000);
    expect(result.peak.processes).toBeLessThanOrEqual(small.processes);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
    expect(ourCgroups()).toEqual([]);
  });

  it('ends a run that allocates without bound at its memory cap', async () => {
    const result = await runProcess({
      shellCommand: ALLOCATE,
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
    });
    console.info(
      `allocation in a cgroup: peak ${Math.round((result.peak.memoryBytes ?? 0) / MIB)} MiB, ended after ${Math.round(result.durationMs)} ms`,
    );
    expect(result.limitHit).toBe('memory');
    expect(result.timedOut).toBe(false);
    expect(result.peak.memoryBytes).toBeLessThanOrEqual(small.memoryBytes);
    expect(result.peak.memoryBytes).toBeGreaterThan(small.memoryBytes / 2);
    expect(ourCgroups()).toEqual([]);
  });

  it('runs honest work to its end within the caps, at the lower CPU weight', async () => {
    const cpuShares =
      "p=$(grep -E '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:' /proc/self/cgroup | cut -d: -f3); cat /sys/fs/cgroup/cpu$p/cpu.shares 2>/dev/null || cat /sys/fs/cgroup/unified$p/cpu.weight";
    const result = await runProcess({
      shellCommand: cpuShares,
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
    });
    expect(result).toMatchObject({ exitCode: 0, limitHit: null });
    if (result.limits?.mechanism === 'cgroup1') expect(result.tail.trim()).toBe('512');
    expect(ourCgroups()).toEqual([]);
  });

  it('kills what left the process group (setsid) with the run', async () => {
    const marker = `gaffer-limits-escapee-${process.pid}`;
    const result = await runProcess({
      shellCommand: `setsid sh -c 'sleep 30; echo ${marker}' & sleep 0.2; echo started`,
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
      stdioCloseWaitMs: 5000,
    });
    expect(result).toMatchObject({ exitCode: 0, limitHit: null, strayKilled: true });
    const alive = readdirSync('/proc').filter(
      (e) =>
        /^\d+$/.test(e) &&
        (() => {
          try {
            return (
              readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(marker) &&
              !/\) Z /.test(readFileSync(`/proc/${e}/stat`, 'utf8'))
            );
          } catch {
            return false;
          }
        })(),
    );
    expect(alive).toEqual([]);
    expect(ourCgroups()).toEqual([]);
  });
});

describe('limits by the watchdog (the fallback)', () => {
  it('ends a group that grows past its process cap', async () => {
    // bounded: 100 sleepers at most, each 30 s
    const result = await runProcess({
      shellCommand: 'for i in $(seq 100); do sleep 30 & done; wait',
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: { ...small, processes: 16 },
      forceLimitWatchdog: true,
    });
    expect(result.limitHit).toBe('processes');
    expect(result.limits?.mechanism).toBe('watchdog');
    expect(result.timedOut).toBe(false);
    expect(result.peak.processes).toBeGreaterThanOrEqual(16);
    expect(result.durationMs).toBeLessThan(10_000);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
  });

  it('ends a group whose summed RSS passes its memory cap', async () => {
    const result = await runProcess({
      shellCommand: ALLOCATE,
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
      forceLimitWatchdog: true,
    });
    expect(result.limitHit).toBe('memory');
    expect(result.timedOut).toBe(false);
    expect(result.peak.memoryBytes).toBeGreaterThan(small.memoryBytes);
    expect(liveGroupMembers(result.pgid!)).toEqual([]);
  });

  it("gives the run the CPU weight as a nice value above gaffer's own", async () => {
    const ownNice = Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ')[16]);
    // field 19 of /proc/<pid>/stat is the nice value
    const result = await runProcess({
      shellCommand: "cut -d' ' -f19 /proc/self/stat",
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
      forceLimitWatchdog: true,
    });
    expect(Number(result.tail.trim())).toBe(Math.min(19, ownNice + weightToNice(small.cpuWeight)));
  });

  it('leaves a run within its caps alone', async () => {
    const result = await runProcess({
      shellCommand: 'sleep 0.5; echo ok',
      cwd: makeTempDir(),
      env,
      timeoutMs: 30_000,
      limits: small,
      forceLimitWatchdog: true,
    });
    expect(result).toMatchObject({ exitCode: 0, limitHit: null, tail: 'ok\n' });
    expect(result.peak.processes).toBeGreaterThanOrEqual(1);
  });
});

describe('without limits', () => {
  it('runs as before: no limits applied, none hit', async () => {
    const result = await runProcess({ shellCommand: 'echo ok', cwd: makeTempDir(), env, timeoutMs: 30_000 });
    expect(result).toMatchObject({ exitCode: 0, limitHit: null, limits: null });
  });
});
