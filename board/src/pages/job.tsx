import { useEffect } from 'preact/hooks';
import { Changes } from '../components/changes.js';
import { JobHeader } from '../components/job-header.js';
import { useLiveJob } from '../components/job-live.js';
import { JobPlan } from '../components/job-plan.js';
import { JobCriteria, JobProof } from '../components/job-proof.js';
import { JobTimeline } from '../components/job-timeline.js';
import { isLive } from '../components/job-types.js';
import { JobVerification } from '../components/job-verification.js';
import { JobWorkers } from '../components/job-workers.js';
import { JobWorktrees } from '../components/job-worktrees.js';
import { href } from '../router.js';

/**
 * One job (spec 08 "Job"): its head and actions, phases, a card per worker and attempt, changes,
 * verification, proof, criteria, tasks and their order, branches — kept current over its event
 * stream while it is live.
 */
export function JobPage({ id }: { id: string }) {
  const { job, error, phases, outputs, runs, reload } = useLiveJob(id);
  useEffect(() => {
    document.title = job ? `${job.title} · gaffer` : `job ${id} · gaffer`;
  }, [id, job?.title]);
  if (job === null) {
    return error ? (
      <>
        <h1>Job {id}</h1>
        <p class="error-box" role="alert">
          {error}
        </p>
        <p>
          <a href={href({ page: 'jobs' })}>Back to Jobs</a>
        </p>
      </>
    ) : (
      <p class="muted" role="status">
        Reading job {id}…
      </p>
    );
  }
  const live = isLive(job.status);
  return (
    <article class="job-page">
      <JobHeader job={job} runs={runs} onChanged={reload} />
      {error && (
        <p class="error-box" role="alert">
          Could not read the job again: {error}
        </p>
      )}
      <div class="job-layout">
        <div class="job-main">
          <JobWorkers job={job} outputs={outputs} />
          <Changes job={job} />
          <JobVerification result={job.result} live={live} />
          <JobProof result={job.result} live={live} />
          <JobCriteria job={job} />
          <JobPlan job={job} />
          <JobWorktrees worktrees={job.result?.worktrees} />
        </div>
        <aside class="job-side" aria-label="Phases">
          <JobTimeline phases={phases} created={job.created} live={live} />
        </aside>
      </div>
    </article>
  );
}
