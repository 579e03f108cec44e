// Issue 33 "Verification is visible": where a job's checking time went — each run the verification
// made (the suite itself, the checkpoint's baseline, flaky reruns, the checkpoint's tests, the full
// suite, command criteria), summed by kind — and the verdict's words when it came to much more than
// the suite itself.

/** Checking past this many times the suite's own run is said on the verdict, with why. */
export const SLOW_CHECKING_FACTOR = 5;

/** The job's checking time, on its final verification. */
export interface CheckingJson {
  /** Every run's seconds together. */
  total_s: number;
  /** The suite's own first run: what the rest is measured against. */
  suite_s: number;
  /** By kind, in the order each kind first ran: how many runs and their seconds. */
  runs: { what: string; n: number; s: number }[];
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/** The runs summed by kind; null when the suite itself never ran (nothing to measure against). */
export function checkingOf(runs: readonly { what: string; s: number }[]): CheckingJson | null {
  const suite = runs.find((r) => r.what === 'verification');
  if (suite === undefined) return null;
  const byKind = new Map<string, { what: string; n: number; s: number }>();
  for (const r of runs) {
    const kind = byKind.get(r.what) ?? { what: r.what, n: 0, s: 0 };
    kind.n++;
    kind.s += r.s;
    byKind.set(r.what, kind);
  }
  return {
    total_s: round1(runs.reduce((sum, r) => sum + r.s, 0)),
    suite_s: round1(suite.s),
    runs: [...byKind.values()].map((k) => ({ ...k, s: round1(k.s) })),
  };
}

/** `checking took 48 s, 16× the suite (3 s): 2 verification 6 s, baseline 3 s, …` when past the factor; else null. */
export function describeSlowChecking(c: CheckingJson | undefined): string | null {
  if (c === undefined || c.total_s <= SLOW_CHECKING_FACTOR * Math.max(c.suite_s, 0.1)) return null;
  const times = Math.round(c.total_s / Math.max(c.suite_s, 0.1));
  const parts = c.runs.map((r) => `${r.n > 1 ? `${r.n}× ` : ''}${r.what} ${r.s} s`);
  return `checking took ${c.total_s} s, ${times}× the suite itself (${c.suite_s} s): ${parts.join(', ')}`;
}
