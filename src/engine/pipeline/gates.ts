import { join } from 'node:path';
import {
  diffScopeResult,
  doneMeansResult,
  failedOutright,
  gateLabel,
  GATE_JUDGE_SYSTEM,
  readJudgement,
  type GateResult,
  type GateSpec,
} from '../../domain/gates.js';
import type { TaskSpec } from '../../domain/request.js';
import type { VerificationJson } from '../../domain/result.js';
import { processHooksFor, runSuite } from '../../verification/run-suite.js';
import { isTestFilePath } from '../../verification/harness.js';
import type { JobContext } from '../job-context.js';
import { recordJobProcesses } from '../maintenance/recovery.js';
import type { WorkerEnd } from './attempt-run.js';

/** How long the judge may take over one gate before it counts as abstaining. */
const JUDGE_TIMEOUT_MS = 30_000;
/** Files a command can run. */
const SCRIPT = /\.([cm]?[jt]sx?|py|sh|bash|rb|pl|php|go)$/;
/** Output of a failed gate command kept in its detail. */
const DETAIL_CHARS = 200;

/** What a task's gates are checked against: its place, its last attempt, what changed, the verification. */
export interface GateInput {
  workspace: string;
  worker: WorkerEnd;
  /** Every path the work changed; null when no evidence was taken. */
  changed: string[] | null;
  /** The test and test-runner files the work changed (verification/harness.ts): what can make a command pass by asking less. */
  harness: string[];
  verification: VerificationJson | null;
  sandbox: boolean;
}

/**
 * spec 05 "Gates": each of the task's declared gates read `pass`, `fail` or `ambiguous` with its
 * detail. A not-ok worker fails them outright. An ambiguous one goes to the roster's judge when one is
 * configured (its reading is recorded as such); else it is marked to climb to a person.
 */
export async function checkTaskGates(ctx: JobContext, task: TaskSpec, input: GateInput): Promise<GateResult[]> {
  const gates = task.gates ?? [];
  if (gates.length === 0) return [];
  const report = input.worker.report;
  if (report.status !== 'done')
    return failedOutright(
      gates,
      `the worker returned ${report.status}${report.error ? ` (${report.error.slice(0, 120)})` : ''}: an aborted artifact is never gated as if complete`,
    );
  const results: GateResult[] = [];
  for (const [i, gate] of gates.entries()) {
    if (gate.kind === 'done_means') continue;
    results.push({ gate: gateLabel(gate), kind: gate.kind, ...(await checkOne(ctx, task, gate, i, input)) });
  }
  // done_means last: it is backed by the gates that passed and the verification that did
  const passed = results.filter((r) => r.kind === 'command' && r.result === 'pass').map((r) => r.gate);
  const v = input.verification;
  if (v?.ran && !v.blocking && v.command) passed.push(v.command);
  for (const gate of gates)
    if (gate.kind === 'done_means')
      results.push({
        gate: 'done_means',
        kind: 'done_means',
        ...doneMeansResult(task.brief?.done_means ?? [], passed, report.summary),
      });
  const read: GateResult[] = [];
  for (const r of results) read.push(r.result === 'ambiguous' ? await judgeOrClimb(ctx, r, input) : r);
  return read;
}

async function checkOne(
  ctx: JobContext,
  task: TaskSpec,
  gate: Exclude<GateSpec, { kind: 'done_means' }>,
  index: number,
  input: GateInput,
): Promise<Pick<GateResult, 'result' | 'detail'>> {
  switch (gate.kind) {
    case 'diff-scope':
      return diffScopeResult(gate.paths, input.changed);
    case 'claims':
      // read by the judge below; without one it is skipped, not passed
      return {
        result: 'ambiguous',
        detail: `${input.worker.report.summary.trim() === '' ? 'the worker made no report' : "the report's claims"} — only the judge model checks claims`,
      };
    case 'command':
      return runGateCommand(ctx, task, gate.command, index, input);
  }
}

