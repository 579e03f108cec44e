// spec 05 "Gates": a task's own mechanical checks of its returned work, on top of the job's
// verification. The shapes, the request schema and the rules that need no process; engine/pipeline/gates.ts
// runs the commands and asks the judge.
import { z } from 'zod';

/** A declared gate: a shell command, the paths a change must stay in, the worker's claims, or the task's done_means. */
export type GateSpec =
  | { kind: 'command'; command: string }
  | { kind: 'diff-scope'; paths: string[] }
  | { kind: 'claims' }
  | { kind: 'done_means' };

export type GateReading = 'pass' | 'fail' | 'ambiguous';

/** One gate's result on one attempt (the attempt record and the job's result carry it). */
export interface GateResult {
  /** The gate as written: its command, `diff-scope`, `claims`, `done_means`. */
  gate: string;
  kind: GateSpec['kind'];
  result: GateReading;
  detail: string;
  /** An ambiguous gate the judge model read (spec 05: its reading is recorded as such; `result` is its reading). */
  judged?: { entry: string; reading: GateReading; why: string };
  /** Ambiguous and no judge read it: it climbs to a person. */
  climb?: true;
}

/** A task's gates on its final attempt, and the task's attempts up the ladder so far (the autopsy). */
export interface TaskGatesJson {
  task: string;
  /** The worker (attempt row) the gates judged. */
  worker: string;
  verdict: GateReading;
  results: GateResult[];
}

const GATE_COMMAND_CHARS = 2_000;
const GATE_PATHS = 100;

const GATE_FORMS =
  'must be a command string, {"command": "…"}, {"kind": "diff-scope", "paths": ["…"]}, {"kind": "claims"} or {"kind": "done_means"}';

export const gateSchema = z.union(
  [
    z.string().trim().min(1).max(GATE_COMMAND_CHARS),
    z.strictObject({
      kind: z.literal('command').optional(),
      command: z.string().trim().min(1).max(GATE_COMMAND_CHARS),
    }),
    z.strictObject({
      kind: z.literal('diff-scope'),
      paths: z.array(z.string().trim().min(1).max(1_000)).min(1).max(GATE_PATHS),
    }),
    z.strictObject({ kind: z.literal('claims') }),
    z.strictObject({ kind: z.literal('done_means') }),
  ],
  { error: GATE_FORMS },
);
export const gatesSchema = z.array(gateSchema).max(20);

/** A parsed gate list, each in its object form. */
export function gatesOf(raw: z.output<typeof gatesSchema>): GateSpec[] {
  return raw.map((g) =>
    typeof g === 'string'
      ? { kind: 'command', command: g }
      : 'command' in g
        ? { kind: 'command', command: g.command }
        : g,
  );
}

/** How a gate is named in results and prompts. */
export function gateLabel(g: GateSpec): string {
  switch (g.kind) {
    case 'command':
      return g.command;
    case 'diff-scope':
      return `diff-scope ${g.paths.join(', ')}`;
    default:
      return g.kind;
  }
}

/** All pass → pass; any fail → fail; else ambiguous. No gates → pass. */
export function gatesVerdict(results: readonly GateResult[]): GateReading {
  if (results.some((r) => r.result === 'fail')) return 'fail';
  return results.every((r) => r.result === 'pass') ? 'pass' : 'ambiguous';
}

/** `diff-scope`: every changed path inside one of the named paths (a folder names everything under it). */
export function diffScopeResult(
  paths: readonly string[],
  changed: readonly string[] | null,
): Pick<GateResult, 'result' | 'detail'> {
  if (changed === null) return { result: 'ambiguous', detail: 'no evidence of what changed was taken' };
  const inside = (p: string) => paths.some((scope) => p === scope || p.startsWith(`${scope.replace(/\/+$/, '')}/`));
  const outside = changed.filter((p) => !inside(p));
  if (outside.length === 0)
    return { result: 'pass', detail: `${changed.length} changed path(s), all inside ${paths.join(', ')}` };
  return {
    result: 'fail',
    detail: `changed outside ${paths.join(', ')}: ${outside.slice(0, 10).join(', ')}${outside.length > 10 ? ` and ${outside.length - 10} more` : ''}`,
  };
}

/**
 * `done_means`: every item confirmed by a gate that passed (its command named in the item), or by
 * the worker's explicit `confirmed: …` line for the item that names a check gaffer ran and saw
 * pass. Anything else is unconfirmed: ambiguous, never a pass on the worker's word alone.
 */
export function doneMeansResult(
  items: readonly string[],
  passedChecks: readonly string[],
  report: string,
): Pick<GateResult, 'result' | 'detail'> {
  if (items.length === 0) return { result: 'ambiguous', detail: 'the task declares no done_means to confirm' };
  const confirmations = report
    .split('\n')
    .filter((l) => /^\s*[-*]?\s*confirmed\b/i.test(l))
    .map((l) => l.toLowerCase());
  const names = (text: string) => passedChecks.some((c) => text.toLowerCase().includes(c.toLowerCase()));
  const unconfirmed = items.filter((item) => {
    if (names(item)) return false;
    const key = item.toLowerCase().slice(0, 40);
    return !confirmations.some((line) => line.includes(key) && names(line));
  });
  if (unconfirmed.length === 0)
    return { result: 'pass', detail: `${items.length} item(s), each backed by a check that passed` };
  return {
    result: 'ambiguous',
    detail: `unconfirmed: ${unconfirmed.map((u) => `"${u}"`).join(', ')} (no passing gate or verification backs it)`,
  };
}

/** A not-ok worker's gates (spec 05: an aborted artifact is never gated as if complete). */
export function failedOutright(gates: readonly GateSpec[], why: string): GateResult[] {
  return gates.map((g) => ({ gate: gateLabel(g), kind: g.kind, result: 'fail', detail: why }));
}

/** The worker abstained upward: it said the task is beyond its brief (the handoff asks for `ESCALATE: <why>`). */
export function abstainedUpward(report: string): string | null {
  const line = report.split('\n').find((l) => /^\s*ESCALATE:/.test(l) || /beyond (my|this) brief/i.test(l));
  return line === undefined ? null : line.trim().slice(0, 300);
}

/** The judge's instruction for an ambiguous gate or the worker's claims. */
export const GATE_JUDGE_SYSTEM =
  'You check the returned work of a coding agent for gaffer. You are given a check that could not decide by itself, the agent\'s report and the diff of what really changed. Answer with one line: "PASS: <why>" or "FAIL: <why>". Answer FAIL when the report claims something the diff does not show. If you cannot tell, answer "UNSURE: <why>".';

/** The judge's answer read as a gate reading; null when it did not answer in the form asked. */
export function readJudgement(text: string): { reading: GateReading; why: string } | null {
  const m = /^\s*(PASS|FAIL|UNSURE)\s*[:\-–]\s*(.*)$/im.exec(text);
  if (!m) return null;
  const word = (m[1] ?? '').toUpperCase();
  return {
    reading: word === 'PASS' ? 'pass' : word === 'FAIL' ? 'fail' : 'ambiguous',
    why: (m[2] ?? '').trim().slice(0, 300),
  };
}
