import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readOwnStartTime, readProcessStartTime } from '../../src/platform/process/process-start-time.js';
import {
  isProcessGroupAlive,
  killProcessGroupIfAlive,
  terminateProcessGroup,
} from '../../src/platform/process/terminate.js';
import { fixture, liveGroupMembers, waitFor } from './helpers.js';

/** Starts a program in its own process group, as a worker from an earlier gaffer would be. */
function startDetached(argv: string[]): number {
  const [file, ...args] = argv;
  const child = spawn(file!, args, { detached: true, stdio: 'ignore' });
  child.unref();
  return child.pid!;
}

describe('process start time', () => {
  it('reads a start time from /proc that is close to now for a new process, and its own', () => {
    const pid = startDetached(['sleep', '5']);
    const started = readProcessStartTime(pid);
    expect(started).not.toBeNull();
    expect(Math.abs(started! - Date.now() / 1000)).toBeLessThan(5);
    expect(readOwnStartTime()).toBeLessThanOrEqual(started! + 1);
    process.kill(-pid, 'SIGKILL');
  });

  it('reads null for a pid that does not exist', () => {
    expect(readProcessStartTime(2 ** 22 + 1)).toBeNull();
  });
});

describe('terminateProcessGroup', () => {
  it('escalates to SIGKILL for a group that ignores SIGTERM and waits until it is gone', async () => {
    const pgid = startDetached([fixture('ignore-term-and-fork.sh')]);
    await waitFor(() => liveGroupMembers(pgid).length >= 3);
    const result = await terminateProcessGroup(pgid, { graceMs: 200 });
    expect(result).toEqual({ isGone: true, escalated: true });
    expect(liveGroupMembers(pgid)).toEqual([]);
    expect(isProcessGroupAlive(pgid)).toBe(false);
  });

  it('refuses to signal every process or its own group', async () => {
    await expect(terminateProcessGroup(1)).rejects.toThrow(/integer > 1/);
    await expect(terminateProcessGroup(0)).rejects.toThrow(/integer > 1/);
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const ownGroup = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    await expect(terminateProcessGroup(ownGroup)).rejects.toThrow(/own process group/);
  });
});

describe('killProcessGroupIfAlive', () => {
  it('refuses a pid whose start time does not match the recorded one', async () => {
    const pgid = startDetached(['sleep', '30']);
    const startedAt = readProcessStartTime(pgid)!;
    const result = await killProcessGroupIfAlive(pgid, startedAt - 3600, { graceMs: 200 });
    expect(result.outcome).toBe('pid_recycled');
    expect(result.isGone).toBe(false);
    expect(liveGroupMembers(pgid)).toEqual([pgid]);
    process.kill(-pgid, 'SIGKILL');
  });

  it('kills the recorded group when the start time matches', async () => {
    const pgid = startDetached([fixture('ignore-term-and-fork.sh')]);
    await waitFor(() => liveGroupMembers(pgid).length >= 3);
    const result = await killProcessGroupIfAlive(pgid, readProcessStartTime(pgid)!, { graceMs: 200 });
    expect(result).toMatchObject({ outcome: 'killed', isGone: true });
    expect(liveGroupMembers(pgid)).toEqual([]);
  });

  it('kills survivors of a group whose leader is gone', async () => {
    const pgid = startDetached([fixture('leave-orphans.sh')]);
    const startedAt = readProcessStartTime(pgid) ?? Date.now() / 1000;
    await waitFor(() => !liveGroupMembers(pgid).includes(pgid) && liveGroupMembers(pgid).length === 2);
    const result = await killProcessGroupIfAlive(pgid, startedAt, { graceMs: 200 });
    expect(result).toMatchObject({ outcome: 'killed', isGone: true });
    expect(liveGroupMembers(pgid)).toEqual([]);
  });

  it('refuses a leaderless group whose members started before the recorded leader', async () => {
    const pgid = startDetached([fixture('leave-orphans.sh')]);
    await waitFor(() => !liveGroupMembers(pgid).includes(pgid) && liveGroupMembers(pgid).length === 2);
    const result = await killProcessGroupIfAlive(pgid, Date.now() / 1000 + 3600);
    expect(result.outcome).toBe('pid_recycled');
    expect(liveGroupMembers(pgid)).toHaveLength(2);
    process.kill(-pgid, 'SIGKILL');
  });

  it('says not_running for a group with no live process', async () => {
    const pgid = startDetached(['true']);
    await waitFor(() => liveGroupMembers(pgid).length === 0);
    const result = await killProcessGroupIfAlive(pgid, readProcessStartTime(pgid) ?? Date.now() / 1000);
    expect(result.outcome).toBe('not_running');
  });
});
