import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, type RosterAnswer } from '../api.js';
import { StatusPill } from '../components/status.js';

type Ladder = RosterAnswer['ladders'][number];
type Figures = RosterAnswer['learning']['figures'][number];

/** The roster in effect: where it was read, and a row an entry with what it takes and what stands in for it. */
function Entries({ roster }: { roster: RosterAnswer['roster'] }) {
  if (roster.error !== undefined) {
    return (
      <p class="error-box" role="alert">
        The roster {roster.note}: {roster.error}
      </p>
    );
  }
  if (roster.source === null) return <p>No roster: {roster.note}.</p>;
  return (
    <>
      <p>
        {roster.entries.length} entr{roster.entries.length === 1 ? 'y' : 'ies'} from{' '}
        <span class="mono">{roster.source}</span> — {roster.note}.
      </p>
      <div class="table-wrap" role="region" aria-label="Roster entries" tabIndex={0}>
        <table class="roster-table">
          <thead>
            <tr>
              <th scope="col">Entry</th>
              <th scope="col">Runner</th>
              <th scope="col">Model</th>
              <th scope="col">Billing</th>
              <th scope="col">Cost</th>
              <th scope="col">Provider</th>
              <th scope="col">Takes</th>
              <th scope="col">Notes</th>
            </tr>
          </thead>
          <tbody>
            {roster.entries.map((e) => (
              <tr key={e.entry} data-entry={e.entry}>
                <th scope="row" class="mono">
                  {e.entry}
                </th>
                <td data-label="Runner">
                  <span class="mono">{e.runner}</span>
                </td>
                <td data-label="Model">{e.model ?? <span class="muted">the runner's default</span>}</td>
                <td data-label="Billing">{e.billing}</td>
                <td data-label="Cost">{e.cost}</td>
                <td data-label="Provider">{e.provider}</td>
                <td data-label="Takes">{e.tasks.join(', ')}</td>
                <td data-label="Notes">
                  {[e.fallback !== null ? `fallback: ${e.fallback}` : '', e.approve ? 'asks before it runs' : '']
                    .filter(Boolean)
                    .join('; ') || <span class="muted">—</span>}
                  {e.warning && <div class="roster-warn">{e.warning}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/**
 * One task type's ladder, cheapest first: where a task of the type starts now and why, and — when
 * learning chose the start — the rungs below it it passed over.
 */
function LadderItem({
  ladder,
  learning,
  figures,
}: {
  ladder: Ladder;
  learning: boolean;
  figures: Figures | undefined;
}) {
  const start = ladder.starts_on === null ? -1 : ladder.rungs.indexOf(ladder.starts_on);
  // learned routing starts on the first rung it does not skip: the ones below it are the skipped
  const skipped = learning && start > 0 ? ladder.rungs.slice(0, start) : [];
  return (
    <li data-type={ladder.type}>
      <h3>{ladder.type}</h3>
      {ladder.rungs.length === 0 ? (
        <p class="muted">No entry whose runner this build runs.</p>
      ) : (
        <ol class="roster-rungs" aria-label={`Ladder of ${ladder.type}, cheapest first`}>
          {ladder.rungs.map((r) => {
            const f = figures?.entries.find((x) => x.entry === r);
            return (
              <li
                key={r}
                class={r === ladder.starts_on ? 'roster-start' : skipped.includes(r) ? 'roster-skipped' : undefined}
              >
                <span class="mono">{r}</span>
                {r === ladder.starts_on && <StatusPill value="pass" label="starts here" />}
                {skipped.includes(r) && <StatusPill value="partial" label="skipped by learning" />}
                {learning && f && <span class="muted roster-figures">{` ${f.accepted}/${f.total} accepted`}</span>}
              </li>
            );
          })}
        </ol>
      )}
      {ladder.why && <p class="roster-why">{ladder.why}</p>}
    </li>
  );
}

/**
 * Roster: what `gaffer doctor` says of routing (`GET /api/roster`) — the roster in effect and where it
 * was read, each task type's ladder and where a task starts on it, what learned routing skips and
 * why, and which entries ask before a task runs. Read when the page opens and on Refresh.
 */
export function RosterPage() {
  const [answer, setAnswer] = useState<RosterAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const load = useCallback(() => {
    setLoading(true);
    api.roster().then(
      (r) => {
        setAnswer(r);
        setError(null);
        setLoading(false);
      },
      (err: unknown) => {
        setError(err instanceof Error ? err.message : String(err));
        setLoading(false);
      },
    );
  }, []);
  useEffect(load, [load]);
  useEffect(() => {
    document.title = 'Roster · gaffer';
  }, []);

  const learning = answer?.learning;
  return (
    <>
      <div class="row runners-head">
        <h1>Roster</h1>
        <button type="button" onClick={load} disabled={loading}>
          {loading ? 'Reading…' : 'Refresh'}
        </button>
      </div>
      <p class="muted">
        Where a task that names no runner goes: the roster's entries, each task type's ladder from the cheapest rung up,
        and where a task starts on it now.
      </p>
      {error && (
        <p class="error-box" role="alert">
          The roster could not be read: {error}
        </p>
      )}
      {answer && (
        <>
          {answer.store_note !== null && <p class="muted">({answer.store_note})</p>}
          <section aria-labelledby="roster-entries-h">
            <h2 id="roster-entries-h">Entries</h2>
            <Entries roster={answer.roster} />
          </section>
          <section aria-labelledby="roster-ladders-h">
            <h2 id="roster-ladders-h">Ladders</h2>
            <p class="muted">A rung that fails climbs one up; a second failed rung returns the task.</p>
            {answer.ladders.length === 0 ? (
              <p>No ladders: without a roster a task runs on the runner it names, or the default one.</p>
            ) : (
              <ul class="roster-ladders">
                {answer.ladders.map((l) => (
                  <LadderItem
                    key={l.type}
                    ladder={l}
                    learning={learning?.on === true}
                    figures={learning?.figures.find((f) => f.type === l.type)}
                  />
                ))}
              </ul>
            )}
          </section>
          {learning && (
            <section aria-labelledby="roster-learning-h">
              <h2 id="roster-learning-h">Learned routing</h2>
              <p>
                {learning.on
                  ? `On: a rung is skipped once ${learning.min_samples} or more outcomes of the type show its acceptance below ${learning.min_acceptance}; the figures are beside each rung above.`
                  : "Off (routing.learn): a task starts on the roster's first entry taking its type."}
              </p>
            </section>
          )}
          <section aria-labelledby="roster-approval-h">
            <h2 id="roster-approval-h">Approval</h2>
            <p>
              Default <strong>{answer.approval.default}</strong>; an ask left unanswered for {answer.approval.timeout_s}{' '}
              s is a no.
            </p>
            {answer.approval.asks.length > 0 && (
              <p>Asks first: {answer.approval.asks.map((a) => `${a.entry} (${a.why})`).join(', ')}.</p>
            )}
            {answer.approval.no_ask.length > 0 && <p>Runs without asking: {answer.approval.no_ask.join(', ')}.</p>}
          </section>
        </>
      )}
    </>
  );
}
