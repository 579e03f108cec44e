// diff2html and its stylesheet, loaded only when a diff is shown (import()ed by review-file.tsx):
// the Jobs page's first paint does not pay for a diff renderer it does not use.
import { html } from 'diff2html';
import 'diff2html/bundles/css/diff2html.min.css';

/** The two layouts of a diff: old and new side by side, or one column (diff2html's `line-by-line`). */
export type DiffView = 'side-by-side' | 'line-by-line';

/** diff2html's HTML for one file's unified diff (it escapes every name and line). */
export function renderDiff(diff: string, view: DiffView): string {
  // diff2html's own file header (name, a "Viewed" box that needs its UI script) is replaced by the board's
  return html(diff, { outputFormat: view, drawFileList: false, matching: 'lines' });
}

/**
 * Makes the rendered diff reviewable: every line of the new side (added or unchanged) gets a
 * <button> in place of its line number, "Comment on line N of FILE", so a comment is one click or
 * Tab + Enter away; the tables are named; diff2html's header is dropped (the board shows its own).
 * Returns the new side's lines, for the typed-line fallback's quote.
 */
export function decorateDiff(root: HTMLElement, file: string, view: DiffView): Map<number, string> {
  const lines = new Map<number, string>();
  for (const header of root.querySelectorAll('.d2h-file-header')) header.remove();
  const tables = [...root.querySelectorAll<HTMLTableElement>('table.d2h-diff-table')];
  if (view === 'side-by-side') {
    tables.forEach((t, i) => t.setAttribute('aria-label', `${file}: ${i === 0 ? 'before (the checkpoint)' : 'after'}`));
    const after = tables[1];
    if (after)
      for (const cell of after.querySelectorAll<HTMLElement>('td.d2h-code-side-linenumber'))
        addButton(cell, cell, file, lines);
  } else {
    tables.forEach((t) => t.setAttribute('aria-label', `${file}: diff against the checkpoint`));
    for (const cell of root.querySelectorAll<HTMLElement>('td.d2h-code-linenumber')) {
      const slot = cell.querySelector<HTMLElement>('.line-num2');
      if (slot) addButton(slot, cell, file, lines);
    }
  }
  return lines;
}

function addButton(slot: HTMLElement, cell: HTMLElement, file: string, lines: Map<number, string>): void {
  const line = Number(slot.textContent?.trim() ?? '');
  if (!Number.isInteger(line) || line < 1 || slot.querySelector('button')) return;
  const row = cell.closest('tr');
  lines.set(line, row?.querySelector('.d2h-code-line-ctn')?.textContent ?? '');
  row?.setAttribute('data-review-line', String(line));
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'review-line';
  button.dataset.line = String(line);
  button.setAttribute('aria-label', `Comment on line ${line} of ${file}`);
  button.textContent = String(line);
  slot.replaceChildren(button);
}

/** Marks the new side's rows that hold a pending comment (a class, and the button says so). */
export function markCommented(root: HTMLElement, file: string, counts: ReadonlyMap<number, number>): void {
  for (const button of root.querySelectorAll<HTMLButtonElement>('button.review-line')) {
    const line = Number(button.dataset.line);
    const n = counts.get(line) ?? 0;
    button.closest('tr')?.classList.toggle('review-commented', n > 0);
    button.setAttribute(
      'aria-label',
      `Comment on line ${line} of ${file}${n > 0 ? ` (${n} pending comment${n > 1 ? 's' : ''})` : ''}`,
    );
  }
}