async function runGateCommand(
  ctx: JobContext,
  task: TaskSpec,
  command: string,
  index: number,
  input: GateInput,
): Promise<Pick<GateResult, 'result' | 'detail'>> {
  const what = `gate-${input.worker.plan.name}-${index + 1}`;
  const run = await runSuite({
    command,
    cwd: input.workspace,
    kind: null,
    timeoutMs: ctx.spec.verify_timeout_s * 1000,
    signal: ctx.abort.signal,
    logFile: join(ctx.jobDir, `${what}.log`),
    sandbox: input.sandbox ? ctx.services.sandbox : false,
    network: ctx.services.verificationNetwork,
    dependencyRoot: ctx.spec.workspace,
    ...processHooksFor(recordJobProcesses(ctx.services.store, ctx.id), what),
  });
  // the table of spec 05: timeout or cannot start → ambiguous
  if (run.isCancelled) return { result: 'ambiguous', detail: 'the job was cancelled while it ran' };
  if (run.cause !== null)
    return { result: 'ambiguous', detail: `could not start: ${run.cause}`.slice(0, DETAIL_CHARS) };
  if (run.timedOut) return { result: 'ambiguous', detail: `timed out after ${ctx.spec.verify_timeout_s} s` };
  if (run.exitCode === 127) return { result: 'ambiguous', detail: 'could not start: command not found (exit 127)' };
  if (run.exitCode === 0) {
    // a pass the work may have arranged: it changed a test or the runner's config, or a script the command
    // runs that is not the task's own to write (a gate may read the task's files: that is what it checks)
    const named = (input.changed ?? []).filter((p) => command.includes(p) && SCRIPT.test(p) && !task.files.includes(p));
    const harness = task.tests_may_change ? input.harness.filter((p) => !isTestFilePath(p)) : input.harness;
    const suspect = [...new Set([...harness, ...named])].sort();
    if (suspect.length > 0)
      return {
        result: 'ambiguous',
        detail: `exit 0, but the work changed ${suspect.slice(0, 5).join(', ')}, which this command may read: the pass may be the work's own arrangement`,
      };
    return { result: 'pass', detail: `exit 0 (${task.name})` };
  }
  const last = (run.tail.trimEnd().split('\n').at(-1) ?? '').trim();
  const ended = run.signal !== null ? `killed by ${run.signal}` : `exit ${run.exitCode ?? 'unknown'}`;
  return { result: 'fail', detail: `${ended}${last ? `: ${last}` : ''}`.slice(0, DETAIL_CHARS) };
}

/** An ambiguous gate: the judge's reading when it gives one, else it climbs to a person. */
async function judgeOrClimb(ctx: JobContext, r: GateResult, input: GateInput): Promise<GateResult> {
  const judge = ctx.spec.judge;
  const runner = ctx.services.runners.get('builtin');
  if (!judge || !runner?.complete)
    return { ...r, climb: true, detail: `${r.detail}; no judge configured: skipped, not passed` };
  const prompt = [
    `Check: ${r.gate} (${r.kind}) — it could not decide by itself: ${r.detail}`,
    `The agent's report:\n${input.worker.report.summary.slice(0, 4_000) || '(none)'}`,
    `Files it claims it changed: ${input.worker.report.filesChanged.join(', ') || '(none claimed)'}`,
    `Files that really changed: ${input.changed?.join(', ') || '(none)'}`,
  ].join('\n\n');
  const text = await runner
    .complete({
      system: GATE_JUDGE_SYSTEM,
      prompt,
      model: judge.model,
      ...(judge.endpoint !== undefined ? { endpoint: judge.endpoint } : {}),
      timeoutMs: JUDGE_TIMEOUT_MS,
    })
    .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  const read = typeof text === 'string' ? readJudgement(text) : null;
  if (read === null || read.reading === 'ambiguous') {
    const why = text instanceof Error ? text.message : (read?.why ?? 'it did not answer PASS or FAIL');
    return { ...r, climb: true, judged: { entry: judge.entry, reading: 'ambiguous', why: why.slice(0, 300) } };
  }
  return { ...r, result: read.reading, judged: { entry: judge.entry, ...read } };
}
