import { StatusPill } from './status.js';
import type { Worktrees } from './job-types.js';

/** A worktree job's branches (spec 06): per task its branch, worktree and merge state; the merges made; the conflicts foreseen. */
export function JobWorktrees({ worktrees: w }: { worktrees: Worktrees | undefined }) {
  if (!w) return null;
  return (
    <section aria-labelledby="job-worktrees-h">
      <h2 id="job-worktrees-h">Branches and merges</h2>
      <p>
        Base <span class="mono">{w.base}</span>, merge {w.merge === 'auto' ? 'automatic' : 'by you'}.
      </p>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Branches">
        <table>
          <thead>
            <tr>
              <th scope="col">Task</th>
              <th scope="col">Branch</th>
              <th scope="col">Worktree</th>
              <th scope="col">Verification</th>
              <th scope="col">Merge</th>
            </tr>
          </thead>
          <tbody>
            {w.tasks.map((t) => (
              <tr key={t.task}>
                <th scope="row" class="mono">
                  {t.task}
                </th>
                <td class="mono">
                  {t.branch}
                  {t.commit ? ` @ ${t.commit.slice(0, 12)}` : ''}
                </td>
                <td>
                  {t.state.replace(/_/g, ' ')}
                  {t.path && <div class="mono">{t.path}</div>}
                  {t.why && <div class="muted">{t.why}</div>}
                </td>
                <td>{t.verification ? <VerificationPill {...t.verification} /> : '—'}</td>
                <td>
                  {t.merge ? (
                    <StatusPill
                      value={t.merge === 'merged' ? 'pass' : t.merge === 'conflict' ? 'fail' : 'partial'}
                      label={t.merge.replace(/_/g, ' ')}
                    />
                  ) : (
                    '—'
                  )}
                  {t.conflict_files && t.conflict_files.length > 0 && (
                    <div>conflicts: {t.conflict_files.join(', ')}</div>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {w.merges.length > 0 && (
        <>
          <h3>Merged trees</h3>
          <ul>
            {w.merges.map((m) => (
              <li key={m.branch}>
                <span class="mono">{m.branch}</span> ({m.tasks.join(', ')}): {m.applied ? 'applied' : 'not applied'}
                {m.why ? ` — ${m.why}` : ''}
                {m.verification && (
                  <>
                    {' '}
                    <VerificationPill {...m.verification} />
                  </>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
      {w.classes.length > 0 && (
        <ul class="muted">
          {w.classes.map((c) => (
            <li key={c.task}>
              {c.task}: {c.class} — {c.why}
            </li>
          ))}
        </ul>
      )}
      {w.predicted_conflicts.length > 0 && (
        <p>
          Foreseen conflicts:{' '}
          {w.predicted_conflicts.map((c) => `${c.tasks.join(' & ')} on ${c.files.join(', ')}`).join('; ')}
        </p>
      )}
    </section>
  );
}

type BranchVerification = NonNullable<Worktrees['tasks'][number]['verification']>;

/**
 * A branch's verification as a pill: pass when it passed, and when it failed only on failures that
 * block nothing (there before the work, or declared known) — the work passed, and the summary and
 * a note say which tests failed; fail only when its failures hold the work back.
 */
function VerificationPill({ ok, summary, blocking }: BranchVerification) {
  const excused = ok === false && blocking === false;
  const reading = ok === true || excused ? 'pass' : ok === false ? 'fail' : 'ambiguous';
  return (
    <span>
      <StatusPill value={reading} label={reading === 'ambiguous' ? 'unknown' : reading} /> {summary}
      {excused && (
        <span class="muted"> — failures that were there before the work or are declared known: not this work's</span>
      )}
    </span>
  );
}
