// spec 05 "Routing that learns, honestly": with `routing.learn: true`, the rung of a type's cost ladder
// a task starts on, read from the outcomes each entry has had for that type. Pure: the figures come in.
//
// The rule skips a rung only when it *demonstrably* fails `min_acceptance` (the Wilson upper bound is
// below it); a rung that clears it (lower bound at or above) or is undecided is where the task starts.
// Skipping the undecided too would save more but on evidence that does not show the rung fails, and a
// skipped rung gets no more outcomes to correct the mistake — so the skip must already be earned.
import type { RosterEntry } from './roster.js';
import type { RungFigures } from './route.js';

/** Outcomes an entry needs for a type before the learner may skip it; below this it never skips. */
export const LEARN_MIN_SAMPLES = 30;

/** The Wilson score interval of `accepted` out of `total` (z = 1.96: 95 %); no outcomes → [0, 1]. */
export function wilsonInterval(accepted: number, total: number, z = 1.96): { lower: number; upper: number } {
  if (total <= 0) return { lower: 0, upper: 1 };
  const p = accepted / total;
  const z2 = z * z;
  const centre = (p + z2 / (2 * total)) / (1 + z2 / total);
  const half = (z * Math.sqrt((p * (1 - p)) / total + z2 / (4 * total * total))) / (1 + z2 / total);
  // clamped: at 0/n and n/n rounding can put a bound a hair outside [0, 1]
  return { lower: Math.max(0, centre - half), upper: Math.min(1, centre + half) };
}

/** Where a task starts and why, in the figures that decided it (they go in the ask/attempt record). */
export interface LearnedStart {
  /** The rung to start on. */
  entry: RosterEntry;
  /** The cheaper rungs passed over, each demonstrably below `min_acceptance`, cheapest first. */
  skipped: RungFigures[];
  /** The chosen rung's figures; null when it has no outcomes for the type. */
  figures: RungFigures | null;
  /** One sentence with the figures. */
  why: string;
}

/**
 * spec 05: the rung of `ladder` (cheapest first, from `ladderOf`) a task starts on, given each entry's
 * outcomes for the task's type (`stats`, keyed by entry id). Null for an empty ladder. Never skips a
 * rung with fewer than `LEARN_MIN_SAMPLES` outcomes, never routes past the ladder: when every rung
 * fails, the top one is where it starts.
 */
export function learnedStart(
  ladder: readonly RosterEntry[],
  stats: ReadonlyMap<string, { accepted: number; total: number }>,
  minAcceptance: number,
): LearnedStart | null {
  const skipped: RungFigures[] = [];
  const min = String(minAcceptance);
  const start = (entry: RosterEntry, figures: RungFigures | null, reason: string): LearnedStart => {
    const passed = skipped.map(
      (f) => `${f.entry} (${f.accepted}/${f.total} accepted, upper bound ${shown(f.upper, minAcceptance)} < ${min})`,
    );
    return {
      entry,
      skipped,
      figures,
      why: `learned: ${passed.length > 0 ? `skipped ${passed.join(', ')}; ` : ''}${reason}`,
    };
  };
  for (const [i, entry] of ladder.entries()) {
    const s = stats.get(entry.id);
    const f = s
      ? { entry: entry.id, accepted: s.accepted, total: s.total, ...wilsonInterval(s.accepted, s.total) }
      : null;
    if (f === null || f.total < LEARN_MIN_SAMPLES)
      return start(entry, f, `${entry.id} has ${f?.total ?? 0} outcomes (< ${LEARN_MIN_SAMPLES}), too few to skip`);
    const counts = `${f.accepted}/${f.total}`;
    if (f.lower >= minAcceptance)
      return start(entry, f, `${entry.id} clears ${min} (${counts}, lower bound ${shown(f.lower, minAcceptance)})`);
    if (f.upper >= minAcceptance) {
      return start(
        entry,
        f,
        `${entry.id} is undecided at ${min} (${counts}, bounds ${shown(f.lower, minAcceptance)}–${shown(f.upper, minAcceptance)})`,
      );
    }
    if (i === ladder.length - 1) {
      return start(
        entry,
        f,
        `${entry.id}, the top rung, fails ${min} too (${counts}, upper bound ${shown(f.upper, minAcceptance)}) but the ladder ends there`,
      );
    }
    skipped.push(f);
  }
  return null;
}

/** A bound in two decimals, or four when two would print it equal to `min` though it is not. */
function shown(x: number, min: number): string {
  const two = x.toFixed(2);
  return Number(two) === min && x !== min ? x.toFixed(4) : two;
}
