// spec 05 "Acceptance rate": the gates-passed rate per (task type, model), from the outcome log's
// counts, with its denominators said. Pure: the store counts, this decides what the counts mean.
import type { OutcomeStatus } from './outcome.js';

/** How many logged outcomes share one (type, runner, model, provider, status). */
export interface OutcomeCount {
  type: string;
  runner: string;
  model: string | null;
  provider: string | null;
  status: OutcomeStatus;
  count: number;
}

/** The acceptance of one (type, model) as served by one runner and provider. */
export interface AcceptanceRow {
  type: string;
  /** Null: nothing named or reported a model (a shell task, a runner's own default). */
  model: string | null;
  runner: string;
  provider: string | null;
  /** Outcomes whose gates passed. */
  passed: number;
  /** The denominator: every outcome of the group but `not_dispatched` ones. */
  outcomes: number;
  /** passed / outcomes, 0..1, to three places. */
  rate: number;
}

/** `acceptance` and what it was counted from (`gaffer stats`, `GET /api/stats`). */
export interface AcceptanceReport {
  /** One row per (type, model, runner, provider), sorted by type, model, runner, provider (nulls last). */
  acceptance: AcceptanceRow[];
  /** Every outcome logged, `not_dispatched` ones included. */
  outcomes_total: number;
  /** Outcomes logged but left out of every denominator. */
  excluded: { not_dispatched: number };
  /** The denominator in words. */
  note: string;
}

/** The denominator rule, said where the figures are. */
export const ACCEPTANCE_NOTE = 'rate = passed / outcomes per (type, model, runner, provider); not_dispatched outcomes (an approval ask denied: nothing ran) are logged but not counted';

/** The acceptance report from the log's counts; no counts is an empty report. */
export function buildAcceptance(counts: readonly OutcomeCount[]): AcceptanceReport {
  const groups = new Map<string, AcceptanceRow>();
  let total = 0;
  let notDispatched = 0;
  for (const c of counts) {
    total += c.count;
    if (c.status === 'not_dispatched') {
      notDispatched += c.count;
      continue;
    }
    const key = JSON.stringify([c.type, c.model, c.runner, c.provider]);
    const row = groups.get(key) ?? { type: c.type, model: c.model, runner: c.runner, provider: c.provider, passed: 0, outcomes: 0, rate: 0 };
    row.outcomes += c.count;
    if (c.status === 'passed') row.passed += c.count;
    groups.set(key, row);
  }
  const acceptance = [...groups.values()].map((r) => ({ ...r, rate: Math.round((r.passed / r.outcomes) * 1000) / 1000 })).sort(compareRows);
  return { acceptance, outcomes_total: total, excluded: { not_dispatched: notDispatched }, note: ACCEPTANCE_NOTE };
}

function compareRows(a: AcceptanceRow, b: AcceptanceRow): number {
  return compareText(a.type, b.type) || compareText(a.model, b.model) || compareText(a.runner, b.runner) || compareText(a.provider, b.provider);
}

// code-unit order, not the locale's: the same rows sort the same on every machine; null goes last
function compareText(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}
