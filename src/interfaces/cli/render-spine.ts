import { iso } from '../../domain/budget.js';
import type { BudgetShown, SpineReport } from '../../engine/maintenance/doctor-spine.js';

/** Doctor's routing spine for a person: the roster and its source, ladders, learning, approval, budgets, the breaker. */
export function renderSpine(s: SpineReport): string[] {
  return [
    ...(s.store_note !== null ? [`(${s.store_note})`] : []),
    ...renderRoster(s),
    ...renderLearning(s),
    ...renderApproval(s),
    ...renderBudgets(s),
    renderBreaker(s),
  ];
}

function renderRoster(s: SpineReport): string[] {
  const { roster } = s;
  if (roster.error !== undefined) return [`roster: ${roster.note}: ${roster.error}`];
  if (roster.source === null) return [`roster: ${roster.note}`];
  const header = ['entry', 'runner', 'model', 'billing', 'cost', 'provider', 'takes'];
  const rows = roster.entries.map((e) => [
    e.entry,
    e.runner,
    e.model ?? 'default model',
    e.billing,
    e.cost,
    e.provider,
    e.tasks.join(','),
  ]);
  const extras = roster.entries.map((e) =>
    [e.fallback !== null ? `fallback: ${e.fallback}` : '', e.approve ? 'approve: true' : '', e.warning ?? '']
      .filter(Boolean)
      .join('; '),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (row: string[], extra = '') =>
    `    ${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ')}  ${extra}`.trimEnd();
  return [
    `roster: ${roster.entries.length} entr${roster.entries.length === 1 ? 'y' : 'ies'} from ${roster.source} — ${roster.note}`,
    line(header),
    ...rows.map((row, i) => line(row, extras[i])),
    'ladders (cheapest first; a rung that fails climbs one up, a second failed rung returns the task):',
    ...s.ladders.map(
      (l) => `    ${l.type}: ${l.rungs.length > 0 ? l.rungs.join(' → ') : 'no entry whose runner this build runs'}`,
    ),
  ];
}

function renderLearning(s: SpineReport): string[] {
  const { learning } = s;
  const head = learning.on
    ? `learning: on, min acceptance ${learning.min_acceptance} (a rung is skipped only once ${learning.min_samples}+ outcomes show it below that)`
    : `learning: off (routing.learn)${s.roster.source !== null ? " — a task starts on the roster's first entry taking its type" : ''}`;
  return [
    head,
    ...learning.figures.map((f) => {
      const ladder = s.ladders.find((l) => l.type === f.type);
      const figures = f.entries.map((e) => `${e.entry} ${e.accepted}/${e.total}`).join(', ');
      return `    ${f.type}: ${figures || 'no rung'}${ladder?.starts_on ? ` — starts on ${ladder.starts_on} (${ladder.why ?? ''})` : ''}`;
    }),
  ];
}

function renderApproval(s: SpineReport): string[] {
  const { approval } = s;
  return [
    `approval: default ${approval.default}, an unanswered ask is no after ${approval.timeout_s} s`,
    ...(approval.asks.length > 0
      ? [`    asks first: ${approval.asks.map((a) => `${a.entry} (${a.why})`).join(', ')}`]
      : []),
    ...(approval.no_ask.length > 0 ? [`    runs without asking: ${approval.no_ask.join(', ')}`] : []),
  ];
}

function renderBudgets(s: SpineReport): string[] {
  const suspended = s.suspensions.map((p) => `    provider ${p.provider} suspended until ${iso(p.until)}: ${p.why}`);
  if (s.budgets.length === 0) return ['budgets: none configured', ...suspended];
  return ['budgets:', ...s.budgets.map((b) => `    ${describeBudget(b)}`), ...suspended];
}

/** `<name>: 0.3 of 0.1 seconds spent — spent: held until …; resets …`. */
function describeBudget(b: BudgetShown): string {
  const unknown = b.unknown > 0 ? ` (+${b.unknown} attempt(s) of unknown cost)` : '';
  const held =
    b.state === 'ok'
      ? ''
      : ` — ${b.state === 'spent' ? 'spent: held' : 'ahead of pace: an unattended job waits'} until ${b.pause_until !== null ? iso(b.pause_until) : 'further notice'}`;
  const resets = b.resets !== null ? `resets ${iso(b.resets)}` : 'rolling: each spend counts for 5 h';
  return `${b.name}: ${b.spent} of ${b.limit} ${b.unit} spent${unknown}${held}; ${resets}`;
}

function renderBreaker(s: SpineReport): string {
  const { breaker } = s;
  return breaker.open
    ? `breaker: OPEN — ${breaker.why}`
    : `breaker: closed — ${breaker.why}; cool-down ${breaker.cooldown_s} s`;
}
