import { killProcessGroupIfAlive } from '../../platform/process/terminate.js';
import { buildVerdict } from '../../domain/verdict.js';
import { describeWorktrees } from '../../domain/fanout.js';
import { isFinalStatus } from '../../domain/status.js';
import { isSameProcessAlive } from '../../platform/process/process-identity.js';
import type { AttemptPatch, AttemptRow, JobRow, LockHolder, Store } from '../../store/store.js';
import { carryEffect, isFinalAttempt, transition } from '../../domain/attempt-machine.js';
import { workerEndOf } from '../../domain/attempt-results.js';
import type { SuiteProcessHooks } from '../../verification/run-suite.js';
import { epochS } from '../clock.js';

export const INTERRUPTED_VERDICT = 'interrupted by a restart of gaffer — re-dispatch the remaining work';

/**
 * Turns every live job whose process is dead into `interrupted` (spec 07): kills the survivors of
 * its workers and of every other process it started, closes its open attempts, releases its
 * workspace; its evidence so far stays. A job whose process is alive is never touched.
 */
export async function recoverOrphans(store: Store, _dataDir: string, verdict = INTERRUPTED_VERDICT): Promise<string[]> {
  const orphans = store.listLiveJobs().filter(isOrphan);
  for (const job of orphans) await recoverJob(store, job, verdict);
  return orphans.map((j) => j.id);
}

/** True when some live job's process is dead (the cheap look a server makes every few seconds). */
export function hasOrphans(store: Store): boolean {
  return store.listLiveJobHolders().some(isOrphan);
}

/**
 * A workspace lock whose holder died goes through the same recovery as a restart before anyone
 * takes it (spec 06): the holder's surviving processes killed, its job `interrupted`, its attempts
 * closed, and then the lock released. A holder whose process lives is never touched.
 */
export async function recoverDeadHolder(
  store: Store,
  holder: LockHolder,
  verdict = INTERRUPTED_VERDICT,
): Promise<void> {
  if (isSameProcessAlive(holder.pid, holder.pidStart)) return;
  const job = store.getJob(holder.jobId);
  if (job !== null && (isFinalStatus(job.status) || isOrphan(job))) await recoverJob(store, job, verdict);
  // the lock outlived its process: free it (by this holder only, a newer lock of the path stays)
  store.releaseLock(holder.workspace, holder.jobId);
}

/** Hooks that keep a job's process groups recorded while they run, so recovery can stop them after a crash. */
export function recordJobProcesses(store: Store, jobId: string): SuiteProcessHooks {
  return {
    onSpawn: ({ pgid, startedAt }, what) => store.recordJobProcess({ jobId, pgid, pgStart: startedAt, what }),
    onExit: ({ pgid }) => store.forgetJobProcess(jobId, pgid),
  };
}

function isOrphan(job: { pid: number | null; pidStart: number | null }): boolean {
  return job.pid === null || !isSameProcessAlive(job.pid, job.pidStart);
}

/** One dead job: its process groups killed (each checked against pid reuse), then its rows closed. */
async function recoverJob(store: Store, job: JobRow, verdict: string): Promise<void> {
  // open: where the machine has the attempt live (a process may have ended while its work was still being judged); an older row without it: its process not ended
  const open = store
    .listAttempts(job.id)
    .filter((a) => (a.machine !== null ? !isFinalAttempt(a.machine) : a.finished === null));
  const others = store.listJobProcesses(job.id);
  const groups = [
    ...open.flatMap((a) => (a.pgid !== null && a.pgStart !== null ? [{ pgid: a.pgid, pgStart: a.pgStart }] : [])),
    ...others,
  ];
  await Promise.all(groups.map((g) => killProcessGroupIfAlive(g.pgid, g.pgStart).catch(() => undefined)));
  for (const a of open) store.updateAttempt(job.id, a.worker, { ...interruptedRow(a), lastEvent: 'interrupted' });
  for (const p of others) store.forgetJobProcess(job.id, p.pgid);
  if (!isFinalStatus(job.status)) markInterrupted(store, job, verdict);
  store.releaseWorkspace(job.id);
}

/**
 * An open attempt of a dead job, interrupted as the machine says from where it stood (spec 01): its
 * row's words are then the machine's — a worker whose process had ended keeps its own end. A row
 * written before the machine's state was stored is interrupted as such.
 */
function interruptedRow(a: AttemptRow): AttemptPatch {
  const step = a.machine !== null ? transition(a.machine, { type: 'interrupt' }) : null;
  if (step === null || !step.ok)
    return { status: 'interrupted', outcome: 'cancelled', finished: a.finished ?? epochS() };
  // what the interrupt owes, recovery has done: the job's process groups are stopped, its workspace released (recoverJob)
  let machine = step.next;
  for (const effect of step.effects) {
    const carried = carryEffect(machine, effect);
    if (carried.ok) machine = carried.next;
  }
  const words = workerEndOf(machine);
  return { status: words.status, outcome: words.outcome, finished: a.finished ?? epochS(), machine };
}

function markInterrupted(store: Store, job: JobRow, verdict: string): void {
  const result = job.result;
  // another process may be recovering the same job: only the first one writes
  if (!store.claimInterrupted(job.id, job.status, { finished: epochS(), error: verdict })) return;
  store.updateJob(job.id, {
    verdict: buildVerdict({
      status: 'interrupted',
      error: verdict,
      workerStatuses: store
        .listAttempts(job.id)
        .filter((a) => a.role === 'worker')
        .map((a) => a.status),
      filesChanged: result?.changes?.count ?? null,
      verification: result?.verification ?? null,
      fixRoundsRun: result?.fix_rounds_run ?? 0,
      converged: false,
      proof: null,
      claimedOnly: [],
      criteriaUnmet: [],
      reportedStates: [],
      // a worktree job's worktrees as far as it got: where the interrupted work lies (spec 06)
      worktrees: result?.worktrees ? describeWorktrees(result.worktrees) : null,
    }),
  });
  store.appendEvent(job.id, { name: 'job', event: 'status', message: 'interrupted', status: 'interrupted' });
}
