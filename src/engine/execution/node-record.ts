import type { Redis } from 'ioredis';
import { safeJson } from './wire.js';

/** The Redis key of a node's record (its announcement, renewed while it lives). */
export const nodeKey = (prefix: string, name: string): string => `${prefix}:node:${name}`;

/** What a live node says of itself on the Redis: read by its coordinator for `gaffer nodes` and `/api/health`. */
export interface NodeRecord {
  /** Its name (`--name`, default host and pid). */
  name: string;
  host: string;
  pid: number;
  /** The runners it takes attempts for. */
  runners: string[];
  /** Attempts of each runner it runs at once. */
  slots: number;
  /** Its `--stall-s`: how long it may go silent before its work goes to another node. */
  stall_s: number;
  /** The attempts it runs now: their key (`<job>.<task>.<n>`), runner and when it took them (ISO). */
  running: { key: string; runner: string; since: string }[];
  /** When it started (ISO). */
  started: string;
  /** When it last renewed this record (ISO, its own clock). */
  beat: string;
  /** Why it takes nothing now (its token refused, the coordinator out of reach); null while it serves. */
  cannot: string | null;
}

/** How often a node renews its record, ms: a third of its stall window, at most every 5 s. */
export function beatEveryMs(stallMs: number): number {
  return Math.min(5_000, Math.max(500, Math.round(stallMs / 3)));
}

/** Writes a node's record, expiring after its stall window: a node that stops renewing it drops out of the list. */
export async function writeNodeRecord(redis: Redis, prefix: string, record: NodeRecord): Promise<void> {
  await redis.set(nodeKey(prefix, record.name), JSON.stringify(record), 'PX', record.stall_s * 1000);
}

/** Removes a node's record (it stopped). */
export async function dropNodeRecord(redis: Redis, prefix: string, name: string): Promise<void> {
  await redis.del(nodeKey(prefix, name));
}

/** Every live node's record in a namespace, by name. */
export async function readNodeRecords(redis: Redis, prefix: string): Promise<NodeRecord[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', nodeKey(prefix, '*'), 'COUNT', 200);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  if (keys.length === 0) return [];
  const values = await redis.mget(...keys);
  const records: NodeRecord[] = [];
  for (const v of values) {
    const r = v === null ? null : (safeJson(v) as NodeRecord | null);
    if (r && typeof r.name === 'string' && Array.isArray(r.runners) && Array.isArray(r.running)) records.push(r);
  }
  return records.sort((a, b) => a.name.localeCompare(b.name));
}
