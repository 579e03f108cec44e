import { StatusPill } from './status.js';
import type { FullJob } from './job-types.js';

/** The tasks as asked, the order they ran in when it was not the request's (phases, objectives), the spec lint's gaps and the job's asks. */
export function JobPlan({ job }: { job: FullJob }) {
  const order = job.task_order;
  // issue 33: "no verify command" is moot once the verification gaffer ran passed conclusively
  const verified = job.result?.verification?.ok === true;
  const lint = (job.spec_lint?.needs_detail ?? []).filter((f) => !(verified && f.code === 'no_verify'));
  return (
    <section aria-labelledby="job-tasks-h">
      <h2 id="job-tasks-h">Tasks ({job.tasks.length})</h2>
      <ul class="job-tasks">
        {job.tasks.map((t) => (
          <li key={t.name}>
            <p class="row">
              <strong class="mono">{t.name}</strong>
              <span class="muted">
                {t.type} · {t.runner}
                {t.model ? ` · ${t.model}` : ''}
                {t.files.length > 0 ? ` · ${t.files.join(', ')}` : ''}
              </span>
            </p>
            {t.routed && <p class="muted">Routed: {t.routed}</p>}
            <p class="job-instruction">{t.instruction}</p>
          </li>
        ))}
      </ul>
      {order && (
        <>
          <h3>Task order (by {order.by})</h3>
          <p>{order.why}</p>
          <p>
            Asked: <span class="mono">{order.from.join(' → ')}</span>
            <br />
            Ran: <span class="mono">{order.to.join(' → ')}</span>
          </p>
          {order.phases.length > 1 && (
            <ol>
              {order.phases.map((batch, i) => (
                <li key={i}>{batch.join(', ')}</li>
              ))}
            </ol>
          )}
          {order.impact && order.impact.length > 0 && (
            <ul>
              {order.impact.map((t) => (
                <li key={t.task}>
                  {t.task}: impact {t.score}
                  {t.objectives.length > 0 ? ` (${t.objectives.join(', ')})` : ''}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {job.objectives && (
        <>
          <h3>Objectives ({job.objectives.file})</h3>
          <ul>
            {job.objectives.named.map((o) => (
              <li key={o.id}>
                <span class="mono">{o.id}</span> {o.title} — impact {o.impact}
              </li>
            ))}
          </ul>
          {job.objectives.warnings.length > 0 && <p class="muted">{job.objectives.warnings.join('; ')}</p>}
        </>
      )}
      {lint.length > 0 && (
        <>
          <h3>Spec lint ({job.spec_lint?.mode})</h3>
          <ul>
            {lint.map((f) => (
              <li key={f.task + f.code}>
                {f.task}: <code>{f.code}</code> {f.message} — {f.fix}
              </li>
            ))}
          </ul>
        </>
      )}
      {job.asks && job.asks.length > 0 && (
        <>
          <h3>Asks</h3>
          <ul>
            {job.asks.map((a) => (
              <li key={a.task}>
                {a.task}: {a.issue} —{' '}
                {a.answer === null ? (
                  <StatusPill value="awaiting_approval" label="waiting for your yes" />
                ) : (
                  <StatusPill value={a.answer ? 'pass' : 'fail'} label={a.answer ? 'yes' : 'no'} />
                )}
                {a.answered_by ? ` by ${a.answered_by}` : ''}
                {a.note ? ` (“${a.note}”)` : ''}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
