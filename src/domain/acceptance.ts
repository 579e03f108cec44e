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

/** The acceptance of one (type, model) — spec 02's `{"accepted", "total", "rate"}`, with who served it. */
export interface AcceptanceEntry {
  type: string;
  /** Null: nothing named or reported a model (a shell task, a runner's own default): the key names the runner instead. */
  model: string | null;
  /** The runners and providers its outcomes came from (a model may be served by more than one). */
  runners: string[];
  providers: string[];
  /** Outcomes whose gates passed. */
  accepted: number;
  /** The denominator: every outcome of the group but `not_dispatched` ones. */
  total: number;
  /** accepted / total, 0..1, to three places. */
  rate: number;
}

/** `acceptance` and what it was counted from (`gaffer stats`, `GET /api/stats`). */
export interface AcceptanceReport {
  /** By `<type>/<model>` (spec 02; a null model: `<type>/(<runner> default)`), keys in sorted order. */
  acceptance: Record<string, AcceptanceEntry>;
  /** Every outcome logged, `not_dispatched` ones included. */
  outcomes_total: number;
  /** Outcomes logged but left out of every denominator. */
  excluded: { not_dispatched: number; abstained: number };
  /** The denominator in words. */
  note: string;
}

/** The denominator rule, said where the figures are. */
export const ACCEPTANCE_NOTE =
  'rate = accepted / total per (type, model), one outcome per rung a task ran on (a rung that never got a process is no outcome); not_dispatched (nothing of the task ran: an approval ask denied, or cancelled, held or unlaunchable before any attempt started) and abstained (the worker escalated the task as beyond its brief) are logged but not counted';

/** The key of a (type, model): spec 02's `fix/qwen3:8b`; a null model is the runner's default. */
export function acceptanceKey(type: string, model: string | null, runner: string): string {
  return `${type}/${model ?? `(${runner} default)`}`;
}

/** The acceptance report from the log's counts; no counts is an empty report. */
export function buildAcceptance(counts: readonly OutcomeCount[]): AcceptanceReport {
  const groups = new Map<string, AcceptanceEntry>();
  let total = 0;
  let notDispatched = 0;
  let abstained = 0;
  for (const c of counts) {
    total += c.count;
    if (c.status === 'not_dispatched') {
      notDispatched += c.count;
      continue;
    }
    if (c.status === 'abstained') {
      abstained += c.count;
      continue;
    }
    const key = acceptanceKey(c.type, c.model, c.runner);
    const entry = groups.get(key) ?? {
      type: c.type,
      model: c.model,
      runners: [],
      providers: [],
      accepted: 0,
      total: 0,
      rate: 0,
    };
    entry.total += c.count;
    if (c.status === 'passed') entry.accepted += c.count;
    if (!entry.runners.includes(c.runner)) entry.runners.push(c.runner);
    if (c.provider !== null && !entry.providers.includes(c.provider)) entry.providers.push(c.provider);
    groups.set(key, entry);
  }
  // code-unit order, not the locale's: the same report reads the same on every machine
  const keys = [...groups.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const acceptance: Record<string, AcceptanceEntry> = {};
  for (const key of keys) {
    const e = groups.get(key) as AcceptanceEntry;
    acceptance[key] = {
      ...e,
      runners: e.runners.sort(),
      providers: e.providers.sort(),
      rate: Math.round((e.accepted / e.total) * 1000) / 1000,
    };
  }
  return {
    acceptance,
    outcomes_total: total,
    excluded: { not_dispatched: notDispatched, abstained },
    note: ACCEPTANCE_NOTE,
  };
}
