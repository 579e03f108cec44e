import { useId, useMemo, useState } from 'preact/hooks';
import type { CompactJob, FullJob } from '../api.js';
import { href } from '../router.js';
import { ReviewFile } from './review-file.js';
import type { DiffView } from './review-render.js';
import { ReviewSend } from './review-send.js';
import { branchFiles, changedFiles, commentId, useReviewDraft, type ChangedFile } from './review-state.js';

/** Up to this many files are open at first; a bigger job starts collapsed, a file opened at a time. */
const OPEN_UP_TO = 6;
const VIEW_KEY = 'gaffer.board.diffView';

function readView(): DiffView {
  try {
    const saved = localStorage.getItem(VIEW_KEY);
    if (saved === 'side-by-side' || saved === 'line-by-line') return saved;
  } catch {
    // storage off: the default below
  }
  // a phone has no room for two columns
  return matchMedia('(max-width: 700px)').matches ? 'line-by-line' : 'side-by-side';
}

/**
 * The job's changes: a diff per file with review comments that go back as a follow-up — against the
 * checkpoint, or for a worktree job per task branch (each file on the branch against the job's base).
 */
export function Changes({ job }: { job: FullJob }) {
  const ids = useId();
  const branches = useMemo(() => branchFiles(job), [job]);
  const files = useMemo(() => (branches ? branches.flatMap((b) => b.files) : changedFiles(job)), [job, branches]);
  const [view, setView] = useState<DiffView>(readView);
  const [opened, setOpened] = useState<Record<string, boolean>>({});
  const [draft, setDraft] = useReviewDraft(job.id);
  const changes = job.result?.changes;
  // a finished job's diff is against its post checkpoint and stays; a live one's follows the workspace
  const version = `${job.status}:${job.finished ?? ''}:${changes?.count ?? files.length}`;
  const keyOf = (f: ChangedFile) => `${job.id}:${f.task ?? ''}:${f.path}`;
  const isOpen = (f: ChangedFile) => opened[keyOf(f)] ?? files.length <= OPEN_UP_TO;
  const openAll = (open: boolean) => setOpened(Object.fromEntries(files.map((f) => [keyOf(f), open])));

  const chooseView = (next: DiffView) => {
    setView(next);
    try {
      localStorage.setItem(VIEW_KEY, next);
    } catch {
      // storage off: remembered for this page only
    }
  };

  if (job.merge_of) {
    // a merge later has no diff of its own: what it applied is the merged branches of the job it merges
    const of = job.merge_of;
    return (
      <section class="review" aria-labelledby={`${ids}-h`}>
        <h2 id={`${ids}-h`}>Changes</h2>
        <p>
          This job merged {of.task ? `the branch of task ${of.task}` : 'the passing branches'} of job{' '}
          <a href={href({ page: 'job', id: of.job })} class="mono">
            {of.job}
          </a>
          : each file's diff is on that job's page, under its task's branch.
        </p>
        {files.length > 0 && (
          <ul class="mono" aria-label="Files it applied">
            {files.map((f) => (
              <li key={f.path}>{f.path}</li>
            ))}
          </ul>
        )}
      </section>
    );
  }

  const fileView = (f: ChangedFile, fileVersion: string) => (
    <ReviewFile
      key={keyOf(f)}
      jobId={job.id}
      file={f}
      view={view}
      open={isOpen(f)}
      onOpenChange={(open) => setOpened((o) => (o[keyOf(f)] === open ? o : { ...o, [keyOf(f)]: open }))}
      version={fileVersion}
      comments={draft.comments.filter((c) => c.file === f.path && c.task === f.task)}
      onAdd={(c) =>
        setDraft({
          ...draft,
          comments: [...draft.comments, { ...c, id: commentId(), ...(f.task !== undefined ? { task: f.task } : {}) }],
        })
      }
    />
  );

  return (
    <section class="review" aria-labelledby={`${ids}-h`}>
      <h2 id={`${ids}-h`}>Changes</h2>
      {files.length === 0 ? (
        <p class="muted">{job.finished === null ? 'No file changed yet.' : 'No file changed.'}</p>
      ) : (
        <>
          <div class="row review-toolbar">
            <fieldset class="review-view">
              <legend>Diff view</legend>
              {(
                [
                  ['side-by-side', 'Side by side'],
                  ['line-by-line', 'Unified'],
                ] as const
              ).map(([value, label]) => (
                <label key={value}>
                  <input
                    type="radio"
                    name={`${ids}-view`}
                    value={value}
                    checked={view === value}
                    onChange={() => chooseView(value)}
                  />{' '}
                  {label}
                </label>
              ))}
            </fieldset>
            {files.length > 1 && (
              <>
                <button type="button" onClick={() => openAll(true)}>
                  Expand all
                </button>
                <button type="button" onClick={() => openAll(false)}>
                  Collapse all
                </button>
              </>
            )}
          </div>
          {branches ? (
            <>
              <p class="muted">
                Each task worked on its own branch: its files as its branch has them, against the base{' '}
                <code>{job.result?.worktrees?.base.slice(0, 12)}</code>.
              </p>
              {branches.map((b) => (
                <section key={b.task} class="review-branch" aria-labelledby={`${ids}-${b.task}`}>
                  <h3 id={`${ids}-${b.task}`}>
                    Task {b.task} <span class="mono review-branch-name">{b.branch}</span>
                  </h3>
                  <p class="muted">
                    {b.files.length === 0
                      ? b.commit === null && job.finished === null
                        ? 'Nothing on its branch yet: its work is committed there when it ends.'
                        : 'No file changed on its branch.'
                      : `${b.files.length} file${b.files.length === 1 ? '' : 's'} changed on its branch${b.commit ? ` (commit ${b.commit.slice(0, 12)})` : ''}.`}
                  </p>
                  {b.files.map((f) => fileView(f, `${b.commit ?? ''}`))}
                </section>
              ))}
            </>
          ) : (
            <>
              <p class="muted">
                {describeCount(files.length, changes)}
                {changes && (
                  <>
                    {' '}
                    against the checkpoint <code>{changes.checkpoint.slice(0, 12)}</code>
                    {changes.source === 'mtime' ? ' (modification times only: contents were not recorded)' : ''}
                  </>
                )}
                .{changes?.truncated ? ' The list was cut: more files changed than are shown.' : ''}
              </p>
              {files.map((f) => fileView(f, version))}
            </>
          )}
        </>
      )}
      <ReviewSend job={job} files={files} draft={draft} onDraft={setDraft} />
    </section>
  );
}

function describeCount(n: number, changes: NonNullable<CompactJob['result']>['changes']): string {
  const files = `${n} file${n === 1 ? '' : 's'} changed`;
  if (!changes) return files;
  const parts = [
    [changes.added.length, 'added'],
    [changes.modified.length, 'modified'],
    [changes.deleted.length, 'deleted'],
  ].filter(([count]) => Number(count) > 0);
  return `${files} (${parts.map(([count, word]) => `${count} ${word}`).join(', ')})`;
}
