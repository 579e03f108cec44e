import type { CompactJob, CompactWorkerEntry } from '../../domain/answer.js';
import { budgetCounts, budgetName, type BudgetRule } from '../../domain/budget.js';
import { renderCompact } from './render.js';

type Climb = NonNullable<NonNullable<CompactJob['result']>['escalation']>[number];
type RungAttempt = NonNullable<Climb['autopsy']>[number];

/** Lines of a failure account and characters of a worker's note shown per rung of an autopsy. */
const FAILURE_LINES = 6;
const NOTE_CHARS = 200;

/**
 * `gaffer status --full` for a person: the compact view, then the routing spine of the job — each
 * attempt's route and why, each climb with its autopsy, the reroutes, and each attempt's spend with
 * the budget it counted against. `budgets`: the config's (null: it could not be read).
 */
export function renderFull(job: CompactJob, budgets: readonly BudgetRule[] | null): string {
  const workers = job.result?.workers ?? [];
  const climbs = job.result?.escalation ?? [];
  const lines = [renderCompact(job)];
  if (workers.length > 0)
    lines.push(
      '  routes:',
      ...table(
        workers.map((w) => [
          w.name,
          w.runner,
          w.model ?? 'default model',
          w.entry !== undefined ? `entry ${w.entry} (${w.provider ?? '?'})` : 'no roster entry',
          routeWhy(w, job, climbs),
        ]),
      ),
    );
  if (climbs.length > 0) lines.push('  climbs:', ...renderClimbs(climbs));
  const rerouted = workers.filter((w) => w.rerouted !== undefined);
  lines.push(
    rerouted.length > 0 ? '  reroutes:' : '  reroutes: none',
    ...rerouted.map((w) => `    ${w.name}: ${w.rerouted ?? ''}`),
  );
  if (workers.length > 0) {
    lines.push(
      '  spend (each attempt, the budgets it counts in, what it cost):',
      ...table(workers.map((w) => [w.name, countedAgainst(w, budgets), w.spend ?? 'not ended'])),
    );
    const totals = job.result?.totals;
    if (totals?.spend !== undefined) lines.push(`    total: ${totals.spend}`);
  }
  return lines.join('\n');
}

/** Why an attempt ran where it did: a fix round, a climb (and from where), the task's routing; a reroute after it. */
function routeWhy(w: CompactWorkerEntry, job: CompactJob, climbs: readonly Climb[]): string {
  const climb = climbs.find((c) => c.to !== null && w.name === `${c.task}+${c.to}`);
  const task = job.tasks.find((t) => t.name === w.name);
  const why =
    w.role === 'fixer'
      ? 'fix round'
      : w.role === 'reviewer'
        ? 'review'
        : climb
          ? `climbed from ${climb.from}: ${climb.why}`
          : (task?.routed ??
            (w.entry === undefined
              ? 'the runner the task names (or the default runner): no roster routed it'
              : 'routed by the roster'));
  // the reroute's words (the hold that moved it) are under `reroutes`
  return w.rerouted !== undefined ? `${why}; then rerouted to its fallback (see reroutes)` : why;
}

/** Each climb, then the rungs of its autopsy not shown under an earlier climb of the task. */
function renderClimbs(climbs: readonly Climb[]): string[] {
  const shown = new Map<string, number>();
  return climbs.flatMap((c) => {
    const to = c.to !== null ? c.to : `returned to its spawner${c.denied ? ' (the climb was not approved)' : ''}`;
    const autopsy = c.autopsy ?? [];
    const from = shown.get(c.task) ?? 0;
    shown.set(c.task, autopsy.length);
    return [
      `    ${c.task}: ${c.from} → ${to} — ${c.why}`,
      ...autopsy.slice(from).flatMap((a, i) => renderRung(a, from + i + 1)),
    ];
  });
}

function renderRung(a: RungAttempt, n: number): string[] {
  const failures = (a.failures ?? '').split('\n').filter((l) => l.trim() !== '');
  const note = a.note.replace(/\s+/g, ' ').trim();
  return [
    `      autopsy ${n}: ${a.entry} (${a.model ?? 'default model'} on ${a.runner}) ended ${a.status}, verdict ${a.verdict}`,
    ...a.gates.map((g) => `        gate ${g.gate}: ${g.result} — ${g.detail}`),
    ...(a.verification !== null ? [`        verification: ${a.verification}`] : []),
    ...failures.slice(0, FAILURE_LINES).map((l) => `        | ${l}`),
    ...(failures.length > FAILURE_LINES ? [`        | … ${failures.length - FAILURE_LINES} more line(s)`] : []),
    ...(a.abstained !== null ? [`        abstained: ${a.abstained}`] : []),
    ...(note !== ''
      ? [`        its report ended: ${note.length > NOTE_CHARS ? `…${note.slice(-NOTE_CHARS)}` : note}`]
      : []),
  ];
}

/** The configured budgets an attempt's spend counts in: its provider's (its entry's, else its runner's key), all or its entry's. */
function countedAgainst(w: CompactWorkerEntry, budgets: readonly BudgetRule[] | null): string {
  if (budgets === null) return 'budgets unknown (the config could not be read)';
  const on = budgets.filter((b) => budgetCounts(b, w.provider ?? w.runner, w.entry ?? null));
  return on.length > 0 ? on.map(budgetName).join(', ') : 'no budget';
}

/** Rows with their columns aligned (the last one left as it is). */
function table(rows: readonly string[][]): string[] {
  const widths = rows.reduce<number[]>((acc, row) => row.map((cell, i) => Math.max(acc[i] ?? 0, cell.length)), []);
  return rows.map((row) =>
    `    ${row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join('  ')}`.trimEnd(),
  );
}
