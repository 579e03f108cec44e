import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { duration, usd } from '../format.js';
import { Fact, Tail } from './job-fact.js';
import { StatusPill } from './status.js';
import { Steer } from './steer.js';
import { taskOfWorker, type FullJob, type FullWorker, type ProgressEntry } from './job-types.js';

/** Worker statuses whose runner has not ended: the card shows its live progress and the steering box. */
const RUNNING = new Set<string>(['queued', 'running']);

/** One card per worker and attempt, in the order they were dispatched. */
export function JobWorkers({ job, outputs }: { job: FullJob; outputs: Record<string, number> }) {
  const workers = job.result?.workers ?? [];
  return (
    <section aria-labelledby="job-workers-h">
      <h2 id="job-workers-h">Workers ({workers.length})</h2>
      {workers.length === 0 ? (
        <p class="muted">No worker has started yet.</p>
      ) : (
        <ul class="cards job-cards">
          {workers.map((w) => (
            <WorkerCard
              key={w.name}
              job={job}
              worker={w}
              progress={job.progress?.[w.name]}
              outputs={outputs[w.name] ?? 0}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

function WorkerCard({
  job,
  worker: w,
  progress,
  outputs,
}: {
  job: FullJob;
  worker: FullWorker;
  progress: ProgressEntry | undefined;
  outputs: number;
}) {
  const task = taskOfWorker(job, w.name);
  const live = RUNNING.has(w.status);
  const headingId = `job-worker-${w.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return (
    <li class="panel job-card" data-worker={w.name}>
      <h3 id={headingId} class="row">
        <span class="mono">{w.name}</span>
        <StatusPill value={w.status} />
        {w.outcome && w.outcome !== 'success' && (
          <StatusPill value={w.outcome === 'cancelled' ? 'cancelled' : 'error'} label={w.outcome.replace(/_/g, ' ')} />
        )}
      </h3>
      <dl class="job-facts job-card-facts">
        <Fact term="Role">
          {w.role}, attempt {w.attempt}
          {task && task.name !== w.name ? ` of ${task.name}` : ''}
        </Fact>
        <Fact term="Runner">
          {w.runner}
          {w.model ? ` · ${w.model}` : ''}
        </Fact>
        {(w.entry || w.provider) && <Fact term="Route">{[w.entry, w.provider].filter(Boolean).join(' · ')}</Fact>}
        {task?.routed && <Fact term="Why there">{task.routed}</Fact>}
        {w.rerouted && <Fact term="Rerouted">{w.rerouted}</Fact>}
        {w.node && <Fact term="Node">{w.node}</Fact>}
        <Fact term="Rounds">{String(w.rounds)}</Fact>
        <Fact term="Tool calls">
          {w.tool_calls}
          {w.failed_calls > 0 ? ` (${w.failed_calls} failed)` : ''}
        </Fact>
        <Fact term="Tokens">
          {w.input_tokens} in · {w.output_tokens} out
        </Fact>
        <Fact term="Cost">{w.spend ?? (w.cost_usd !== null ? usd(w.cost_usd) : live ? 'not ended' : 'unknown')}</Fact>
        <Fact term="Duration">{duration(live ? progress?.elapsed_s : w.duration_s)}</Fact>
        <Fact term="Sandboxed">
          {w.sandboxed ? 'yes' : 'no'}
          {w.network ? ` · network ${w.network}` : ''}
        </Fact>
        {w.write_audit && w.write_audit !== 'ok' && <Fact term="Write audit">{w.write_audit}</Fact>}
        {w.observed && <Fact term="On disk">{w.observed}</Fact>}
        {w.files_changed.length > 0 && <Fact term="Says it changed">{w.files_changed.join(', ')}</Fact>}
        {w.stop_reason && <Fact term="Stopped">{w.stop_reason}</Fact>}
        {w.session && (
          <Fact term="Session">
            <span class="mono">{w.session}</span>
          </Fact>
        )}
      </dl>
      {live && progress && <Progress progress={progress} />}
      {w.state && (
        <p class="job-state">
          <StatusPill value="partial" label={w.state.replace(/_/g, ' ')} /> {w.why}
        </p>
      )}
      {w.error && <p class="error-box">{w.error}</p>}
      {w.refusals && w.refusals.length > 0 && (
        <div>
          <h4>Refused</h4>
          <ul>
            {w.refusals.map((r) => (
              <li key={r.tool + r.why}>
                <span class="mono">{r.tool}</span> ×{r.count}: {r.why}
              </li>
            ))}
          </ul>
        </div>
      )}
      {w.summary && (
        <figure class="job-last-words">
          <figcaption>Last words</figcaption>
          <blockquote>{w.summary}</blockquote>
        </figure>
      )}
      <LogTail job={job.id} worker={w.name} outputs={outputs} />
      {live && task && <Steer job={job} task={task.name} />}
    </li>
  );
}

/** A live worker's last event, round, tool, and a detected state with the literal in its output that proves it. */
function Progress({ progress: p }: { progress: ProgressEntry }) {
  return (
    <div class="job-progress">
      <p>
        Now: {p.last_event}
        {p.round !== null ? ` · round ${p.round}` : ''}
        {p.last_tool ? ` · last tool ${p.last_tool}` : ''}
      </p>
      {p.state && (
        <p class="job-state">
          <StatusPill value="partial" label={p.state.replace(/_/g, ' ')} /> {p.why}
          {p.matched && (
            <>
              {' '}
              — seen: <code>{p.matched}</code>
            </>
          )}
        </p>
      )}
    </div>
  );
}

/** The worker's log tail, read when asked for, and read again while shown as its output grows (its `output` events). */
function LogTail({ job, worker, outputs }: { job: string; worker: string; outputs: number }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = `job-log-${worker.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  useEffect(() => {
    if (!open) return;
    let gone = false;
    api.log(job, worker, 8000).then(
      (t) => {
        if (!gone) setText(t);
      },
      (e: unknown) => {
        if (!gone) setError(e instanceof Error ? e.message : String(e));
      },
    );
    return () => {
      gone = true;
    };
  }, [open, job, worker, outputs]);
  return (
    <div class="job-log">
      <button type="button" class="quiet" aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
        {open ? 'Hide log' : 'Show log'}
      </button>
      {open && (
        <div id={id}>
          {error ? (
            <p class="error-box">{error}</p>
          ) : text === null ? (
            <p class="muted">Reading…</p>
          ) : (
            <Tail label={`Log of ${worker}`} text={text || '(no output)'} />
          )}
        </div>
      )}
    </div>
  );
}
