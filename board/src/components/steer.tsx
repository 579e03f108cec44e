import { useId, useState } from 'preact/hooks';
import { api, ApiError, type CompactJob, type SteerAnswer } from '../api.js';
import { href } from '../router.js';

/** What the board says of a steer's delivery: the one thing a person must know is whether the worker reads it now. */
function deliveryText(a: SteerAnswer): string {
  if (a.delivery === 'next_turn')
    return `Delivered at its next turn: ${a.worker ?? 'the worker'} reads it before its next model call.`;
  return a.follow_up_job
    ? 'Queued as the next follow-up: the job had ended, so it went to the task as a follow-up job.'
    : `Queued as the next follow-up: this worker takes no input mid-run, so the message goes to task ${a.task} as a follow-up job when this job ends${a.waiting > 1 ? ` (${a.waiting} messages waiting)` : ''}.`;
}

/** A message to a live worker of `task`: delivered at its next turn, or queued as its next follow-up. */
export function Steer({ job, task }: { job: CompactJob; task: string }) {
  const ids = useId();
  const [message, setMessage] = useState('');
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<{ text: string; answer: SteerAnswer }[]>([]);
  if (job.finished !== null && sent.length === 0) return null;

  const send = async (e: Event) => {
    e.preventDefault();
    const text = message.trim();
    if (text === '' || sending) return;
    setSending(true);
    setError(null);
    try {
      const answer = await api.steer(job.id, task, text);
      setSent((s) => [...s, { text, answer }]);
      setMessage('');
    } catch (err) {
      setError(err instanceof ApiError ? `${err.message}${err.field ? ` (${err.field})` : ''}` : String(err));
    } finally {
      setSending(false);
    }
  };

  return (
    <form class="steer" onSubmit={(e) => void send(e)} aria-label={`Steer task ${task}`}>
      {job.finished === null && (
        <>
          <label for={`${ids}-msg`}>Message to the worker of {task}</label>
          <textarea
            id={`${ids}-msg`}
            rows={2}
            value={message}
            placeholder="e.g. use the existing helper in utils.ts instead"
            onInput={(e) => setMessage(e.currentTarget.value)}
          />
          <div class="row">
            <button type="submit" disabled={sending || message.trim() === ''}>
              {sending ? 'Sending…' : 'Send to the worker'}
            </button>
          </div>
        </>
      )}
      {error && (
        <p class="error-box" role="alert">
          Not sent: {error}
        </p>
      )}
      <div role="status">
        {sent.length > 0 && (
          <ul class="steer-sent" aria-label={`Messages sent to ${task}`}>
            {sent.map(({ text, answer }) => (
              <li key={answer.id} class={`steer-${answer.delivery}`}>
                <q>{text}</q> — <strong>{deliveryText(answer)}</strong>
                {answer.follow_up_job && (
                  <>
                    {' '}
                    <a href={href({ page: 'job', id: answer.follow_up_job })}>
                      Open follow-up job {answer.follow_up_job}
                    </a>
                  </>
                )}
              </li>
            ))}
          </ul>
        )}
      </div>
    </form>
  );
}
