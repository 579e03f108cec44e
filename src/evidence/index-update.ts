import { isQuotedPath } from '../domain/escaped-path.js';
import type { IndexState } from './shadow-index.js';
import { joinNul } from './shadow-index.js';
import { classifyPath, type StatFacts } from './walk.js';
import type { WarmState } from './warm-state.js';

/** What the listing decided: the paths the snapshot holds. */
export interface ListingPlan {
  wanted: Set<string>;
  /** Same listing as the warm checkpoint's: its path set was reused. */
  unchanged: boolean;
  /**
   * The warm checkpoint's path set changed by exactly these (quick-look.ts): only they are looked
   * at, besides the stat-dirty paths and those left out last time, instead of every wanted path.
   */
  delta?: { added: string[]; deleted: string[] };
}

/** Paths classified per chunk streamed to update-index. */
const CHUNK = 2000;

/**
 * One checkpoint's changes to the shadow index: which paths to hash (new in the listing, or
 * stat-dirty), which to drop, which are recorded by stat (over the size cap) or skipped.
 */
export class IndexUpdate {
  /** Paths streamed to update-index as content. */
  readonly additions: string[] = [];
  /** Paths to remove from the index once the additions are in. */
  readonly removals: string[] = [];
  /** Files over the size cap, by stat. */
  readonly large = new Map<string, StatFacts>();
  /** Wanted paths that are special files (or became one). */
  readonly skipped = new Set<string>();
  /** Every path looked at (lstat): the rest of the wanted paths are in the index, unchanged. */
  readonly looked = new Set<string>();
  /** lstat facts of the paths streamed as content, in their order (racily clean entries are told by their mtimes). */
  readonly addedFacts: StatFacts[] = [];
  readonly #workspace: string;
  readonly #sizeCapBytes: number;
  readonly #indexed: IndexState;
  readonly #warm: WarmState | null;

  readonly #warmHad: (p: string) => boolean;

  /** `warmHad`: what the warm path set held, when it has since been changed in place (quick-look.ts `withChange`). */
  constructor(
    workspace: string,
    sizeCapBytes: number,
    indexed: IndexState,
    warm: WarmState | null,
    warmHad: ((p: string) => boolean) | null = null,
  ) {
    this.#workspace = workspace;
    this.#sizeCapBytes = sizeCapBytes;
    this.#indexed = indexed;
    this.#warm = warm;
    this.#warmHad = warmHad ?? ((p) => warm?.wanted.has(p) === true);
  }

  /** Whether the index held the path when this checkpoint started. */
  inIndex(p: string): boolean {
    if (this.#indexed.cached !== null) return this.#indexed.cached.has(p);
    return this.#warm !== null && this.#warmHad(p) && !this.#warm.outside.has(p);
  }

  /**
   * Streams the paths to hash, NUL-terminated. Warm, the stat-dirty paths and those left out
   * last time go first, while the listing is still running; the rest once the listing is known.
   */
  async *contentPaths(planned: Promise<ListingPlan>): AsyncIterable<string> {
    const warm = this.#warm;
    if (warm !== null) yield* this.#classify([...new Set([...this.#indexed.dirty, ...warm.outside])]);
    const plan = await planned;
    if (plan.unchanged && warm !== null) return;
    const rest: string[] = [];
    for (const p of plan.delta?.added ?? plan.wanted) {
      if (!this.looked.has(p) && (!this.inIndex(p) || this.#indexed.dirty.has(p))) rest.push(p);
    }
    yield* this.#classify(rest);
  }

  /** Once the listing is known: drop indexed paths it no longer holds, forget those it never held. */
  settle(plan: ListingPlan, dropped: Set<string>): void {
    const { wanted } = plan;
    // an unchanged listing is the warm checkpoint's path set, which holds every indexed path
    if (!(plan.unchanged && this.#warm !== null)) {
      const indexed = plan.delta?.deleted ?? this.#indexed.cached ?? this.#warm?.wanted ?? new Set<string>();
      for (const p of indexed) if (!wanted.has(p) && this.inIndex(p)) this.removals.push(p);
    }
    for (const p of this.additions) if (!wanted.has(p) && !this.inIndex(p)) this.removals.push(p);
    for (const p of dropped) {
      if (this.inIndex(p)) this.removals.push(p);
      if (wanted.has(p)) this.skipped.add(p);
    }
    for (const p of this.looked) {
      if (wanted.has(p)) continue;
      this.large.delete(p);
      this.skipped.delete(p);
    }
  }

  /**
   * What this checkpoint changed in the index — the paths it added, the indexed ones it removed —
   * when that alone is the tree's change: every path hashed was one the index did not hold, so no
   * indexed entry can have changed content. Null when an indexed path was hashed again (only git
   * can say whether its content changed). Call once the removals are settled.
   */
  indexDelta(dropped: Set<string>): { added: string[]; deleted: string[] } | null {
    const removed = new Set(this.removals);
    const added: string[] = [];
    for (const p of this.additions) {
      if (this.inIndex(p)) return null;
      if (!dropped.has(p) && !removed.has(p)) added.push(p);
    }
    return { added, deleted: [...removed].filter((p) => this.inIndex(p)) };
  }

  /** Wanted paths not in the index after this checkpoint (the next one looks at them again). */
  outside(wanted: Set<string>, dropped: Set<string>): Set<string> {
    const out = new Set<string>();
    const added = new Set(this.additions);
    for (const p of this.looked) if (wanted.has(p) && (!added.has(p) || dropped.has(p))) out.add(p);
    return out;
  }

  async *#classify(paths: string[]): AsyncIterable<string> {
    for (let i = 0; i < paths.length; i += CHUNK) {
      const chunk: string[] = [];
      for (const p of paths.slice(i, i + CHUNK)) {
        this.looked.add(p);
        // a name that is not UTF-8, listed quoted: no file has that name, it is listed as skipped
        const kind = isQuotedPath(p)
          ? ({ kind: 'skipped' } as const)
          : classifyPath(this.#workspace, p, this.#sizeCapBytes);
        if (kind.kind === 'content') {
          chunk.push(p);
          this.addedFacts.push(kind.facts);
          continue;
        }
        if (kind.kind === 'large') this.large.set(p, kind.facts);
        if (kind.kind === 'skipped') this.skipped.add(p);
        if (this.inIndex(p)) this.removals.push(p);
      }
      this.additions.push(...chunk);
      if (chunk.length > 0) yield joinNul(chunk);
    }
  }
}
