import { StatusPill } from './status.js';
import type { FullJob, FullResult } from './job-types.js';

/** The proof (spec 03): its verdict and confidence, what it showed, and every doubt named with what it cost. */
export function JobProof({ result, live }: { result: FullResult | undefined; live: boolean }) {
  const proof = result?.proof ?? null;
  return (
    <section aria-labelledby="job-proof-h">
      <h2 id="job-proof-h">Proof</h2>
      {proof === null ? (
        <p class="muted">{live ? 'Proved once the job settles.' : 'No proof was made.'}</p>
      ) : (
        <>
          <p class="row">
            <StatusPill value={proof.verdict} />
            <span>confidence {Math.round(proof.confidence * 100)}%</span>
          </p>
          {proof.shown.length > 0 && (
            <>
              <h3>Shown</h3>
              <ul>
                {proof.shown.map((s) => (
                  <li key={s}>{s}</li>
                ))}
              </ul>
            </>
          )}
          <h3>Doubts ({proof.uncertainty.length})</h3>
          {proof.uncertainty.length === 0 ? (
            <p>None.</p>
          ) : (
            <ul class="job-doubts">
              {proof.uncertainty.map((u) => (
                <li key={u.code}>
                  <code>{u.code}</code> {u.detail} <span class="muted">(−{Math.round(u.penalty * 100)}%)</span>
                </li>
              ))}
            </ul>
          )}
          {result?.claimed_only && result.claimed_only.length > 0 && (
            <p>Claimed by a worker but not seen changed on disk: {result.claimed_only.join(', ')}</p>
          )}
        </>
      )}
    </section>
  );
}

/** The job's criteria and how each was checked; the tasks' own gates and cost-ladder climbs (spec 05) when it had any. */
export function JobCriteria({ job }: { job: FullJob }) {
  const check = job.result?.criteria_check;
  const gates = job.result?.gates ?? [];
  const climbs = job.result?.escalation ?? [];
  if (!job.criteria?.length && !check && gates.length === 0 && climbs.length === 0) return null;
  return (
    <section aria-labelledby="job-criteria-h">
      <h2 id="job-criteria-h">Criteria check</h2>
      {check ? (
        <>
          <p>
            <StatusPill
              value={check.complete ? 'pass' : 'partial'}
              label={check.complete ? 'complete' : 'incomplete'}
            />{' '}
            {check.met.length} met, {check.unmet.length} unmet, {check.unchecked.length} unchecked
          </p>
          <CriteriaList title="Unmet" items={check.unmet} />
          <CriteriaList title="Unchecked" items={check.unchecked} />
          <CriteriaList title="Met" items={check.met} />
          {check.details && check.details.length > 0 && (
            <ul>
              {check.details.map((d) => (
                <li key={d.criterion}>
                  {d.criterion}: <code>{d.check}</code> — {d.why}
                </li>
              ))}
            </ul>
          )}
        </>
      ) : job.criteria?.length ? (
        <>
          <p class="muted">Not checked yet.</p>
          <CriteriaList title="Criteria" items={job.criteria} />
        </>
      ) : null}
      {gates.map((g) => (
        <div key={g.worker}>
          <h3>
            Gates of {g.task} ({g.worker}) <StatusPill value={g.verdict} />
          </h3>
          <ul>
            {g.results.map((r) => (
              <li key={r.gate}>
                <StatusPill value={r.result} /> <code>{r.gate}</code> {r.detail}
                {r.judged ? ` — judged by ${r.judged.entry}: ${r.judged.reading}, ${r.judged.why}` : ''}
              </li>
            ))}
          </ul>
        </div>
      ))}
      {climbs.length > 0 && (
        <>
          <h3>Escalations</h3>
          <ul>
            {climbs.map((c, i) => (
              <li key={i}>
                {c.task}: {c.from} → {c.to ?? 'back to you'} — {c.why}
                {c.denied ? ' (denied)' : ''}
                {c.returned ? ' (returned)' : ''}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function CriteriaList({ title, items }: { title: string; items: string[] }) {
  if (items.length === 0) return null;
  return (
    <>
      <h3>{title}</h3>
      <ul>
        {items.map((c) => (
          <li key={c}>{c}</li>
        ))}
      </ul>
    </>
  );
}
