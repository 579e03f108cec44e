import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, type JobRequestInput, type LintReport } from '../api.js';

/** How long typing must pause before the request is linted. */
export const LINT_DEBOUNCE_MS = 350;

/** The spec lint of the request being typed: the report, or the refusal the request would meet now. */
export interface LintState {
  /** Nothing typed to lint yet. */
  idle: boolean;
  /** A lint of the latest request is on its way. */
  pending: boolean;
  report: LintReport | null;
  /** `POST /api/lint` refuses what dispatch would refuse, with the same error. */
  refusal: ApiError | null;
}

/**
 * Lints `request` as it is typed (spec 08 "spec lint shown as you type"): `POST /api/lint` once
 * typing pauses; an answer to an older request than the latest is dropped.
 */
export function useLint(request: JobRequestInput, enabled: boolean): LintState {
  const [state, setState] = useState<LintState>({ idle: true, pending: false, report: null, refusal: null });
  const seq = useRef(0);
  const body = JSON.stringify(request);
  useEffect(() => {
    const mine = ++seq.current;
    if (!enabled) {
      setState({ idle: true, pending: false, report: null, refusal: null });
      return undefined;
    }
    setState((s) => ({ ...s, idle: false, pending: true }));
    const timer = setTimeout(() => {
      api.lint(JSON.parse(body)).then(
        (report) => {
          if (mine === seq.current) setState({ idle: false, pending: false, report, refusal: null });
        },
        (err: unknown) => {
          if (mine !== seq.current) return;
          const refusal =
            err instanceof ApiError ? err : new ApiError(0, 'network', `the lint could not be asked: ${String(err)}`);
          setState({ idle: false, pending: false, report: null, refusal });
        },
      );
    }, LINT_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [body, enabled]);
  return state;
}

/** The lint's verdict in one place, announced politely as it changes; each finding is also shown by its field. */
export function LintSummary({ lint, blank = [] }: { lint: LintState; blank?: readonly number[] }) {
  let body;
  if (lint.idle) body = <p class="muted">Spec lint runs as you type an instruction.</p>;
  else if (lint.refusal) {
    body = (
      <p>
        <strong>Would be refused</strong> ({lint.refusal.code}
        {lint.refusal.field ? `, ${lint.refusal.field}` : ''}): {lint.refusal.message}
      </p>
    );
  } else if (lint.report?.ok) body = <p>Nothing to add: the request names its scope and how it is proved.</p>;
  else if (lint.report) {
    body = (
      <>
        <p>
          {lint.report.needs_detail.length} thing{lint.report.needs_detail.length === 1 ? '' : 's'} to add (mode{' '}
          <code>{lint.report.mode}</code>
          {lint.report.mode === 'enforce'
            ? ': dispatch is refused until they are added'
            : ': the job runs anyway and carries them'}
          ):
        </p>
        <ul>
          {lint.report.needs_detail.map((f, i) => (
            <li key={i}>
              <strong>{f.task}</strong> <code>{f.code}</code>: {f.message}
              <span class="form-note-fix"> — {f.fix}</span>
            </li>
          ))}
        </ul>
      </>
    );
  } else body = <p class="muted">Linting…</p>;
  const state = lint.idle
    ? 'idle'
    : lint.refusal
      ? 'refused'
      : lint.report?.ok
        ? 'ok'
        : lint.report
          ? 'findings'
          : 'pending';
  return (
    <section class={`form-lint ${state}`} aria-labelledby="form-lint-title" aria-busy={lint.pending}>
      <h2 id="form-lint-title">Spec lint{lint.pending ? ' (checking…)' : ''}</h2>
      <div aria-live="polite">
        {body}
        {blank.length > 0 && !lint.idle && (
          <p class="muted">
            Task{blank.length === 1 ? '' : 's'} {blank.join(', ')} {blank.length === 1 ? 'is' : 'are'} still blank:
            linted once {blank.length === 1 ? 'it has' : 'they have'} an instruction.
          </p>
        )}
      </div>
    </section>
  );
}
