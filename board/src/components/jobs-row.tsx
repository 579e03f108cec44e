import type { BriefJob, JobStatus } from '../api.js';
import { duration } from '../format.js';
import { href } from '../router.js';
import { StatusPill } from './status.js';
import type { ProgressChange } from '../live.js';

type JobProgress = ProgressChange['progress'];

/** A row of the Jobs page: what the list said, or — for a job just announced by the stream — what its `created` event said until its brief is read. */
export type JobRowData = Pick<BriefJob, 'id' | 'title' | 'workspace' | 'status' | 'verdict'> &
  Partial<Omit<BriefJob, 'id' | 'title' | 'workspace' | 'status' | 'verdict'>>;

/** Every job status, and whether it is live (exhaustive by type: a status the server adds fails the board's typecheck). */
export const LIVE_BY_STATUS: Readonly<Record<JobStatus, boolean>> = {
  queued: true,
  awaiting_approval: true,
  running: true,
  verifying: true,
  cancelling: true,
  done: false,
  partial: false,
  error: false,
  cancelled: false,
  interrupted: false,
};

export const isLiveStatus = (s: JobStatus): boolean => LIVE_BY_STATUS[s];

/** The order worker states are said in: the live ones first. */
const STATE_ORDER = [
  'running',
  'queued',
  'rate_limited',
  'waiting_for_input',
  'stuck',
  'auth_error',
  'disk_full',
  'oom',
  'provider_suspended',
  'budget_paused',
  'done',
  'error',
  'interrupted',
];

/**
 * A worker's state as the Jobs page counts it, read off its `progress` entry: a detected state
 * while it has not ended (the literal is on the Job page), else where its last event left it.
 */
export function workerState(entry: JobProgress[string]): string {
  switch (entry.last_event) {
    case 'done':
      return 'done';
    case 'error':
      return 'error';
    case 'interrupted':
      return 'interrupted';
    case 'queued':
      return entry.state ?? 'queued';
    default:
      // started, output, state: its process runs
      return entry.state ?? 'running';
  }
}

/** How many workers are in each state, in STATE_ORDER. */
export function countWorkers(progress: JobProgress): [string, number][] {
  const counts = new Map<string, number>();
  for (const entry of Object.values(progress)) {
    const s = workerState(entry);
    counts.set(s, (counts.get(s) ?? 0) + 1);
  }
  const rank = (s: string) => (STATE_ORDER.includes(s) ? STATE_ORDER.indexOf(s) : STATE_ORDER.length);
  return [...counts].sort((a, b) => rank(a[0]) - rank(b[0]));
}

/** The runners (and models) a job's tasks go to, each once. */
export function runnersOf(job: JobRowData): string[] {
  return [...new Set((job.tasks ?? []).map((t) => (t.model ? `${t.runner} (${t.model})` : t.runner)))];
}

/** Seconds the job took, or has taken so far while it runs (`now` in epoch seconds). */
export function elapsedOf(job: JobRowData, now: number): number | null {
  if (job.duration_s !== null && job.duration_s !== undefined && !isLiveStatus(job.status)) return job.duration_s;
  if (job.started !== null && job.started !== undefined) return Math.max(0, (job.finished ?? now) - job.started);
  return null;
}

/** One job of the list: status (colour + word), title linking to its page, workspace, runners, duration, the verdict line, and its workers by state while it is live. */
export function JobRow({ job, now }: { job: JobRowData; now: number }) {
  const live = isLiveStatus(job.status);
  const counts = live && job.progress ? countWorkers(job.progress) : [];
  const runners = runnersOf(job);
  const line = job.verdict ?? job.error ?? (live ? job.phase : null) ?? null;
  return (
    <tr data-job-id={job.id} data-status={job.status} class={live ? 'jobs-live' : undefined}>
      <td class="jobs-status" data-label="Status">
        <StatusPill value={job.status} />
      </td>
      <td class="jobs-title" data-label="Job">
        <a href={href({ page: 'job', id: job.id })}>{job.title}</a>
        <span class="jobs-id mono">{job.id}</span>
      </td>
      <td class="jobs-ws mono" data-label="Workspace">
        {job.workspace}
      </td>
      <td class="jobs-runners" data-label="Runners">
        {runners.length > 0 ? runners.join(', ') : '—'}
      </td>
      <td class="jobs-duration" data-label="Duration">
        {duration(elapsedOf(job, now))}
      </td>
      <td class="jobs-verdict" data-label="Verdict">
        {counts.length > 0 && (
          <ul class="jobs-workers" aria-label="Workers by state">
            {counts.map(([state, n]) => (
              <li key={state} data-state={state}>
                {n} {state.replace(/_/g, ' ')}
              </li>
            ))}
          </ul>
        )}
        {line !== null && <span class="jobs-line">{line}</span>}
      </td>
    </tr>
  );
}
