import type { CompactJob, CompactWorkerEntry } from '../../domain/answer.js';
import type { OperationsStats, StatsAnswer, WaitAnswer } from '../../engine/engine.js';
import type { JobEvent } from '../../domain/events.js';
import type { RunnerRow } from './api.js';

/** The first `max` items, the rest counted; `total` is the list's length when the answer showed only part of it (issue 33's `<list>_count`). */
const list = (items: readonly string[] | undefined, max = 8, total?: number): string => {
  const arr = items ?? [];
  const all = Math.max(total ?? arr.length, arr.length);
  const shown = arr.slice(0, max);
  return all > shown.length
    ? `${shown.join(', ')}${shown.length > 0 ? ' ' : ''}+${all - shown.length} more`
    : shown.join(', ');
};

/** Failing test ids shown per kind (new, pre-existing, flaky); the rest is counted. */
const FAILURES_SHOWN = 5;

/** A worker's duration: how long it took, or how long it has run so far; nothing when it never ran. */
function describeDuration(w: CompactWorkerEntry): string {
  if (typeof w.duration_s !== 'number') return '';
  return w.status === 'running' ? `${w.duration_s} s so far` : `${w.duration_s} s`;
}

/** The compact answer for a person: status, verdict, workers, changes, verification (with the failing ids), proof. */
export function renderCompact(job: CompactJob): string {
  const lines: string[] = [];
  const duration = job.duration_s !== null ? `  ${job.duration_s.toFixed(1)} s` : '';
  lines.push(`job ${job.id}  ${job.status}${duration}  ${job.title}`);
  lines.push(`  workspace: ${job.workspace}`);
  if (job.phase) lines.push(`  phase: ${job.phase}`);
  if (job.verdict) lines.push(`  verdict: ${job.verdict}`);
  if (job.asks) {
    const open = job.asks.filter((a) => a.answer === null).map((a) => a.task);
    lines.push(
      `  asks: ${job.asks.map((a) => `${a.task} ${a.answer === null ? 'open' : a.answer ? 'yes' : `no${a.answered_by === 'timeout' ? ' (no answer in time)' : ''}`}`).join(', ')}${open.length > 0 ? ` — gaffer approve ${job.id} [--task NAME]… [--deny]; gaffer asks shows why` : ''}`,
    );
  }
  // a parallel job's phases are batches (`a + b`); an impact order is one task after another (spec 07)
  if (job.task_order)
    lines.push(
      `  task order: ${job.task_order.by === 'phase' ? job.task_order.phases.map((phase) => phase.join(' + ')).join(' → ') : job.task_order.to.join(' → ')} (${job.task_order.why})`,
    );
  if (job.objectives) {
    const named = job.objectives.named.map((o) => `${o.id} ${o.impact}`).join(', ');
    lines.push(`  objectives (${job.objectives.file}): ${named || 'none named by the tasks'}`);
    for (const w of job.objectives.warnings) lines.push(`    warning: ${w}`);
    for (const e of job.objectives.evidence ?? [])
      lines.push(
        `    evidence: ${e.objective} ${e.status}, ${e.files_changed.length} file(s), confidence ${e.confidence}`,
      );
  }
  const result = job.result;
  const workers = result?.workers ?? [];
  if (workers.length > 0) {
    lines.push('  workers:');
    for (const w of workers) {
      const extra = [
        w.node ? `on node ${w.node}` : '',
        w.observed ? `changed ${w.observed}` : '',
        w.state ? `state ${w.state}` : '',
        w.error ? `error: ${w.error}` : '',
      ]
        .filter(Boolean)
        .join('; ');
      lines.push(
        `    ${w.name.padEnd(14)} ${w.runner.padEnd(8)} ${w.status.padEnd(10)} ${(w.outcome ?? '').padEnd(15)} ${describeDuration(w)}${extra ? `  ${extra}` : ''}`.trimEnd(),
      );
    }
  }
  if (job.progress) {
    const waiting = Object.entries(job.progress).filter(([name]) => !workers.some((w) => w.name === name));
    // a worker held before its process (a budget, a suspended provider) says what holds it and until when
    for (const [name, p] of waiting)
      lines.push(
        `    ${name.padEnd(14)} ${'-'.padEnd(8)} ${p.state ? `${p.state}${p.why ? `: ${p.why}` : ''}` : p.last_event}`,
      );
  }
  if (job.warnings) for (const w of job.warnings) lines.push(`  warning: ${w}`);
  if (job.follow_up)
    lines.push(
      `  follow-up of: ${job.follow_up.job} ${job.follow_up.task} (${job.follow_up.resumed ? 'resumed its session' : 'new session, told the diff'})`,
    );
  if (job.merge_of)
    lines.push(
      `  merge of: ${job.merge_of.job}${job.merge_of.task ? ` ${job.merge_of.task}` : ''} (its worktrees say what was merged)`,
    );
  if (result?.totals?.spend) lines.push(`  spend: ${result.totals.spend}`);
  const changes = result?.changes;
  if (changes) {
    lines.push(`  changes (${changes.source}, checkpoint ${changes.checkpoint}): ${changes.count} file(s)`);
    if (changes.added?.length) lines.push(`    added:    ${list(changes.added, 8, changes.added_count)}`);
    if (changes.modified?.length) lines.push(`    modified: ${list(changes.modified, 8, changes.modified_count)}`);
    if (changes.deleted?.length) lines.push(`    deleted:  ${list(changes.deleted, 8, changes.deleted_count)}`);
    if (changes.verification_wrote?.length)
      lines.push(`    verification wrote: ${list(changes.verification_wrote, 8, changes.verification_wrote_count)}`);
    if (changes.skipped?.length) lines.push(`    skipped: ${list(changes.skipped, 8, changes.skipped_count)}`);
  }
  if (result?.claimed_only?.length)
    lines.push(`  claimed only (not on disk): ${list(result.claimed_only, 8, result.claimed_only_count)}`);
  const wt = result?.worktrees;
  if (wt) {
    lines.push(`  worktrees (base ${wt.base.slice(0, 12)}, merge ${wt.merge}):`);
    for (const t of wt.tasks) {
      const where = t.path ? `kept at ${t.path}` : 'removed';
      const merge = t.merge
        ? `  ${t.merge}${t.conflict_files?.length ? ` in ${list(t.conflict_files, 8, t.conflict_files_count)}` : ''}`
        : '';
      lines.push(
        `    ${t.task.padEnd(14)} ${t.branch}  ${t.files_count ?? t.files.length} file(s)  worktree ${where}${merge}${t.verification ? `  (${t.verification.summary})` : ''}`,
      );
      for (const note of [...(t.setup?.deps ?? []), ...(t.setup?.command ? [`setup ${t.setup.command}`] : [])])
        lines.push(`      ${note}`);
    }
    const sequential = wt.classes.filter((c) => c.class === 'sequential');
    if (sequential.length > 0)
      lines.push(`    sequential: ${sequential.map((c) => `${c.task} (${c.why})`).join('; ')}`);
    for (const c of wt.predicted_conflicts)
      lines.push(`    predicted conflict: ${c.tasks.join(' & ')} both changed ${list(c.files)}`);
    for (const m of wt.merges)
      lines.push(
        `    merged: ${m.tasks.join(', ') || 'nothing'} → ${m.applied ? 'verified and applied to the workspace' : `not applied: ${m.why ?? ''}`}${m.path ? ` (kept at ${m.path})` : ''}`,
      );
  }
  const v = result?.verification;
  if (v) {
    const verdict = !v.ran
      ? 'not run'
      : v.ok === true
        ? 'passed'
        : v.ok === false
          ? v.blocking
            ? 'FAILED'
            : 'failed, not blocking'
          : 'inconclusive';
    lines.push(`  verification: ${verdict}${v.command ? ` — ${v.command}` : ''} (${v.summary})`);
    // the compact answer names each id once (issue 33): a list whose ids were named above shows its count only
    const sorted = [v.new_failures, v.known_failures, v.pre_existing, v.flaky].some(
      (ids) => Array.isArray(ids) && ids.length > 0,
    );
    for (const [label, ids, total] of [
      // failures no baseline sorted into new and pre-existing
      ['failing', sorted ? undefined : v.failures, sorted ? undefined : v.failures_count],
      ['new failures', v.new_failures, v.new_failures_count],
      ['known failures', v.known_failures, v.known_failures_count],
      ['pre-existing', v.pre_existing, v.pre_existing_count],
      ['flaky', v.flaky, v.flaky_count],
      ['missing tests', v.missing_tests, v.missing_tests_count],
      ['fixed', v.fixed, v.fixed_count],
    ] as const) {
      const count = total ?? ids?.length ?? 0;
      if (count === 0) continue;
      lines.push(
        `    ${`${label} (${count}):`.padEnd(20)} ${ids?.length ? list(ids, FAILURES_SHOWN, total) : 'named above'}`,
      );
    }
  }
  const proof = result?.proof;
  if (proof) {
    lines.push(`  proof: ${proof.verdict} ${Number(proof.confidence).toFixed(2)}`);
    for (const u of proof.uncertainty) lines.push(`    - ${u.code}: ${u.detail}`);
  }
  if (job.ceiling_s !== undefined) lines.push(`  ceiling: ${job.ceiling_s} s (still live: wait again)`);
  if (job.ceiling_why !== undefined) lines.push(`    ${job.ceiling_why}`);
  return lines.join('\n');
}

