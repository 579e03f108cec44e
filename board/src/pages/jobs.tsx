import { memo } from 'preact/compat';
import { useEffect, useLayoutEffect, useMemo, useState } from 'preact/hooks';
import { useJobRows } from '../components/jobs-data.js';
import { JobsFilters, LIVE_FILTER } from '../components/jobs-filters.js';
import { isLiveStatus, JobRow } from '../components/jobs-row.js';
import { href } from '../router.js';

/** A row renders again only when its job changed, or — while it runs — as its clock ticks. */
const Row = memo(JobRow);

/** The Performance API marks bench/board.mjs reads: the list first committed to the DOM, and first painted. */
export const JOBS_RENDERED_MARK = 'gaffer:jobs-rendered';
export const JOBS_PAINTED_MARK = 'gaffer:jobs-painted';
let marked = false;

const epochNow = () => Date.now() / 1000;

/**
 * Jobs (spec 08): every job, newest first — status, title, workspace, runners, duration, verdict
 * line, and a live job's workers by state — live over the all-jobs stream (useJobRows), filtered
 * by status and workspace as the hash says.
 */
export function JobsPage({ status, workspace }: { status?: string; workspace?: string }) {
  const { rows, error } = useJobRows();
  const [now, setNow] = useState(epochNow);

  const all = useMemo(
    () => [...(rows?.values() ?? [])].sort((a, b) => (b.created ?? Infinity) - (a.created ?? Infinity)),
    [rows],
  );
  const anyRunning = all.some((j) => isLiveStatus(j.status) && j.started != null);
  useEffect(() => {
    if (!anyRunning) return;
    // the running jobs' durations count up: a local clock, nothing is fetched
    const timer = setInterval(() => setNow(epochNow()), 1_000);
    return () => clearInterval(timer);
  }, [anyRunning]);

  const workspaces = useMemo(() => [...new Set(all.map((j) => j.workspace))].sort(), [all]);
  const shown = all.filter(
    (j) =>
      (!status || (status === LIVE_FILTER ? isLiveStatus(j.status) : j.status === status)) &&
      (!workspace || j.workspace === workspace),
  );

  useLayoutEffect(() => {
    if (rows === null || marked) return;
    marked = true;
    performance.mark(JOBS_RENDERED_MARK);
    // a task queued from the next animation frame runs once that frame painted
    requestAnimationFrame(() => setTimeout(() => performance.mark(JOBS_PAINTED_MARK), 0));
  }, [rows]);

  return (
    <>
      <h1>Jobs</h1>
      <JobsFilters status={status} workspace={workspace} workspaces={workspaces} />
      {error !== null && (
        <p class="error-box" role="alert">
          Could not read the jobs: {error}
        </p>
      )}
      {rows === null && error === null && <p class="muted">Loading jobs…</p>}
      {rows !== null && (
        <p class="muted jobs-count" role="status">
          {all.length === 0 ? (
            <>
              No jobs yet. <a href={href({ page: 'new' })}>Start one</a>.
            </>
          ) : shown.length === all.length ? (
            `${all.length} job${all.length === 1 ? '' : 's'}, newest first`
          ) : (
            `${shown.length} of ${all.length} jobs match the filters`
          )}
        </p>
      )}
      {shown.length > 0 && (
        <div class="table-wrap">
          <table class="jobs-table">
            <caption class="jobs-sr">Jobs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Job</th>
                <th scope="col">Workspace</th>
                <th scope="col">Runners</th>
                <th scope="col">Duration</th>
                <th scope="col">Verdict</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((j) => (
                <Row key={j.id} job={j} now={isLiveStatus(j.status) ? now : 0} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
