import type { NodeRecord } from './node-record.js';

/** A live node as the operator sees it: its record and how long ago it last renewed it. */
export interface NodeView extends NodeRecord {
  /** Seconds since its last heartbeat, by the coordinator's clock (a node's clock ahead reads 0). */
  last_heartbeat_s: number;
}

/** A runner's queue as the operator sees it. */
export interface QueueView {
  runner: string;
  /** Entries waiting for a node (waiting, prioritized, delayed). */
  waiting: number;
  /** Entries a node holds now. */
  running: number;
  /** Age of the oldest waiting entry, s; null when none waits. */
  oldest_waiting_s: number | null;
  /** The live nodes that take this runner's attempts (those that can serve). */
  nodes: string[];
}

/** `GET /api/nodes` (`gaffer nodes`): the cluster's live nodes and runner queues, and what is wrong with it. */
export interface ClusterView {
  /** The Redis URL, without its password. */
  queue: string;
  /** The namespace (`--queue-prefix`). */
  prefix: string;
  redis: { ok: boolean; error: string | null };
  nodes: NodeView[];
  queues: QueueView[];
  /** Why the cluster is degraded, one line each (empty: healthy). */
  problems: string[];
}

/** Builds the view from what was read: each queue's nodes, each node's heartbeat age, and the problems. */
export function viewOf(read: {
  queue: string;
  prefix: string;
  redis: string | null;
  nodes: NodeRecord[];
  queues: { runner: string; waiting: number; running: number; oldest_waiting_ms: number | null }[];
  lost?: string | null;
  now?: number;
}): ClusterView {
  const now = read.now ?? Date.now();
  const problems: string[] = [];
  if (read.redis !== null) problems.push(read.redis);
  if (read.lost) problems.push(read.lost);
  // a node that cannot serve (its token refused, the coordinator out of reach) takes nothing: it serves no queue
  const serving = read.nodes.filter((n) => (n.cannot ?? null) === null);
  for (const n of read.nodes)
    if ((n.cannot ?? null) !== null) problems.push(`node ${n.name} takes nothing: ${n.cannot as string}`);
  const queues = read.queues.map((q) => {
    const nodes = serving.filter((n) => n.runners.includes(q.runner)).map((n) => n.name);
    const oldest = q.oldest_waiting_ms === null ? null : Math.max(0, Math.round((now - q.oldest_waiting_ms) / 1000));
    if (q.waiting > 0 && nodes.length === 0)
      problems.push(
        `${q.waiting} attempt${q.waiting === 1 ? '' : 's'} of runner ${q.runner} wait${q.waiting === 1 ? 's' : ''}${oldest !== null ? ` (the oldest ${oldest} s)` : ''} and no live node takes ${q.runner}: start one with gaffer node --runners ${q.runner}`,
      );
    return { runner: q.runner, waiting: q.waiting, running: q.running, oldest_waiting_s: oldest, nodes };
  });
  return {
    queue: read.queue,
    prefix: read.prefix,
    redis: { ok: read.redis === null, error: read.redis },
    nodes: read.nodes.map((n) => ({
      ...n,
      last_heartbeat_s: Math.max(0, Math.round((now - Date.parse(n.beat)) / 1000)),
    })),
    queues,
    problems,
  };
}
