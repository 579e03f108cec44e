import { useId, useState } from 'preact/hooks';
import { api, ApiError, type CompactJob } from '../api.js';
import { href, navigate } from '../router.js';
import { defaultTask, lastWorkerOf, whyNoFollowUp, type ChangedFile, type ReviewDraft } from './review-state.js';

interface Props {
  job: CompactJob;
  files: readonly ChangedFile[];
  draft: ReviewDraft;
  onDraft: (next: ReviewDraft) => void;
}

/**
 * The review as it will be sent: the pending line comments, a general note, the task it goes to,
 * and "Send back to the worker" — `POST /api/jobs/:id/tasks/:task/follow-up`, which starts a
 * follow-up job (verified and proved like any) that this then opens.
 */
export function ReviewSend({ job, files, draft, onDraft }: Props) {
  const ids = useId();
  const [picked, setPicked] = useState<{ job: string; task: string } | null>(null);
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<{ from: string; job: CompactJob } | null>(null);

  const blocked = whyNoFollowUp(job);
  const task = picked?.job === job.id ? picked.task : defaultTask(job, files, draft.comments);
  const empty = draft.comments.length === 0 && draft.note.trim() === '';
  const why =
    blocked ??
    (empty
      ? 'Add a comment on a line of the diff, or a general note.'
      : task === ''
        ? 'Choose the task the review goes to.'
        : null);
  const last = task ? lastWorkerOf(job, task) : null;

  const send = async (e: Event) => {
    e.preventDefault();
    if (why !== null || sending) return;
    setSending(true);
    setError(null);
    try {
      const note = draft.note.trim();
      const answer = await api.followUp(job.id, task, {
        comments: draft.comments.map(({ file, line, text }) => ({ file, line, text })),
        ...(note ? { note } : {}),
      });
      setSent({ from: job.id, job: answer });
      onDraft({ comments: [], note: '' });
      navigate({ page: 'job', id: answer.id });
    } catch (err) {
      setError(err instanceof ApiError ? `${err.message}${err.field ? ` (${err.field})` : ''}` : String(err));
    } finally {
      setSending(false);
    }
  };

  const shown = sent?.from === job.id ? sent.job : null;
  return (
    <form class="review-send panel" onSubmit={(e) => void send(e)} aria-labelledby={`${ids}-h`}>
      <h3 id={`${ids}-h`}>Review for the worker</h3>
      {draft.comments.length === 0 ? (
        <p class="muted">No line comments yet: press a line number in the diff to comment on that line.</p>
      ) : (
        <ul class="review-pending" aria-label="Pending comments">
          {draft.comments.map((c) => (
            <li key={c.id}>
              <span class="mono">
                {c.file}:{c.line}
              </span>{' '}
              — {c.text}{' '}
              <button
                type="button"
                class="quiet"
                aria-label={`Remove the comment on ${c.file} line ${c.line}`}
                onClick={() => onDraft({ ...draft, comments: draft.comments.filter((x) => x.id !== c.id) })}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <label for={`${ids}-note`}>General note</label>
      <textarea
        id={`${ids}-note`}
        rows={3}
        value={draft.note}
        placeholder="What to change overall, beyond the line comments"
        onInput={(e) => onDraft({ ...draft, note: e.currentTarget.value })}
      />
      {job.tasks.length > 1 ? (
        <div class="row">
          <label for={`${ids}-task`}>Send to task</label>
          <select
            id={`${ids}-task`}
            value={task}
            onChange={(e) => setPicked({ job: job.id, task: e.currentTarget.value })}
          >
            {task === '' && <option value="">Choose the task…</option>}
            {job.tasks.map((t) => (
              <option key={t.name} value={t.name}>
                {t.name} ({t.runner})
              </option>
            ))}
          </select>
        </div>
      ) : null}
      {task && (
        <p class="muted">
          Goes to task <strong>{task}</strong> as a follow-up job:{' '}
          {last?.session
            ? `it resumes the session of its last worker (${last.name}, ${last.runner}).`
            : `a new session of ${last?.runner ?? 'its runner'}, told the comments and the task's diff (no session to resume).`}
        </p>
      )}
      <div class="row">
        <button
          type="submit"
          class="primary"
          disabled={why !== null || sending}
          aria-describedby={why ? `${ids}-why` : undefined}
        >
          {sending ? 'Sending…' : 'Send back to the worker'}
        </button>
        {why && (
          <span id={`${ids}-why`} class="review-why">
            {why}
          </span>
        )}
      </div>
      {error && (
        <p class="error-box" role="alert">
          Not sent: {error}
        </p>
      )}
      <p role="status" class="review-sent">
        {shown && (
          <>
            Follow-up job <a href={href({ page: 'job', id: shown.id })}>{shown.id}</a> started:{' '}
            {shown.follow_up?.resumed
              ? "it resumed the worker's session."
              : 'a new session, told the comments and the diff.'}
          </>
        )}
      </p>
    </form>
  );
}
