import { readdirSync, readFileSync } from 'node:fs';

/** The fields of `/proc/<pid>/stat` gaffer needs (proc(5)). */
export interface ProcStat {
  /** Process id. */
  pid: number;
  /** Executable name, without the parentheses. */
  comm: string;
  /** One-letter state: `R`, `S`, `D`, `Z` (zombie), `T`, … */
  state: string;
  /** Parent process id. */
  ppid: number;
  /** Process group id. */
  pgrp: number;
  /** Session id. */
  session: number;
  /** Start time in clock ticks since boot (field 22). */
  startTicks: number;
  /** Resident set size in pages (field 24): the limits watchdog sums it over a group. */
  rssPages: number;
}

/** Parses one `/proc/<pid>/stat` line; null when it is not one. */
export function parseProcStat(text: string): ProcStat | null {
  // comm may itself contain spaces and parentheses: it ends at the LAST ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); field N sits at rest[N - 3].
  const state = rest[0];
  const ppid = Number(rest[1]);
  const pgrp = Number(rest[2]);
  const session = Number(rest[3]);
  const startTicks = Number(rest[19]);
  const rssPages = Number(rest[21] ?? 0);
  if (state === undefined || ![pid, ppid, pgrp, session, startTicks].every(Number.isFinite)) return null;
  return {
    pid,
    comm: text.slice(open + 1, close),
    state,
    ppid,
    pgrp,
    session,
    startTicks,
    rssPages: Number.isFinite(rssPages) ? rssPages : 0,
  };
}

/** Reads `/proc/<pid>/stat`; null when the process does not exist or /proc is not there. */
export function readProcStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** True when this machine has a Linux-style /proc to read. */
export function hasProcFs(): boolean {
  return readProcStat(process.pid) !== null;
}

/** Every process (zombies included) whose process group is `pgid`, read from /proc; [] without /proc. */
export function listProcessGroupMembers(pgid: number): ProcStat[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const members: ProcStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProcStat(Number(entry));
    if (stat !== null && stat.pgrp === pgid) members.push(stat);
  }
  return members;
}
