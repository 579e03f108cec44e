import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, type BriefJob, type Stats } from '../api.js';
import { StatusPill } from '../components/status.js';
import { BreakerState, ProviderSpend } from '../components/stats-budgets.js';
import { AcceptanceChart } from '../components/stats-chart.js';
import { duration, when } from '../format.js';
import { useJobChanges } from '../live.js';
import { href } from '../router.js';

/** Finished jobs shown under "Recent outcomes". */
const RECENT_SHOWN = 10;
/** A burst of status events (a job's tasks ending together) is one refresh. */
const REFRESH_DEBOUNCE_MS = 250;

const RECENT_LABELS: [keyof Stats['recent'], string][] = [
  ['jobs', 'jobs'],
  ['done', 'done'],
  ['partial', 'partial'],
  ['failed', 'failed'],
  ['cancelled', 'cancelled'],
  ['live', 'live now'],
];

/** The figures of the page, read again when a job changes status. */
function useStats(): { stats: Stats | null; recent: BriefJob[]; error: string | null } {
  const [stats, setStats] = useState<Stats | null>(null);
  const [recent, setRecent] = useState<BriefJob[]>([]);
  const [error, setError] = useState<string | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const load = useCallback(() => {
    Promise.all([api.stats(), api.jobs({ limit: 50 })]).then(
      ([s, l]) => {
        setStats(s);
        setRecent(l.jobs.filter((j) => j.finished !== null).slice(0, RECENT_SHOWN));
        setError(null);
      },
      (err: unknown) => setError(err instanceof Error ? err.message : String(err)),
    );
  }, []);
  useEffect(() => {
    load();
    return () => {
      if (timer.current) clearTimeout(timer.current);
    };
  }, [load]);
  // the all-jobs stream says when a job starts or ends; the figures are read again then (no polling)
  useJobChanges(() => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(load, REFRESH_DEBOUNCE_MS);
  });
  return { stats, recent, error };
}

function AcceptanceTable({ stats }: { stats: Stats }) {
  const rows = Object.entries(stats.acceptance);
  return (
    <div class="table-wrap" role="region" aria-label="Acceptance table" tabIndex={0}>
      <table id="acceptance-table" class="stats-acceptance" aria-labelledby="stats-acceptance">
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Model</th>
            <th scope="col" class="stats-num">
              Rate
            </th>
            <th scope="col" class="stats-num">
              Accepted
            </th>
            <th scope="col" class="stats-num">
              Total
            </th>
            <th scope="col">Runners</th>
            <th scope="col">Providers</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([key, e]) => (
            <tr key={key}>
              <th scope="row">{e.type}</th>
              <td class="mono">{e.model ?? <span class="muted">{`(${e.runners.join(', ')} default)`}</span>}</td>
              <td class="stats-num">{(e.rate * 100).toFixed(1)}%</td>
              <td class="stats-num">{e.accepted}</td>
              <td class="stats-num">{e.total}</td>
              <td>{e.runners.join(', ')}</td>
              <td>{e.providers.length ? e.providers.join(', ') : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * Stats (spec 08): the acceptance rate per (type, model) as a table and a chart, recent outcomes,
 * spend per provider against each budget and window, suspensions and the breaker. Read again on
 * the all-jobs stream's events.
 */
export function StatsPage() {
  const { stats, recent, error } = useStats();
  return (
    <>
      <h1>Stats</h1>
      {error && (
        <p class="error-box" role="alert">
          The stats could not be read: {error}
        </p>
      )}
      {!stats && !error && <p class="muted">Loading…</p>}
      {stats && (
        <>
          <section aria-labelledby="stats-recent">
            <h2 id="stats-recent">Recent outcomes</h2>
            <dl class="stats-tiles">
              {RECENT_LABELS.map(([k, label]) => (
                <div key={k} class="stats-tile">
                  <dt>{label}</dt>
                  <dd>{stats.recent[k]}</dd>
                </div>
              ))}
            </dl>
            {recent.length > 0 ? (
              <ul class="stats-outcomes">
                {recent.map((j) => (
                  <li key={j.id}>
                    <StatusPill value={j.status} /> <a href={href({ page: 'job', id: j.id })}>{j.title}</a>
                    <span class="muted">
                      {' '}
                      — {j.verdict ?? j.error ?? 'no verdict'} · {duration(j.duration_s)} · {when(j.finished)}
                    </span>
                  </li>
                ))}
              </ul>
            ) : (
              <p class="muted">No job has finished yet.</p>
            )}
          </section>

          <section aria-labelledby="stats-acceptance">
            <h2 id="stats-acceptance">Acceptance rate per (type, model)</h2>
            {Object.keys(stats.acceptance).length === 0 ? (
              <p class="muted">No outcome logged yet: the rates appear once workers have run.</p>
            ) : (
              <div class="stats-acceptance-grid">
                <AcceptanceTable stats={stats} />
                <AcceptanceChart acceptance={stats.acceptance} />
              </div>
            )}
            <p class="stats-note">
              Accepted: outcomes whose gates passed. {stats.outcomes_total} outcome
              {stats.outcomes_total === 1 ? '' : 's'} logged; not counted: {stats.excluded.not_dispatched} not
              dispatched, {stats.excluded.abstained} abstained. {stats.note}.
            </p>
          </section>

          <section aria-labelledby="stats-spend">
            <h2 id="stats-spend">Spend per provider</h2>
            <ProviderSpend providers={stats.providers} />
          </section>

          <section aria-labelledby="stats-breaker">
            <h2 id="stats-breaker">Breaker</h2>
            <BreakerState breaker={stats.breaker} />
          </section>
        </>
      )}
    </>
  );
}
