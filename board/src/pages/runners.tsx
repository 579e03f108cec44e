import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, type RunnerRow } from '../api.js';
import { StatusPill } from '../components/status.js';

function Installed({ r }: { r: RunnerRow }) {
  if (!r.installed) return <StatusPill value="fail" label="not installed" />;
  return (
    <>
      <StatusPill value="pass" label="installed" />
      {r.version && <span class="mono runners-version"> {r.version}</span>}
      {r.pinned_version && r.version && r.version !== r.pinned_version && (
        <span class="runners-drift"> (gaffer was checked against {r.pinned_version})</span>
      )}
    </>
  );
}

/** A row's cells; the same on a laptop (a table) and a phone (a card a runner). */
function RunnerCells({ r }: { r: RunnerRow }) {
  return (
    <>
      <td data-label="Installed">
        <Installed r={r} />
      </td>
      <td data-label="Enabled">
        {r.enabled ? <StatusPill value="pass" label="enabled" /> : <StatusPill value="partial" label="disabled" />}
      </td>
      <td data-label="Sandbox">
        {r.sandbox ? (
          <StatusPill value="pass" label="sandboxed" />
        ) : (
          <StatusPill value="partial" label="not sandboxed" />
        )}
      </td>
      <td data-label="Resumes a session">{r.resume ? 'yes' : 'no'}</td>
      <td data-label="Licence">{r.licence ?? <span class="muted">—</span>}</td>
      <td data-label="Install">
        {r.install_hint ? (
          <code class="runners-hint">{r.install_hint}</code>
        ) : r.pinned_version ? (
          <span class="muted">checked against {r.pinned_version}</span>
        ) : (
          <span class="muted">part of gaffer</span>
        )}
      </td>
    </>
  );
}

/**
 * Runners (spec 08): the runner table of `GET /api/runners` — installed and version, enabled,
 * sandboxed or not, session resume, licence, and how to install what is missing. No stream tells
 * of a runner installed: the table is read when the page opens and on Refresh.
 */
export function RunnersPage() {
  const [runners, setRunners] = useState<RunnerRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const load = useCallback(() => {
    setLoading(true);
    api.runners().then(
      (r) => {
        setRunners(r.runners);
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

  const unsandboxed = runners?.filter((r) => r.installed && r.enabled && !r.sandbox).map((r) => r.key) ?? [];
  return (
    <>
      <div class="row runners-head">
        <h1>Runners</h1>
        <button type="button" onClick={load} disabled={loading}>
          {loading ? 'Reading…' : 'Refresh'}
        </button>
      </div>
      <p class="muted">
        What can run a task here. A runner is sandboxed when its runs would be confined by bubblewrap (the workspace
        writable, the rest read-only, its own network); <code>gaffer doctor</code> says how to enable the sandbox.
      </p>
      {error && (
        <p class="error-box" role="alert">
          The runners could not be read: {error}
        </p>
      )}
      {runners && (
        <>
          <div class="table-wrap" role="region" aria-label="Runner table" tabIndex={0}>
            <table class="runners-table">
              <caption class="runners-caption">
                {runners.length} runners: {runners.filter((r) => r.installed && r.enabled).length} ready to run
              </caption>
              <thead>
                <tr>
                  <th scope="col">Runner</th>
                  <th scope="col">Installed</th>
                  <th scope="col">Enabled</th>
                  <th scope="col">Sandbox</th>
                  <th scope="col">Resumes a session</th>
                  <th scope="col">Licence</th>
                  <th scope="col">Install</th>
                </tr>
              </thead>
              <tbody>
                {runners.map((r) => (
                  <tr key={r.key} data-runner={r.key}>
                    <th scope="row">
                      <span class="mono">{r.key}</span>
                      {r.label !== r.key && <span class="runners-label">{r.label}</span>}
                    </th>
                    <RunnerCells r={r} />
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {unsandboxed.length > 0 && (
            <p class="runners-warn">
              Not sandboxed here: {unsandboxed.join(', ')}. Their workers run with the machine's rights; an agent CLI
              run so costs its proof <code>external_agent_unsandboxed</code>.
            </p>
          )}
        </>
      )}
    </>
  );
}
