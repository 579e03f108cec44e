import { useId, useMemo, useState } from 'preact/hooks';
import type { CompactJob } from '../api.js';
import { ReviewFile } from './review-file.js';
import type { DiffView } from './review-render.js';
import { ReviewSend } from './review-send.js';
import { changedFiles, commentId, useReviewDraft } from './review-state.js';

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

/** The job's changes: a diff per file against the checkpoint, with review comments that go back as a follow-up. */
export function Changes({ job }: { job: CompactJob }) {
  const ids = useId();
  const files = useMemo(() => changedFiles(job), [job]);
  const [view, setView] = useState<DiffView>(readView);
  const [opened, setOpened] = useState<Record<string, boolean>>({});
  const [draft, setDraft] = useReviewDraft(job.id);
  const changes = job.result?.changes;
  // a finished job's diff is against its post checkpoint and stays; a live one's follows the workspace
  const version = `${job.status}:${job.finished ?? ''}:${changes?.count ?? files.length}`;
  const isOpen = (path: string) => opened[`${job.id}:${path}`] ?? files.length <= OPEN_UP_TO;
  const openAll = (open: boolean) => setOpened(Object.fromEntries(files.map((f) => [`${job.id}:${f.path}`, open])));

  const chooseView = (next: DiffView) => {
    setView(next);
    try {
      localStorage.setItem(VIEW_KEY, next);
    } catch {
      // storage off: remembered for this page only
    }
  };

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
                  <input type="radio" name={`${ids}-view`} value={value} checked={view === value} onChange={() => chooseView(value)} /> {label}
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
          {files.map((f) => (
            <ReviewFile
              key={`${job.id}:${f.path}`}
              jobId={job.id}
              file={f}
              view={view}
              open={isOpen(f.path)}
              onOpenChange={(open) => setOpened((o) => (o[`${job.id}:${f.path}`] === open ? o : { ...o, [`${job.id}:${f.path}`]: open }))}
              version={version}
              comments={draft.comments.filter((c) => c.file === f.path)}
              onAdd={(c) => setDraft({ ...draft, comments: [...draft.comments, { ...c, id: commentId() }] })}
            />
          ))}
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
