/*
 * issue 33 "Small on real projects": the compact answer names each failing test id once and shows
 * every list bounded, with `<list>_count` when it shows fewer than it holds. `?full=1` keeps every
 * list whole.
 *
 * Said once: the id lists are read in the answer's order (the verification's VERIFICATION_ID_LISTS,
 * then the original tests' failures, then each earlier round's); a list shows only the ids no list
 * before it held (an id an earlier list counted but cut stays counted there). gaffer's own texts — the verdict, the summaries, the proof's details, a climb's
 * why — name a listed id by where it is listed (`see new_failures`). The output tail is the runner's
 * own words and keeps its failing lines whole.
 */

const ELLIPSIS = '…';

/** Items a bounded list shows; the rest are counted. */
export const LIST_SHOWN = 10;

/** A list cut to `max` items, and its length when that is not all of it. */
export interface Bounded<T> {
  shown: T[];
  /** The list's length, when `shown` is not all of it. */
  count?: number;
}

/** The first `max` items of `list`, with the list's length when some were left out. */
export function bound<T>(list: readonly T[], max: number = LIST_SHOWN): Bounded<T> {
  return list.length > max ? { shown: list.slice(0, max), count: list.length } : { shown: [...list] };
}

/**
 * Puts what a list shows on `row` as `key`, and `key_count` when it shows fewer than it holds; a
 * list that shows nothing (empty, or all its ids named before) is left out.
 */
export function putBounded<R extends object>(row: R, key: string, shown: Bounded<string>): void {
  const out = row as Record<string, unknown>;
  if (shown.shown.length > 0) out[key] = shown.shown;
  else delete out[key];
  if (shown.count !== undefined) out[`${key}_count`] = shown.count;
  else delete out[`${key}_count`];
}

/** Bounds each named list of `row` in place (LIST_SHOWN items, `<key>_count`): for lists of paths and words, not ids. */
export function boundLists<R extends object>(row: R, keys: readonly string[], max: number = LIST_SHOWN): R {
  const out = row as Record<string, unknown>;
  for (const key of keys) {
    const list = out[key];
    if (Array.isArray(list) && list.length > max) {
      out[key] = list.slice(0, max);
      out[`${key}_count`] = list.length;
    }
  }
  return row;
}

/** Where a listed id is named: its list's path in the verification and its place there. */
interface Place {
  list: string;
  index: number;
}

/** The failing ids the compact answer has named, and where: each id is named by the first list that shows it. */
export class IdLedger {
  readonly #named = new Map<string, Place>();
  /** Every id an earlier list held, shown or counted: a later list does not show it again. */
  readonly #held = new Set<string>();

  /**
   * The ids of `list` no earlier list held, at most `max`, now named by `where`; `count` is the
   * list's length whenever fewer are shown (cut, or held already).
   */
  say(where: string, list: readonly string[] | undefined, max: number = LIST_SHOWN): Bounded<string> {
    if (list === undefined || list.length === 0) return { shown: [] };
    const fresh = [...new Set(list)].filter((id) => !this.#held.has(id)).slice(0, max);
    fresh.forEach((id, index) => this.#named.set(id, { list: where, index }));
    for (const id of list) this.#held.add(id);
    return fresh.length === list.length ? { shown: fresh } : { shown: fresh, count: list.length };
  }

  /** Where `id` is named (`new_failures[0]`), or null when no list names it. */
  placeOf(id: string): string | null {
    const place = this.#named.get(id);
    return place ? `${place.list}[${place.index}]` : null;
  }

  /** Names `id` as said by `where` (an entry that carries it itself). */
  note(id: string, where: string): void {
    if (!this.#named.has(id)) this.#named.set(id, { list: where, index: 0 });
    this.#held.add(id);
  }

  /**
   * `text` with each run of named ids (`a; b`, `a, b`) replaced by where they are listed:
   * `with the original tests, 2 fail: see original_tests.failures`. Ids match whole, not inside words.
   * Ids named by `keepNamedBy` stay as they are.
   */
  referTo(text: string, keepNamedBy?: string): string {
    if (this.#named.size === 0 || text === '') return text;
    // the text that names them itself (the verdict's first words) keeps them
    const ids = [...this.#named.keys()].filter(
      (id) => text.includes(id) && (keepNamedBy === undefined || this.#named.get(id)?.list !== keepNamedBy),
    );
    if (ids.length === 0) return text;
    // the longest first, so an id that contains another is matched whole
    const one = `(?:${ids
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join('|')})`;
    const run = new RegExp(`(?<=^|[\\s(:;,\\[])${one}(?:[;,] ?${one})*(?=$|[\\s;,)\\]…]|\\.(?:\\s|$))`, 'g');
    const each = new RegExp(one, 'g');
    return text.replace(run, (found) => {
      const lists = [...new Set([...found.matchAll(each)].map((m) => this.#named.get(m[0])?.list ?? ''))].filter(
        Boolean,
      );
      return `see ${lists.join(', ')}`;
    });
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `text` in at most `max` chars, marked `…` where it was cut. */
export function cutText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}${ELLIPSIS}` : text;
}
