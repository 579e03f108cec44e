import type { ClusterView } from '../../../engine/engine.js';
import type { CliContext } from '../cli-context.js';

/** `gaffer nodes`: the coordinator's live nodes and runner queues; exit 1 when the cluster is degraded (said why). */
export async function nodesCommand(cli: CliContext): Promise<number> {
  const view = await (await cli.api()).nodes();
  cli.out(cli.json ? JSON.stringify(view, null, 2) : renderNodes(view));
  return view.problems.length === 0 ? 0 : 1;
}

const age = (s: number | null): string => (s === null ? '—' : s < 120 ? `${s} s` : `${Math.round(s / 60)} min`);

/** The view as text: a line per node, a line per runner queue, then what is wrong. */
export function renderNodes(view: ClusterView): string {
  const lines = [
    `cluster on ${view.queue} (namespace ${view.prefix}): redis ${view.redis.ok ? 'answers' : 'DOES NOT ANSWER'}`,
  ];
  lines.push('', `nodes (${view.nodes.length})`);
  if (view.nodes.length === 0) lines.push('  none live');
  for (const n of view.nodes) {
    lines.push(
      `  ${n.name}  runners ${n.runners.join(',')}  slots ${n.slots}  running ${n.running.length}  last heartbeat ${age(n.last_heartbeat_s)} ago  (host ${n.host}, pid ${n.pid}, stall ${n.stall_s} s)`,
    );
    for (const r of n.running) lines.push(`    ${r.key} (${r.runner}) since ${r.since}`);
  }
  lines.push('', `queues (${view.queues.length})`);
  if (view.queues.length === 0) lines.push('  none yet');
  for (const q of view.queues)
    lines.push(
      `  ${q.runner}  waiting ${q.waiting}  oldest ${age(q.oldest_waiting_s)}  running ${q.running}  nodes ${q.nodes.length > 0 ? q.nodes.join(',') : 'NONE'}`,
    );
  if (view.problems.length > 0) {
    lines.push('', 'degraded:');
    for (const p of view.problems) lines.push(`  - ${p}`);
  }
  return lines.join('\n');
}
