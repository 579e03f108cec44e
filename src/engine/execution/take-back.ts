import type { RunnerReport } from '../../domain/runner-report.js';
import { applyResult, dropRefs, fetchResult } from '../../evidence/cluster-git.js';
import { serialized } from '../../evidence/worktree-git.js';
import { blankReport } from '../../runners/report.js';
import type { AttemptExchange } from './exchange.js';
import type { RemoteWork, WorkOutcome } from './remote-work.js';
import { reportOfWire, safeJson, wireResultSchema } from './wire.js';

/** The reason a work ends with after its second lost node (BullMQ's own words for it). */
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/**
 * The attempt's report from how its BullMQ job ended (spec 09). A commit the node names is fetched
 * from the bundle it sent and applied to the workspace before the report is returned — the
 * attempt's evidence is then the coordinator's own snapshot of its own disk; the report stays the
 * node's claim. A commit it names but never sent, or one that does not apply, is an error.
 */
export async function takeBack(
  work: RemoteWork,
  outcome: WorkOutcome,
  opts: { exchange: AttemptExchange; cancelled: boolean },
): Promise<RunnerReport> {
  if (outcome.kind === 'gone') {
    return opts.cancelled
      ? cancelledReport(null)
      : blankReport({
          status: 'error',
          outcome: 'expected_error',
          stopReason: 'node_failed',
          error: "the attempt was withdrawn from its node's queue before any node claimed it",
        });
  }
  if (outcome.kind === 'failed') {
    if (outcome.reason === STALLED_TOO_OFTEN) {
      return blankReport({
        status: 'error',
        outcome: 'expected_error',
        stopReason: 'node_lost_again',
        error: `its node stopped answering again after the work had been handed over once (BullMQ: ${outcome.reason})`,
      });
    }
    return blankReport({
      status: 'error',
      outcome: 'expected_error',
      stopReason: 'node_failed',
      error: `the node failed the attempt: ${outcome.reason}`,
    });
  }
  // the node's report, as it sent it over the node routes
  const value = typeof outcome.value === 'string' ? safeJson(outcome.value) : outcome.value;
  const parsed = wireResultSchema.safeParse(value);
  if (!parsed.success)
    return blankReport({
      status: 'error',
      outcome: 'panic',
      stopReason: 'node_failed',
      error: `the node's answer is not gaffer's wire format: ${parsed.error.issues[0]?.message ?? 'unreadable'}`,
    });
  const result = parsed.data;
  const report = reportOfWire(result.report);
  if (result.commit === null || result.commit === work.base) return report;
  const notApplied = (error: string): RunnerReport => ({
    ...report,
    status: 'error',
    outcome: 'expected_error',
    stopReason: 'result_not_applied',
    error,
  });
  let from: { bundle: string } | { remote: string };
  if (result.pushed === true) {
    if (work.remote === undefined)
      return notApplied(
        `node ${result.node} says it pushed commit ${result.commit}, but the job has no remote repository`,
      );
    from = { remote: work.remote.url };
  } else {
    const file = opts.exchange.resultFile(work.key, result.upload ?? '');
    if (file === null)
      return notApplied(`node ${result.node} reported commit ${result.commit} but its bundle never arrived`);
    from = { bundle: file };
  }
  const into = resultRef(work.key);
  const fetched = await serialized(work.repo, () => fetchResult(work.repo, from, work.branch, into));
  if ('refused' in fetched) return notApplied(fetched.refused);
  try {
    // a branch on a shared remote can be moved by anyone who may push there: only the commit the node reported is taken
    if (fetched.commit !== result.commit)
      return notApplied(
        `${'remote' in from ? `the remote's ${work.branch}` : "the node's bundle"} holds ${fetched.commit}, not the commit ${result.commit} node ${result.node} reported`,
      );
    const applied = await serialized(work.repo, () => applyResult(work.repo, work.base, fetched.commit));
    if (applied.refused !== null)
      return notApplied(`the node's work did not apply to the workspace: ${applied.refused}`);
    const notes = [
      ...(applied.outside.length > 0
        ? [
            `not applied: what it changed outside the workspace (${applied.outside.slice(0, 5).join(', ')}${applied.outside.length > 5 ? ', …' : ''})`,
          ]
        : []),
      ...(result.pushRefused !== undefined ? [result.pushRefused] : []),
    ];
    return notes.length === 0
      ? report
      : { ...report, error: [report.error, ...notes].filter((n) => n !== null).join('; ') };
  } finally {
    await serialized(work.repo, () => dropRefs(work.repo, [into]));
  }
}

/** The ref a node's commit is fetched into while it is applied. */
const resultRef = (key: string): string => `refs/gaffer/results/${key}`;

/** A cancelled attempt's report; `error` says why it ended without the node's word. */
export function cancelledReport(error: string | null): RunnerReport {
  return blankReport({ status: 'cancelled', outcome: 'cancelled', stopReason: 'cancelled', isCancelled: true, error });
}