/** One line per job for `gaffer list`. */
export function renderBrief(job: CompactJob): string {
  const when = new Date(job.created * 1000).toISOString().replace('T', ' ').slice(0, 19);
  return `${job.id}  ${job.status.padEnd(11)} ${when}  ${job.title.slice(0, 50).padEnd(50)}  ${job.workspace}`;
}

/** One event as a line. */
export function renderEvent(e: JobEvent): string {
  const time = new Date(e.ts * 1000).toISOString().slice(11, 23);
  const message = e.event === 'output' ? (e.message.split('\n').at(-1) ?? '') : e.message;
  return `#${String(e.seq).padEnd(5)} ${time}  ${e.name.padEnd(12)} ${e.event.padEnd(8)} ${message}`;
}

/** A wait's answer for a person. */
export function renderWait(answer: WaitAnswer): string {
  return `${answer.met ? 'met' : 'not met'}: ${answer.condition} after ${answer.waited_s} s — job ${answer.state.id} is ${answer.state.status}${answer.state.phase ? ` (${answer.state.phase})` : ''}`;
}

/** `gaffer stats` for a person: the acceptance table (type, model, accepted/total, rate), what it left out, and the recent job counts. */
export function renderStats(stats: StatsAnswer & Partial<OperationsStats>): string {
  const lines: string[] = [];
  const entries = Object.values(stats.acceptance);
  if (entries.length === 0) lines.push('acceptance: no outcome counted yet');
  else {
    lines.push('acceptance (gates passed / outcomes, per task type and model):');
    const header = ['type', 'model', 'runner', 'provider', 'accepted', 'rate'];
    const rows = entries.map((r) => [
      r.type,
      r.model ?? '-',
      r.runners.join(','),
      r.providers.join(',') || '-',
      `${r.accepted}/${r.total}`,
      `${Math.round(r.rate * 100)}%`,
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
    for (const row of [header, ...rows])
      lines.push(`  ${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd());
  }
  const { not_dispatched: neverRan, abstained } = stats.excluded;
  const left = [
    ...(neverRan > 0
      ? [`${neverRan} not_dispatched (nothing ran: an approval ask denied, or stopped before a process)`]
      : []),
    ...(abstained > 0 ? [`${abstained} abstained (escalated as beyond the worker's brief)`] : []),
  ];
  lines.push(`  ${stats.outcomes_total} outcome(s) logged${left.length > 0 ? `; ${left.join(', ')} not counted` : ''}`);
  for (const p of stats.providers ?? []) {
    const suspended =
      p.suspended_until !== null
        ? `suspended until ${new Date(p.suspended_until * 1000).toISOString()} (${p.suspended_why ?? ''})`
        : 'not suspended';
    lines.push(
      `provider ${p.provider}: ${suspended}${p.waiting.length > 0 ? `; jobs waiting: ${p.waiting.join(', ')}` : ''}`,
    );
    for (const b of p.budgets)
      lines.push(
        `  ${b.window} budget: ${b.spent} of ${b.limit} ${b.unit} spent${b.unknown > 0 ? ` (+${b.unknown} attempt(s) of unknown cost)` : ''}${b.state === 'ok' ? '' : ` — ${b.state === 'spent' ? 'spent' : 'ahead of pace'}: paused until ${new Date((b.pause_until ?? 0) * 1000).toISOString()}`}`,
      );
  }
  if (stats.breaker?.open) lines.push(`breaker: open — ${stats.breaker.why}`);
  const r = stats.recent;
  // spec 07: no job is no signal, not "all fine"
  if (r.jobs === 0) lines.push('recent jobs: 0 (none ran: no signal)');
  else
    lines.push(
      `recent jobs: ${r.jobs} (done ${r.done}, partial ${r.partial}, failed ${r.failed}, cancelled ${r.cancelled}, live ${r.live})`,
    );
  return lines.join('\n');
}

/**
 * `gaffer runners` for a person: a header, then a row per runner. An agent CLI the config leaves off
 * is `disabled` whether or not its binary is here, with what keeps it off.
 */
export function renderRunners(rows: readonly RunnerRow[]): string {
  const header = ['RUNNER', 'STATE', 'VERSION', 'RESUME', 'SANDBOX', 'DESCRIPTION'];
  const table = rows.map((r) => {
    const notes = [
      // a server of an older build sends no disabled_by
      ...(r.enabled ? [] : [`disabled by ${r.disabled_by ?? `runners.${r.key}.enabled`}`]),
      ...(r.install_hint ? [`not installed: ${r.install_hint}`] : []),
    ];
    const state = !r.enabled ? 'disabled' : r.installed ? 'installed' : 'missing';
    return [
      r.key,
      state,
      r.version ?? '-',
      r.resume ? 'yes' : 'no',
      r.sandbox ? 'yes' : 'no',
      `${r.label}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] ?? '').length)));
  return [header, ...table]
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
