import type { ComponentChildren } from 'preact';
import type { FieldNote } from './form-draft.js';

/** The aria attributes of a control with a hint and the server's notes about it. */
export function describedBy(
  id: string,
  hint: boolean,
  notes: readonly FieldNote[],
): { 'aria-describedby'?: string; 'aria-invalid'?: 'true' } {
  const ids = [hint ? `${id}-hint` : '', notes.length ? `${id}-notes` : ''].filter(Boolean).join(' ');
  return {
    ...(ids ? { 'aria-describedby': ids } : {}),
    ...(notes.some((n) => n.kind === 'refused') ? { 'aria-invalid': 'true' as const } : {}),
  };
}

/** What the server said about one field, next to it: refusals first, then lint findings with their fix. */
export function FieldNotes({ id, notes }: { id: string; notes: readonly FieldNote[] }) {
  if (notes.length === 0) return null;
  const sorted = [...notes].sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'refused' ? -1 : 1));
  return (
    <ul class="form-notes" id={`${id}-notes`}>
      {sorted.map((n, i) => (
        <li key={i} class={`form-note ${n.kind}`}>
          <span class="form-note-kind">{n.kind === 'refused' ? 'Refused:' : 'Lint:'}</span> {n.text}
          {n.fix && <span class="form-note-fix"> — {n.fix}</span>}
        </li>
      ))}
    </ul>
  );
}

/**
 * A labelled control: the label, the control (given `id`, and `describedBy(...)` for its hint and
 * notes), a hint, and what the server said about it.
 */
export function Field(props: {
  id: string;
  label: string;
  hint?: ComponentChildren;
  notes?: readonly FieldNote[];
  wide?: boolean;
  children: ComponentChildren;
}) {
  const notes = props.notes ?? [];
  return (
    <div class={`form-field${props.wide ? ' wide' : ''}${notes.some((n) => n.kind === 'refused') ? ' refused' : ''}`}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && (
        <p class="form-hint" id={`${props.id}-hint`}>
          {props.hint}
        </p>
      )}
      <FieldNotes id={props.id} notes={notes} />
    </div>
  );
}
