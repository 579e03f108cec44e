import type { JobStatus } from '../api.js';
import { navigate } from '../router.js';
import { LIVE_BY_STATUS } from './jobs-row.js';

/** The status filter's pseudo-value for every job not ended yet. */
export const LIVE_FILTER = 'live';

/** The Jobs filters (status, workspace) as labelled selects; the choice lives in the URL's hash, so it survives a reload and can be shared. */
export function JobsFilters({
  status,
  workspace,
  workspaces,
}: {
  status?: string;
  workspace?: string;
  workspaces: string[];
}) {
  const go = (patch: { status?: string; workspace?: string }) => {
    const next = { status, workspace, ...patch };
    navigate({
      page: 'jobs',
      ...(next.status ? { status: next.status } : {}),
      ...(next.workspace ? { workspace: next.workspace } : {}),
    });
  };
  const known = workspace && !workspaces.includes(workspace) ? [workspace, ...workspaces] : workspaces;
  return (
    <form class="jobs-filters" role="search" aria-label="Filter jobs" onSubmit={(e) => e.preventDefault()}>
      <label>
        Status
        <select
          name="status"
          value={status ?? ''}
          onChange={(e) => go({ status: (e.currentTarget as HTMLSelectElement).value || undefined })}
        >
          <option value="">all</option>
          <option value={LIVE_FILTER}>live (not ended)</option>
          {(Object.keys(LIVE_BY_STATUS) as JobStatus[]).map((s) => (
            <option key={s} value={s}>
              {s.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      </label>
      <label>
        Workspace
        <select
          name="workspace"
          value={workspace ?? ''}
          onChange={(e) => go({ workspace: (e.currentTarget as HTMLSelectElement).value || undefined })}
        >
          <option value="">all</option>
          {known.map((w) => (
            <option key={w} value={w}>
              {w}
            </option>
          ))}
        </select>
      </label>
      {(status || workspace) && (
        <button type="button" class="quiet" onClick={() => navigate({ page: 'jobs' })}>
          Clear filters
        </button>
      )}
    </form>
  );
}
