import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type AskJson, type OpenAsk } from '../api.js';
import { useJobChanges, useStreamOpen } from '../live.js';
import { href } from '../router.js';

const messageOf = (e: unknown) => (e instanceof ApiError || e instanceof Error ? e.message : String(e));

/** The open asks grouped by job, in the order the server lists them (oldest first). */
function byJob(asks: OpenAsk[]): { id: string; title: string; asks: AskJson[] }[] {
  const groups = new Map<string, { id: string; title: string; asks: AskJson[] }>();
  for (const a of asks) {
    const g = groups.get(a.job_id) ?? { id: a.job_id, title: a.title, asks: [] };
    g.asks.push(a.ask);
    groups.set(a.job_id, g);
  }
  return [...groups.values()];
}

/**
 * "Needs your yes (N)" (spec 08): on every page while any ask is open. Read from `GET /api/asks` on
 * load, again on every job `created`/`status` event of the stream (a job starts or stops waiting),
 * and after an answer given here; each ask decision-grade with a yes/no and a note of its own.
 */
export function AsksBand() {
  const [asks, setAsks] = useState<OpenAsk[]>([]);
  const [error, setError] = useState<string | null>(null);
  const reading = useRef<'idle' | 'reading' | 'again'>('idle');

  const refresh = () => {
    if (reading.current !== 'idle') {
      reading.current = 'again';
      return;
    }
    reading.current = 'reading';
    api
      .asks()
      .then(
        (answer) => {
          setAsks(answer.asks);
          setError(null);
        },
        (e: unknown) => setError(messageOf(e)),
      )
      .finally(() => {
        const again = reading.current === 'again';
        reading.current = 'idle';
        if (again) refresh();
      });
  };
  useEffect(refresh, []);
  useJobChanges(() => refresh());
  // asks opened before the stream was listening are read again once it is
  useStreamOpen(refresh);

  if (asks.length === 0 && error === null) return null;
  const groups = byJob(asks);
  return (
    <section class="asks" aria-labelledby="asks-heading">
      <h2 id="asks-heading" class="asks-heading">
        Needs your yes ({asks.length})
      </h2>
      {error !== null && (
        <p class="error-box" role="alert">
          Could not read the open asks: {error}
        </p>
      )}
      {groups.map((g) => (
        <AsksJob key={g.id} id={g.id} title={g.title} asks={g.asks} onAnswered={refresh} />
      ))}
    </section>
  );
}

function AsksJob({
  id,
  title,
  asks,
  onAnswered,
}: {
  id: string;
  title: string;
  asks: AskJson[];
  onAnswered: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const answerAll = (yes: boolean) => {
    setBusy(true);
    setError(null);
    api.approve(id, yes).then(
      () => onAnswered(),
      (e: unknown) => {
        setError(messageOf(e));
        setBusy(false);
      },
    );
  };
  return (
    <article class="asks-job" data-job-id={id} aria-labelledby={`asks-job-${id}`}>
      <h3 id={`asks-job-${id}`} class="asks-job-title">
        <a href={href({ page: 'job', id })}>{title}</a> <span class="mono asks-id">{id}</span>
      </h3>
      {asks.length > 1 && (
        <div class="row asks-all">
          <button type="button" class="primary" disabled={busy} onClick={() => answerAll(true)}>
            Yes to all {asks.length}
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => answerAll(false)}>
            No to all {asks.length}
          </button>
        </div>
      )}
      {error !== null && (
        <p class="error-box" role="alert">
          {error}
        </p>
      )}
      {asks.map((a) => (
        <AskItem key={a.task} jobId={id} ask={a} onAnswered={onAnswered} />
      ))}
    </article>
  );
}

/** One ask: every field it carries (issue, why, route, recommendation and who drafted it, pros, cons, blocking), a note, yes and no. */
function AskItem({ jobId, ask, onAnswered }: { jobId: string; ask: AskJson; onAnswered: () => void }) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const base = `ask-${jobId}-${ask.task}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const answer = (yes: boolean) => {
    setBusy(true);
    setError(null);
    const trimmed = note.trim();
    api.approve(jobId, { [ask.task]: yes }, trimmed === '' ? undefined : trimmed).then(
      () => onAnswered(),
      (e: unknown) => {
        setError(messageOf(e));
        setBusy(false);
      },
    );
  };
  return (
    <div class="asks-item" data-task={ask.task} role="group" aria-labelledby={`${base}-h`}>
      <h4 id={`${base}-h`} class="asks-issue">
        <span class="mono">{ask.task}</span>: {ask.issue}
      </h4>
      <dl class="asks-facts">
        <dt>Why</dt>
        <dd>{ask.why || '—'}</dd>
        <dt>Route</dt>
        <dd>{ask.route}</dd>
        <dt>Recommendation</dt>
        <dd>
          {ask.recommendation}
          <span class="asks-judge">
            {ask.judge_abstained
              ? ` — judge abstained: gaffer's own code-only rationale${ask.judge ? ` (${ask.judge})` : ''}`
              : ` — drafted by the judge${ask.judge ? ` ${ask.judge}` : ''}`}
          </span>
        </dd>
        <dt>Blocking</dt>
        <dd>{ask.blocking ? 'yes: nothing of the job runs before it is answered' : 'no'}</dd>
      </dl>
      <div class="asks-pc">
        <div>
          <h5>For ({ask.pros.length})</h5>
          {ask.pros.length > 0 ? (
            <ul>
              {ask.pros.map((p) => (
                <li key={p}>{p}</li>
              ))}
            </ul>
          ) : (
            <p class="asks-none">none</p>
          )}
        </div>
        <div>
          <h5>Against ({ask.cons.length})</h5>
          {ask.cons.length > 0 ? (
            <ul>
              {ask.cons.map((c) => (
                <li key={c}>{c}</li>
              ))}
            </ul>
          ) : (
            <p class="asks-none">none</p>
          )}
        </div>
      </div>
      <div class="asks-answer">
        <label for={`${base}-note`}>Note (optional)</label>
        <textarea
          id={`${base}-note`}
          rows={1}
          value={note}
          onInput={(e) => setNote((e.currentTarget as HTMLTextAreaElement).value)}
        />
        <div class="row">
          <button type="button" class="primary" disabled={busy} onClick={() => answer(true)}>
            Yes, run {ask.task}
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => answer(false)}>
            No, don't run {ask.task}
          </button>
        </div>
      </div>
      {error !== null && (
        <p class="error-box" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
