import type { Stats } from '../api.js';
import { duration, when } from '../format.js';
import { href } from '../router.js';
import { StatusPill } from './status.js';

type Provider = Stats['providers'][number];
type Budget = Provider['budgets'][number];

/** A budget's window as a person reads it; `5h-rolling` is a subscription's usage window. */
const WINDOWS: Record<Budget['window'], string> = {
  day: 'UTC day',
  week: 'ISO week (UTC)',
  '5h-rolling': 'last 5 hours (subscription window)',
};

// the pill colours of a budget's state: spent refuses, ahead of pace warns
const STATE_PILL: Record<Budget['state'], string> = { ok: 'pass', ahead: 'partial', spent: 'fail' };

const figure = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(n < 1 ? 3 : 2));

function BudgetRow({ b }: { b: Budget }) {
  const share = b.limit > 0 ? Math.min(1, b.spent / b.limit) : 1;
  return (
    <tr>
      <th scope="row">{b.name}</th>
      <td>{WINDOWS[b.window] ?? b.window}</td>
      <td>
        <div class="stats-spend">
          <meter
            min={0}
            max={b.limit}
            low={b.limit * 0.7}
            high={b.limit * 0.9}
            optimum={0}
            value={Math.min(b.spent, b.limit)}
            aria-label={`${b.name}: ${figure(b.spent)} of ${figure(b.limit)} ${b.unit} spent`}
          />
          <span>
            {figure(b.spent)} / {figure(b.limit)} {b.unit} ({Math.round(share * 100)}%)
          </span>
        </div>
        {b.unknown > 0 && (
          <span class="stats-unknown">
            + {b.unknown} attempt{b.unknown === 1 ? '' : 's'} of unknown spend
          </span>
        )}
      </td>
      <td>
        <StatusPill value={STATE_PILL[b.state]} label={b.state === 'ahead' ? 'ahead of pace' : b.state} />
      </td>
      <td>{b.pause_until === null ? '—' : when(b.pause_until)}</td>
    </tr>
  );
}

/** Spend per provider against each budget and its window, and the provider's suspension and waiting jobs (issue 15). */
export function ProviderSpend({ providers }: { providers: Stats['providers'] }) {
  if (providers.length === 0) {
    return (
      <p class="muted">
        No provider has a budget or a suspension. Budgets are set in the config (<code>budgets</code>: provider, window{' '}
        <code>day</code>, <code>week</code> or <code>5h-rolling</code>, unit and limit).
      </p>
    );
  }
  return (
    <div class="stats-providers">
      {providers.map((p) => (
        <section key={p.provider} class="panel stats-provider" aria-labelledby={`provider-${p.provider}`}>
          <h3 id={`provider-${p.provider}`}>
            {p.provider}{' '}
            {p.suspended_until !== null ? (
              <StatusPill value="fail" label="suspended" />
            ) : (
              <StatusPill value="pass" label="not suspended" />
            )}
          </h3>
          {p.suspended_until !== null && (
            <p>
              Suspended until {when(p.suspended_until)}
              {p.suspended_why ? `: ${p.suspended_why}` : ''}.
            </p>
          )}
          {p.budgets.length > 0 ? (
            <div class="table-wrap" role="region" aria-label={`Budgets of ${p.provider}`} tabIndex={0}>
              <table>
                <caption class="stats-caption">Budgets of {p.provider}</caption>
                <thead>
                  <tr>
                    <th scope="col">Budget</th>
                    <th scope="col">Window</th>
                    <th scope="col">Spent / limit</th>
                    <th scope="col">State</th>
                    <th scope="col">Pauses until</th>
                  </tr>
                </thead>
                <tbody>
                  {p.budgets.map((b) => (
                    <BudgetRow key={b.name} b={b} />
                  ))}
                </tbody>
              </table>
            </div>
          ) : (
            <p class="muted">No budget on this provider.</p>
          )}
          {p.waiting.length > 0 && (
            <p>
              Waiting on it:{' '}
              {p.waiting.map((id, i) => (
                <span key={id}>
                  {i > 0 && ', '}
                  <a href={href({ page: 'job', id })}>{id}</a>
                </span>
              ))}
            </p>
          )}
        </section>
      ))}
    </div>
  );
}

/** The breaker of unattended jobs (spec 07): open refuses new unattended jobs until it cools down. */
export function BreakerState({ breaker }: { breaker: Stats['breaker'] }) {
  return (
    <p>
      <StatusPill value={breaker.open ? 'fail' : 'pass'} label={breaker.open ? 'open' : 'closed'} /> {breaker.why}
      {breaker.open && ` — new unattended jobs are refused for ${duration(breaker.retry_after_s)}.`}
    </p>
  );
}
