import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { duration, usd, when } from '../format.js';
import { href, navigate } from '../router.js';
import { describeTaskRun, type WorkerRun } from './job-concurrency.js';
import { Fact } from './job-fact.js';
import { StatusPill } from './status.js';
import { isLive, taskOfWorker, type FullJob } from './job-types.js';

/** The job's head: title, status, verdict, proof verdict and confidence, its times and spend, and what can be done to it. */
export function JobHeader({
  job,
  runs,
  onChanged,
}: {
  job: FullJob;
  runs: ReadonlyMap<string, WorkerRun>;
  onChanged: () => void;
}) {
  const proof = job.result?.proof ?? null;
  const totals = job.result?.totals;
  return (
    <header class="job-head">
      <p class="job-crumb">
        <a href={href({ page: 'jobs' })}>Jobs</a> / <span class="mono">{job.id}</span>
      </p>
      <h1>{job.title}</h1>
      <div class="row job-pills">
        <StatusPill value={job.status} />
        {proof && (
          <span>
            proof <StatusPill value={proof.verdict} />
            <span class="job-confidence"> confidence {Math.round(proof.confidence * 100)}%</span>
          </span>
        )}
        {isLive(job.status) && job.phase && <span class="muted">{job.phase}</span>}
      </div>
      {job.verdict && <p class="job-verdict">{job.verdict}</p>}
      {job.error && (
        <p class="error-box" role="alert">
          {job.error}
        </p>
      )}
      {job.follow_up && (
        <p>
          Follow-up of task <strong>{job.follow_up.task}</strong> of job{' '}
          <a href={href({ page: 'job', id: job.follow_up.job })} class="mono">
            {job.follow_up.job}
          </a>{' '}
          — {job.follow_up.resumed ? 'resumed the same worker session' : 'a new session with the comments and the diff'}
        </p>
      )}
      {job.warnings && job.warnings.length > 0 && (
        <ul class="job-warnings" aria-label="Warnings">
          {job.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
      <dl class="job-facts">
        <Fact term="Workspace">
          <span class="mono">{job.workspace}</span>
        </Fact>
        <Fact term="Created">{when(job.created)}</Fact>
        {job.started !== null && <Fact term="Started">{when(job.started)}</Fact>}
        {job.finished !== null && <Fact term="Finished">{when(job.finished)}</Fact>}
        <Fact term="Duration">{duration(job.duration_s)}</Fact>
        {job.ceiling_s !== undefined && (
          <Fact term="Ceiling">{`${duration(job.ceiling_s)}${job.ceiling_why ? ` (${job.ceiling_why})` : ''}`}</Fact>
        )}
        <Fact term="Verify">
          <span class="mono">{job.verify}</span>
        </Fact>
        <Fact term="Fix rounds">{String(job.fix_rounds)}</Fact>
        <Fact term="Tasks">{describeTaskRun(job, runs)}</Fact>
        {totals && <Fact term="Cost">{totals.spend ?? usd(totals.cost_usd)}</Fact>}
        {job.owner && <Fact term="Owner">{job.owner}</Fact>}
      </dl>
      <JobActions job={job} onChanged={onChanged} />
    </header>
  );
}

/** Cancel (a live job, asked twice: it stops paid work) and re-dispatch of the tasks that did not end done (a job that has ended). */
function JobActions({ job, onChanged }: { job: FullJob; onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = async (what: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await what();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };
  const cancel = () =>
    act(async () => {
      await api.cancel(job.id);
      onChanged();
    });
  const redispatch = () =>
    act(async () => {
      const next = await api.redispatch(job.id);
      navigate({ page: 'job', id: next.id });
    });
  const canCancel = isLive(job.status) && job.status !== 'cancelling';
  const failed = isLive(job.status) ? [] : tasksNotDone(job);
  const canRedispatch = failed.length > 0;
  if (!canCancel && !canRedispatch) return null;
  return (
    <div class="job-actions">
      <div class="row">
        {canCancel && !confirming && (
          <button type="button" class="danger" disabled={busy} onClick={() => setConfirming(true)}>
            Cancel job
          </button>
        )}
        {canCancel && confirming && (
          <>
            <span id="job-cancel-ask">Stop every worker of this job?</span>
            <button
              type="button"
              class="danger"
              aria-describedby="job-cancel-ask"
              disabled={busy}
              onClick={() => void cancel()}
            >
              Yes, cancel it
            </button>
            <button type="button" disabled={busy} onClick={() => setConfirming(false)}>
              Keep it running
            </button>
          </>
        )}
        {canRedispatch && (
          <>
            <button
              type="button"
              class="primary"
              aria-describedby="job-redispatch-what"
              disabled={busy}
              onClick={() => void redispatch()}
            >
              Re-dispatch the failed part
            </button>
            <span id="job-redispatch-what" class="muted">
              a new job for {failed.length === 1 ? 'task' : 'tasks'} {failed.join(', ')}
            </span>
          </>
        )}
      </div>
      {error && (
        <p class="error-box" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** The tasks no worker attempt ended done for: what `POST /api/jobs/:id/redispatch` sends again (a fixer or reviewer does not count). */
function tasksNotDone(job: FullJob): string[] {
  const done = new Set(
    (job.result?.workers ?? [])
      .filter((w) => w.role === 'worker' && w.status === 'done')
      .map((w) => taskOfWorker(job, w.name)?.name),
  );
  return job.tasks.filter((t) => !done.has(t.name)).map((t) => t.name);
}
