import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiError, type ClusterView } from '../api.js';
import { StatusPill } from '../components/status.js';

/** Refreshed this often while the page is open, ms: heartbeats and queue depths move by the second. */
const REFRESH_MS = 3_000;

const age = (s: number | null): string => (s === null ? '—' : s < 120 ? `${s} s` : `${Math.round(s / 60)} min`);

/**
 * Nodes: a coordinator's cluster (`GET /api/nodes`, as `gaffer nodes`) — each live node with its
 * runners, slots, running attempts and last heartbeat; each runner queue with its depth, its oldest
 * waiting entry's age and the nodes that take it; and why the cluster is degraded, when it is.
 */
export function NodesPage() {
  const [view, setView] = useState<ClusterView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [single, setSingle] = useState<string | null>(null);
  const load = useCallback(() => {
    api.nodes().then(
      (v) => {
        setView(v);
        setError(null);
      },
      (err: unknown) => {
        if (err instanceof ApiError && err.code === 'not_supported') setSingle(err.message);
        else setError(err instanceof Error ? err.message : String(err));
      },
    );
  }, []);
  useEffect(() => {
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => clearInterval(timer);
  }, [load]);
  useEffect(() => {
    document.title = 'Nodes · gaffer';
  }, []);

  return (
    <>
      <div class="row runners-head">
        <h1>Nodes</h1>
        <button type="button" onClick={load}>
          Refresh
        </button>
      </div>
      {single !== null && <p>This server runs every attempt itself: it has no nodes. ({single})</p>}
      {error && (
        <p class="error-box" role="alert">
          The cluster could not be read: {error}
        </p>
      )}
      {view && (
        <>
          <p>
            Cluster on <span class="mono">{view.queue}</span>, namespace <span class="mono">{view.prefix}</span>:{' '}
            {view.problems.length === 0 ? (
              <StatusPill value="pass" label="healthy" />
            ) : (
              <StatusPill value="fail" label="degraded" />
            )}
          </p>
          {view.problems.length > 0 && (
            <ul class="error-box" aria-label="Why the cluster is degraded">
              {view.problems.map((p) => (
                <li key={p}>{p}</li>
              ))}
            </ul>
          )}
          <section aria-labelledby="nodes-h">
            <h2 id="nodes-h">Live nodes</h2>
            {view.nodes.length === 0 ? (
              <p>No live node.</p>
            ) : (
              <table class="runners-table">
                <thead>
                  <tr>
                    <th scope="col">Node</th>
                    <th scope="col">Runners</th>
                    <th scope="col">Slots</th>
                    <th scope="col">Running</th>
                    <th scope="col">Last heartbeat</th>
                  </tr>
                </thead>
                <tbody>
                  {view.nodes.map((n) => (
                    <tr key={n.name} data-node={n.name}>
                      <th scope="row" class="mono" title={`host ${n.host}, pid ${n.pid}, stall window ${n.stall_s} s`}>
                        {n.name}
                      </th>
                      <td data-label="Runners">{n.runners.join(', ')}</td>
                      <td data-label="Slots">{n.slots}</td>
                      <td data-label="Running">
                        {n.running.length}
                        {n.running.map((r) => (
                          <div key={r.key} class="mono muted">
                            {r.key}
                          </div>
                        ))}
                      </td>
                      <td data-label="Last heartbeat">{age(n.last_heartbeat_s)} ago</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section aria-labelledby="queues-h">
            <h2 id="queues-h">Runner queues</h2>
            {view.queues.length === 0 ? (
              <p>No runner queue yet.</p>
            ) : (
              <table class="runners-table">
                <thead>
                  <tr>
                    <th scope="col">Runner</th>
                    <th scope="col">Waiting</th>
                    <th scope="col">Oldest waiting</th>
                    <th scope="col">Running</th>
                    <th scope="col">Nodes</th>
                  </tr>
                </thead>
                <tbody>
                  {view.queues.map((q) => (
                    <tr key={q.runner} data-queue={q.runner}>
                      <th scope="row" class="mono">
                        {q.runner}
                      </th>
                      <td data-label="Waiting">{q.waiting}</td>
                      <td data-label="Oldest waiting">{age(q.oldest_waiting_s)}</td>
                      <td data-label="Running">{q.running}</td>
                      <td data-label="Nodes">{q.nodes.length > 0 ? q.nodes.join(', ') : 'none'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
    </>
  );
}
