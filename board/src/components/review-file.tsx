import { useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import type * as RenderModule from './review-render.js';
import type { DiffView } from './review-render.js';
import type { ChangedFile, PendingComment } from './review-state.js';

type Renderer = typeof RenderModule;
let renderer: Promise<Renderer> | null = null;
const loadRenderer = (): Promise<Renderer> => (renderer ??= import('./review-render.js'));

/** A unified diff with hunks diff2html can draw; anything else (binary, content not recorded, mode only) is shown as the server wrote it. */
const hasHunks = (text: string): boolean => /^@@ /m.test(text);

interface Props {
  jobId: string;
  file: ChangedFile;
  view: DiffView;
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** Changes when the diff may have changed (the job moved on): an open file fetches it again. */
  version: string;
  comments: readonly PendingComment[];
  onAdd: (comment: { file: string; line: number; text: string }) => void;
}

/**
 * One changed file: collapsible, its diff (against the checkpoint, or on a worktree job's task branch
 * against the base) fetched when first opened and drawn
 * by diff2html; each line of the new side is a button that opens a comment on it, and the comment
 * form also takes a typed line number (the keyboard and screen-reader fallback for a long diff).
 */
export function ReviewFile({ jobId, file, view, open, onOpenChange, version, comments, onAdd }: Props) {
  const [diff, setDiff] = useState<{ version: string; text: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [drawn, setDrawn] = useState<{ html: string; view: DiffView; mod: Renderer } | null>(null);
  const [draft, setDraft] = useState<{ line: string; text: string } | null>(null);
  const [focusAsk, setFocusAsk] = useState<{ on: 'line' | 'text'; n: number }>({ on: 'text', n: 0 });
  const host = useRef<HTMLDivElement>(null);
  const lines = useRef(new Map<number, string>());
  const textArea = useRef<HTMLTextAreaElement>(null);
  const lineInput = useRef<HTMLInputElement>(null);
  const ids = useId();
  const canComment = file.kind !== 'deleted';

  useEffect(() => {
    if (!open || diff?.version === version) return;
    let live = true;
    setError(null);
    api.diff(jobId, file.path, file.task).then(
      (text) => live && setDiff({ version, text }),
      (err: unknown) => live && setError(err instanceof Error ? err.message : String(err)),
    );
    return () => {
      live = false;
    };
  }, [open, version, jobId, file.path, file.task, diff?.version]);

  useEffect(() => {
    if (!diff || !hasHunks(diff.text)) {
      setDrawn(null);
      return;
    }
    let live = true;
    loadRenderer().then(
      (mod) => live && setDrawn({ html: mod.renderDiff(diff.text, view), view, mod }),
      (err: unknown) =>
        live && setError(`the diff renderer did not load: ${err instanceof Error ? err.message : String(err)}`),
    );
    return () => {
      live = false;
    };
  }, [diff, view]);

  // diff2html's markup is set here, not by Preact, so the buttons added to it stay between renders
  useLayoutEffect(() => {
    const el = host.current;
    if (!el) return;
    if (!drawn) {
      el.replaceChildren();
      lines.current = new Map();
      return;
    }
    el.innerHTML = drawn.html;
    lines.current = drawn.mod.decorateDiff(el, file.path, drawn.view);
  }, [drawn, file.path]);

  useLayoutEffect(() => {
    const el = host.current;
    if (!el || !drawn) return;
    const counts = new Map<number, number>();
    for (const c of comments) counts.set(c.line, (counts.get(c.line) ?? 0) + 1);
    drawn.mod.markCommented(el, file.path, counts);
  }, [drawn, comments, file.path]);

  useEffect(() => {
    if (focusAsk.n > 0) (focusAsk.on === 'line' ? lineInput : textArea).current?.focus();
  }, [focusAsk]);

  const onDiffClick = (e: MouseEvent) => {
    const button = (e.target as Element | null)?.closest<HTMLButtonElement>('button.review-line');
    if (!button || !canComment) return;
    setDraft({ line: button.dataset.line ?? '', text: draft?.text ?? '' });
    setFocusAsk((f) => ({ on: 'text', n: f.n + 1 }));
  };

  const line = Number(draft?.line);
  const lineOk = Number.isInteger(line) && line >= 1;
  const quote = lineOk ? lines.current.get(line) : undefined;
  const submit = (e: Event) => {
    e.preventDefault();
    if (!draft || !lineOk || draft.text.trim() === '') return;
    onAdd({ file: file.path, line, text: draft.text.trim() });
    setDraft(null);
    host.current?.querySelector<HTMLButtonElement>(`button.review-line[data-line="${line}"]`)?.focus();
  };

  return (
    <details
      class="review-file"
      open={open}
      onToggle={(e) => onOpenChange((e.currentTarget as HTMLDetailsElement).open)}
    >
      <summary>
        <span class="mono review-file-name">{file.path}</span>{' '}
        <span class={`review-kind ${file.kind}`}>{file.kind}</span>
        {file.task === undefined && file.tasks.length > 0 && <span class="muted"> · task {file.tasks.join(', ')}</span>}
        {comments.length > 0 && (
          <span class="review-count">
            {' '}
            · {comments.length} comment{comments.length > 1 ? 's' : ''}
          </span>
        )}
      </summary>
      <div class="review-file-body">
        {error && (
          <p class="error-box" role="alert">
            Could not load the diff of {file.path}: {error}
          </p>
        )}
        {open && !diff && !error && <p class="muted">Loading the diff…</p>}
        {diff && diff.text.trim() === '' && (
          <p class="muted">
            {file.task === undefined
              ? 'No difference against the checkpoint any more.'
              : `No difference between the base and the branch of ${file.task}.`}
          </p>
        )}
        {diff && diff.text.trim() !== '' && !hasHunks(diff.text) && <pre class="review-raw">{diff.text}</pre>}
        <div class="review-diff" ref={host} onClick={onDiffClick} data-file={file.path} />
        {canComment && diff && !draft && (
          <button
            type="button"
            class="quiet review-add"
            onClick={() => {
              setDraft({ line: '', text: '' });
              setFocusAsk((f) => ({ on: 'line', n: f.n + 1 }));
            }}
          >
            Comment on a line of {file.path}…
          </button>
        )}
        {!canComment && <p class="muted">Deleted: no line to comment on — say what you want in the general note.</p>}
        {draft && (
          <form class="review-draft" onSubmit={submit} aria-label={`New comment on ${file.path}`}>
            <div class="row">
              <label for={`${ids}-line`}>Line</label>
              <input
                id={`${ids}-line`}
                ref={lineInput}
                class="review-line-input"
                type="number"
                min={1}
                inputMode="numeric"
                required
                value={draft.line}
                onInput={(e) => setDraft({ ...draft, line: e.currentTarget.value })}
              />
              <span class="muted review-quote">
                {lineOk ? (
                  quote !== undefined ? (
                    <>
                      reads <code>{quote.trim() === '' ? '(blank)' : quote}</code>
                    </>
                  ) : (
                    'not in the diff shown (the server checks the line exists)'
                  )
                ) : (
                  'the line of the new side'
                )}
              </span>
            </div>
            <label for={`${ids}-text`}>
              Comment on {file.path}
              {lineOk ? ` line ${line}` : ''}
            </label>
            <textarea
              id={`${ids}-text`}
              ref={textArea}
              rows={3}
              required
              value={draft.text}
              onInput={(e) => setDraft({ ...draft, text: e.currentTarget.value })}
            />
            <div class="row">
              <button type="submit" class="primary" disabled={!lineOk || draft.text.trim() === ''}>
                Add comment
              </button>
              <button type="button" onClick={() => setDraft(null)}>
                Cancel
              </button>
            </div>
          </form>
        )}
      </div>
    </details>
  );
}
