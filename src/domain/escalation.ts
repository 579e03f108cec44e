// spec 05 "Escalation": what a rung's attempt left behind (its autopsy), the words that carry it to
// the next rung's prompt, and the record of each climb. Pure; engine/routing/escalation.ts climbs.
import type { GateReading, GateResult } from './gates.js';

/** One rung's attempt at a task, as the next rung and the spawner are told it. */
export interface RungAttempt {
  /** The attempt's worker row. */
  worker: string;
  entry: string;
  runner: string;
  model: string | null;
  /** How its worker ended (`done`, `error`, …). */
  status: string;
  /** Its verdict: `fail` when its verification blocked (issue 33), else its gates' (none declared: `pass`). */
  verdict: GateReading;
  /** Its gates' results (none declared: an empty list). */
  gates: GateResult[];
  /** The verification's summary when it blocked, else null. */
  verification: string | null;
  /** What failed when the verification blocked — the words a fix round's fixer reads (issue 33); absent otherwise. */
  failures?: string;
  /** The worker said the task is beyond its brief (honoured: not a failure), its words. */
  abstained: string | null;
  /** The end of the worker's report. */
  note: string;
}

/** One step up the ladder, or the end of the climb (`to` null: the task went back to its spawner). */
export interface EscalationJson {
  task: string;
  /** The rung that failed (or abstained). */
  from: string;
  /** The next rung's entry; null when the task was returned. */
  to: string | null;
  why: string;
  /** The task went back to its spawner with the autopsy (two failed rungs, or no rung above). */
  returned?: true;
  /** A person said no to the next rung (an `api` rung asks first). */
  denied?: true;
  autopsy: RungAttempt[];
}

/** Why a rung's attempt counts as failing its task, in words; null when it passed. */
export function failingWhy(
  a: Pick<RungAttempt, 'status' | 'verdict' | 'gates' | 'verification' | 'abstained'>,
): string | null {
  if (a.abstained !== null) return `the worker abstained upward: ${a.abstained}`;
  if (a.status !== 'done') return `the worker returned ${a.status}`;
  const failedGates = a.gates.filter((g) => g.result === 'fail');
  if (failedGates.length > 0) return `gates failed: ${failedGates.map((g) => `${g.gate} (${g.detail})`).join('; ')}`;
  if (a.verification !== null) return `the verification failed: ${a.verification}`;
  if (a.verdict === 'fail') return 'its verdict was fail';
  return null;
}

/** The autopsy as the next worker reads it: each earlier rung, its gate results and its note. */
export function autopsySection(attempts: readonly RungAttempt[]): string {
  const lines = attempts.map((a, i) => {
    const gates = a.gates.map((g) => `    - gate ${g.gate}: ${g.result} — ${g.detail}`);
    return [
      `- attempt ${i + 1}: ${a.entry} (${a.model ?? 'default model'} on ${a.runner}) ended ${a.status}; ${failingWhy(a) ?? 'it passed'}`,
      ...gates,
      ...(a.failures
        ? ['    - what failed:', ...a.failures.split('\n').map((l) => (l ? `      ${l}` : ''))]
        : a.verification
          ? [`    - verification: ${a.verification}`]
          : []),
      ...(a.note ? [`    - its report ended: ${a.note}`] : []),
    ].join('\n');
  });
  return [
    '## Autopsy of earlier attempts',
    'This task was tried before on a cheaper rung and did not pass. Its workspace changes are still there: read them, keep what is right, fix what is not.',
    ...lines,
  ].join('\n');
}
