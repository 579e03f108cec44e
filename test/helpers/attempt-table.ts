import { ABANDONING_EVENTS, findAttemptRow, type Attempt } from '../../src/domain/attempt-machine.js';
import type { AttemptEffect } from '../../src/domain/attempt-table.js';

/** What is wrong with the effects `a` carried out, replayed against the table from its events; [] when they are the table's. */
export function againstTable(a: Attempt): string[] {
  const problems: string[] = [];
  let owed: AttemptEffect[] = ['check_gates'];
  let state: Attempt['state'] = 'admitted';
  const at = (i: number) => a.carried.filter((c) => c.at === i);
  const settle = (i: number, abandoning: boolean) => {
    const done = at(i);
    const words = done.map((c) => `${c.effect}${c.dropped ? ' (dropped)' : ''}`);
    const ok =
      done.length === owed.length && done.every((c, k) => c.effect === owed[k] && (c.dropped !== true || abandoning));
    if (!ok)
      problems.push(
        `${a.task}#${a.number} before event ${i} (${a.trail[i] ?? 'the end'}) owed [${owed.join(', ')}], carried [${words.join(', ')}]`,
      );
  };
  a.trail.forEach((event, i) => {
    settle(i, ABANDONING_EVENTS.has(event));
    const row = findAttemptRow(state, event);
    if (!row) return void problems.push(`${a.task}#${a.number}: ${state} cannot take ${event}`);
    state = row.to;
    owed = [...row.effects];
  });
  // after the last event: carried, or dropped because the job stopped
  settle(a.trail.length, true);
  if (state !== a.state) problems.push(`${a.task}#${a.number}: its events lead to ${state}, it is ${a.state}`);
  if (a.owed.length > 0) problems.push(`${a.task}#${a.number} still owes ${a.owed.join(', ')}`);
  return problems;
}
