import { describe, expect, it } from 'vitest';
import { parseJobRequest } from '../../src/domain/request.js';
import type { JobResult } from '../../src/domain/result.js';
import { ownProcessIdentity } from '../../src/platform/process/process-identity.js';
import type { RunnerReport } from '../../src/domain/runner-report.js';
import type { OutcomeRecord } from '../../src/domain/outcome.js';
import type { GafferStore, JobSnapshots, NewJob } from '../../src/store/ports.js';

export const me = ownProcessIdentity();
const spec = (workspace: string, instruction = 'x') =>
  parseJobRequest(
    {
      workspace,
      tasks: [
        { instruction, command: 'true' },
        { instruction: 'y', command: 'true', name: 'second' },
      ],
    },
    { defaultRunner: null, available: ['shell'] },
  );
export const newJob = (id: string, extra: Partial<NewJob> = {}): NewJob => ({
  id,
  owner: null,
  spec: spec('/w'),
  created: Date.now() / 1000,
  idemKey: null,
  requestHash: null,
  idemWindowS: 3600,
  pid: me.pid,
  pidStart: me.start,
  ...extra,
});

const result: JobResult = {
  files_changed: ['a.txt'],
  claimed_only: [],
  changes: null,
  verification: null,
  fix_rounds_run: 1,
  proof: { verdict: 'partial', confidence: 0.5, shown: ['x'], uncertainty: [{ code: 'c', detail: 'd', penalty: 0.1 }] },
  totals: {
    tool_calls: 1,
    failed_calls: 0,
    rounds: 2,
    input_tokens: 3,
    output_tokens: 4,
    cost_usd: 0,
    errors: 0,
    cancelled: 0,
  },
};
const snapshot = {
  source: 'mtime',
  id: 'abc',
  workspace: '/w',
  skipped: [],
  truncated: false,
  largeFilesByStat: true,
} as const;
const snapshots: JobSnapshots = { pre: { ...snapshot, skipped: [] } };
const report: RunnerReport = {
  status: 'done',
  outcome: 'success',
  exitCode: 0,
  signal: null,
  timedOut: false,
  isCancelled: false,
  stopReason: 'complete',
  error: null,
  summary: 'ok',
  filesChanged: ['a.txt'],
  makesClaims: true,
  rounds: 1,
  toolCalls: 2,
  failedCalls: 0,
  inputTokens: 5,
  outputTokens: 6,
  costUsd: null,
  durationMs: 1500,
  session: null,
  modelServed: null,
  detection: null,
  refusals: [],
  sandboxed: true,
  network: 'none',
};

/**
 * What any store implementation must do, through the GafferStore interfaces only (issue 12):
 * contract.test.ts runs it on the SQLite store; a second implementation runs the same function.
 */
export function storeContract(name: string, make: () => GafferStore): void {
  describe(`${name} keeps the store contract`, () => {
    it('jobs: an inserted job reads back typed, its tasks in its spec, and its patches (JSON columns too) round-trip', () => {
      const store = make();
      const { job, created } = store.insertJob(newJob('job000000001'));
      expect(created).toBe(true);
      expect(job).toMatchObject({
        id: 'job000000001',
        status: 'queued',
        phase: 'queued',
        owner: null,
        workspace: '/w',
        result: null,
        checkpoint: null,
        cancelRequested: false,
        seq: 0,
      });
      expect(job.spec.tasks.map((t) => t.name)).toEqual(['worker-1', 'second']);
      store.updateJob(job.id, { status: 'running', started: 10, result, checkpoint: snapshots, verdict: null });
      const read = store.getJob(job.id);
      expect(read?.result).toEqual(result);
      expect(read?.checkpoint?.pre.largeFilesByStat).toBe(true);
      expect(read).toMatchObject({ status: 'running', started: 10, verdict: null });
      store.updateJob(job.id, { result: null });
      expect(store.getJob(job.id)?.result).toBeNull();
      expect(store.getJob('nosuchjob000')).toBeNull();
      store.close();
    });

    it('jobs: an idempotency key answers the job holding it for the same owner within the window, and not another owner', () => {
      const store = make();
      const first = store.insertJob(newJob('job000000002', { idemKey: 'k', owner: 'ann' }));
      expect(store.insertJob(newJob('job000000003', { idemKey: 'k', owner: 'ann' }))).toMatchObject({
        created: false,
        job: { id: first.job.id },
      });
      expect(store.insertJob(newJob('job000000004', { idemKey: 'k', owner: 'bob' })).created).toBe(true);
      expect(
        store.insertJob(newJob('job000000005', { idemKey: 'k', owner: 'ann', created: Date.now() / 1000 + 7200 }))
          .created,
      ).toBe(true);
      store.close();
    });

    it('jobs: listed newest first, filtered by status and owner; live ones, holders, cancels, counts, pruning', () => {
      const store = make();
      const t = Date.now() / 1000;
      store.insertJob(newJob('job00000000a', { created: t - 3, owner: 'ann' }));
      store.insertJob(newJob('job00000000b', { created: t - 2 }));
      store.insertJob(newJob('job00000000c', { created: t - 1 }));
      store.updateJob('job00000000a', { status: 'done' });
      store.updateJob('job00000000b', { status: 'error' });
      expect(store.listJobs({ limit: 10 }).map((j) => j.id)).toEqual(['job00000000c', 'job00000000b', 'job00000000a']);
      expect(store.listJobs({ limit: 1 }).map((j) => j.id)).toEqual(['job00000000c']);
      expect(store.listJobs({ limit: 10, status: 'done' }).map((j) => j.id)).toEqual(['job00000000a']);
      expect(store.listJobs({ limit: 10, owner: 'ann' }).map((j) => j.id)).toEqual(['job00000000a']);
      expect(store.listLiveJobs().map((j) => j.id)).toEqual(['job00000000c']);
      expect(store.hasLiveJobs()).toBe(true);
      expect(store.listLiveJobHolders()).toEqual([{ id: 'job00000000c', pid: me.pid, pidStart: me.start }]);
      expect(store.listCancelRequested(me.pid)).toEqual([]);
      store.requestCancel('job00000000c');
      expect(store.listCancelRequested(me.pid)).toEqual(['job00000000c']);
      expect(store.listCancelRequested(me.pid + 1)).toEqual([]);
      expect(store.getJob('job00000000c')?.cancelRequested).toBe(true);
      expect(store.countRecent(null)).toEqual({ jobs: 3, done: 1, partial: 0, failed: 1, cancelled: 0, live: 1 });
      expect(store.countRecent('ann')).toEqual({ jobs: 1, done: 1, partial: 0, failed: 0, cancelled: 0, live: 0 });
      // as many jobs as kept, or two finished ones past a live one with two kept: none goes
      expect(store.pruneFinishedJobs(3)).toEqual([]);
      expect(store.pruneFinishedJobs(2)).toEqual([]);
      // the live job is never pruned, however many are kept
      expect(store.pruneFinishedJobs(0).sort()).toEqual(['job00000000a', 'job00000000b']);
      expect(store.listJobIds()).toEqual(new Set(['job00000000c']));
      store.close();
    });

    it('jobs: only the first of two recoveries claims a live job as interrupted', () => {
      const store = make();
      store.insertJob(newJob('job000000006'));
      store.updateJob('job000000006', { status: 'running' });
      expect(store.claimInterrupted('job000000006', 'running', { finished: 20, error: 'gaffer died' })).toBe(true);
      expect(store.claimInterrupted('job000000006', 'running', { finished: 21, error: 'again' })).toBe(false);
      expect(store.getJob('job000000006')).toMatchObject({
        status: 'interrupted',
        finished: 20,
        error: 'gaffer died',
        phase: 'settled',
      });
      expect(store.hasLiveJobs()).toBe(false);
      store.close();
    });

    it('attempts: listed in their order, their report and detected state typed as written', () => {
      const store = make();
      store.insertJob(newJob('job000000007'));
      const base = {
        jobId: 'job000000007',
        task: 'worker-1',
        attempt: 1,
        role: 'worker',
        runner: 'shell',
        model: null,
        entry: 'local',
        provider: 'here',
        status: 'queued',
        queuedAt: 1,
        logFile: '/l',
      } as const;
      store.insertAttempt({ ...base, worker: 'second', ord: 1 });
      store.insertAttempt({ ...base, worker: 'worker-1', ord: 0 });
      store.updateAttempt('job000000007', 'worker-1', {
        status: 'running',
        started: 2,
        pgid: 123,
        pgStart: 4.5,
        state: { state: 'rate_limited', why: 'w', matched: 'm', retry_at: 99 },
      });
      store.updateAttempt('job000000007', 'worker-1', {
        status: 'done',
        outcome: 'success',
        finished: 3,
        report,
        lastEvent: 'done',
      });
      const [first, second] = store.listAttempts('job000000007');
      expect(first).toMatchObject({
        worker: 'worker-1',
        status: 'done',
        outcome: 'success',
        started: 2,
        finished: 3,
        pgid: 123,
        pgStart: 4.5,
        lastEvent: 'done',
        ord: 0,
        entry: 'local',
        provider: 'here',
      });
      expect(first?.report).toEqual(report);
      expect(first?.state?.retry_at).toBe(99);
      expect(second).toMatchObject({
        worker: 'second',
        status: 'queued',
        outcome: null,
        report: null,
        state: null,
        started: null,
        machine: null,
      });
      // where the attempt machine has it: written at insert and on each move, read back as written
      const machine = {
        task: 'worker-1',
        number: 1,
        kind: 'first' as const,
        state: 'admitted' as const,
        started: false,
        ending: null,
        facts: { exit: null, nothingChanged: false, writeViolation: false, verification: null, gates: null },
        trail: [],
        owed: ['check_gates' as const],
        carried: [],
      };
      store.insertAttempt({ ...base, worker: 'third', ord: 2, machine });
      expect(store.listAttempts('job000000007')[2]?.machine).toEqual(machine);
      store.updateAttempt('job000000007', 'third', { machine: { ...machine, state: 'verifying', started: true } });
      expect(store.listAttempts('job000000007')[2]?.machine).toMatchObject({ state: 'verifying', started: true });
      expect(store.listAttempts('nosuchjob000')).toEqual([]);
      store.close();
    });

    it('attempts: a job waits on a provider while an attempt there is held or requeued, not while its worker only printed a limit', () => {
      const store = make();
      store.insertJob(newJob('job000000008'));
      store.insertAttempt({
        jobId: 'job000000008',
        task: 'w',
        attempt: 1,
        role: 'worker',
        runner: 'builtin',
        model: 'm',
        entry: 'api',
        provider: 'gateway',
        status: 'running',
        queuedAt: 1,
        logFile: '/l',
        worker: 'w',
        ord: 0,
      });
      const stateIs = (state: NonNullable<Parameters<GafferStore['updateAttempt']>[2]['state']>) => {
        store.updateAttempt('job000000008', 'w', { state });
        return store.jobsWaitingOn('gateway');
      };
      // what the worker printed: a detected state, reported
      expect(
        stateIs({ state: 'rate_limited', why: 'the output mentions HTTP 429', matched: '429', confidence: 0.5 }),
      ).toEqual([]);
      expect(stateIs({ state: 'rate_limited', why: 'requeue 1/5', matched: '429', retry_at: 99 })).toEqual([
        'job000000008',
      ]);
      expect(stateIs({ state: 'budget_paused', why: 'the day is spent', matched: 'gateway' })).toEqual([
        'job000000008',
      ]);
      expect(stateIs({ state: 'provider_suspended', why: 'suspended', matched: 'gateway', retry_at: 5 })).toEqual([
        'job000000008',
      ]);
      expect(store.jobsWaitingOn('elsewhere')).toEqual([]);
      store.updateAttempt('job000000008', 'w', { status: 'done', finished: 3 });
      expect(store.jobsWaitingOn('gateway')).toEqual([]);
      store.close();
    });

    it('events: numbered per job, extra fields kept, read after a sequence number, a patch written with its event', () => {
      const store = make();
      store.insertJob(newJob('job000000008'));
      const first = store.appendEvent(
        'job000000008',
        { name: 'job', event: 'phase', message: 'running', ts: 5 },
        { phase: 'running', status: 'running' },
      );
      const second = store.appendEvent('job000000008', {
        name: 'w',
        event: 'state',
        message: 'x',
        state: 'rate_limited',
        n: 2,
      });
      expect(first).toEqual({ seq: 1, ts: 5, name: 'job', event: 'phase', message: 'running' });
      expect(second).toMatchObject({ seq: 2, state: 'rate_limited', n: 2 });
      expect(store.listEvents('job000000008')).toEqual([first, second]);
      expect(store.listEvents('job000000008', 1)).toEqual([second]);
      expect(store.listEvents('job000000008', 0, 1)).toEqual([first]);
      expect(store.getJob('job000000008')).toMatchObject({ seq: 2, phase: 'running', status: 'running' });
      store.close();
    });

    it('events appended together: numbered in order after the last one, with the patch, in one transaction', () => {
      const store = make();
      store.insertJob(newJob('job000000009'));
      store.appendEvent('job000000009', { name: 'job', event: 'phase', message: 'queued' });
      const appended = store.appendEvents(
        'job000000009',
        [
          { name: 'job', event: 'status', message: 'running', ts: 7 },
          { name: 'job', event: 'phase', message: 'checkpointing', detail: 'x' },
        ],
        { status: 'running', phase: 'checkpointing' },
      );
      expect(appended.map((e) => [e.seq, e.message])).toEqual([
        [2, 'running'],
        [3, 'checkpointing'],
      ]);
      expect(appended[0]?.ts).toBe(7);
      expect(appended[1]).toMatchObject({ detail: 'x' });
      expect(store.listEvents('job000000009', 1)).toEqual(appended);
      expect(store.getJob('job000000009')).toMatchObject({ seq: 3, status: 'running', phase: 'checkpointing' });
      expect(store.appendEvents('job000000009', [])).toEqual([]);
      // an unknown job: nothing is written, whatever the count
      expect(() => store.appendEvents('nosuchjob000', [{ name: 'job', event: 'phase', message: 'x' }])).toThrow();
      store.close();
    });

    it('locks: one job per workspace, nested paths colliding, the holder named; released by job or by row', () => {
      const store = make();
      expect(store.tryLockWorkspace('/a/b', 'j1', me.pid, me.start)).toEqual({ ok: true });
      expect(store.tryLockWorkspace('/a/b', 'j1', me.pid, me.start)).toEqual({ ok: true });
      expect(store.tryLockWorkspace('/a/b/c', 'j2', me.pid, me.start)).toEqual({
        ok: false,
        holder: { workspace: '/a/b', jobId: 'j1', pid: me.pid, pidStart: me.start },
        isHolderDead: false,
      });
      expect(store.tryLockWorkspace('/a/bc', 'j3', me.pid, me.start)).toEqual({ ok: true });
      store.releaseLock('/a/b', 'j2');
      expect(store.tryLockWorkspace('/a', 'j2', me.pid, me.start)).toMatchObject({ ok: false });
      store.releaseWorkspace('j1');
      store.releaseWorkspace('j3');
      expect(store.tryLockWorkspace('/a', 'j2', me.pid, me.start)).toEqual({ ok: true });
      store.close();
    });

    it('job processes: recorded, listed and forgotten per job', () => {
      const store = make();
      store.insertJob(newJob('job000000009'));
      store.recordJobProcess({ jobId: 'job000000009', pgid: 11, pgStart: 1.5, what: 'verification-0' });
      store.recordJobProcess({ jobId: 'job000000009', pgid: 12, pgStart: 2.5, what: 'baseline-0' });
      expect(store.listJobProcesses('job000000009').sort((a, b) => a.pgid - b.pgid)).toEqual([
        { jobId: 'job000000009', pgid: 11, pgStart: 1.5, what: 'verification-0' },
        { jobId: 'job000000009', pgid: 12, pgStart: 2.5, what: 'baseline-0' },
      ]);
      store.forgetJobProcess('job000000009', 11);
      expect(store.listJobProcesses('job000000009').map((p) => p.pgid)).toEqual([12]);
      store.close();
    });

    it('outcomes: one per task per job, counted by (type, runner, model, provider, status), scoped by owner, kept after the job is pruned', () => {
      const store = make();
      expect(store.countOutcomes(null)).toEqual([]);
      store.insertJob(newJob('job00000000a', { owner: 'alice' }));
      const outcome = (task: string, extra: Partial<OutcomeRecord> = {}): OutcomeRecord => ({
        ts: '2026-01-02T03:04:05.678Z',
        job: 'job00000000a',
        task,
        rung: 1,
        type: 'fix',
        runner: 'builtin',
        model: 'qwen3:8b',
        provider: 'ollama',
        entry: 'local',
        status: 'passed',
        gates_passed: true,
        escalated_to: null,
        returned: false,
        attempts: 1,
        cost_usd: 0,
        ...extra,
      });
      expect(store.recordOutcome(outcome('a'), 'alice')).toBe(true);
      expect(
        store.recordOutcome(
          outcome('b', { status: 'failed', gates_passed: false, attempts: 2, cost_usd: null }),
          'alice',
        ),
      ).toBe(true);
      expect(
        store.recordOutcome(
          outcome('c', { model: null, provider: null, status: 'not_dispatched', gates_passed: false }),
          'alice',
        ),
      ).toBe(true);
      // the job logs a task once
      expect(store.recordOutcome(outcome('a', { status: 'failed' }), 'alice')).toBe(false);
      expect(store.recordOutcome(outcome('d', { job: 'job00000000b' }), null)).toBe(true);
      // spec 05: a task that climbed its ladder has an outcome per rung; abstained ones count in neither figure
      expect(
        store.recordOutcome(
          outcome('a', {
            rung: 2,
            entry: 'mid',
            status: 'failed',
            gates_passed: false,
            escalated_to: null,
            returned: true,
          }),
          'alice',
        ),
      ).toBe(true);
      expect(
        store.recordOutcome(outcome('e', { status: 'abstained', gates_passed: false, escalated_to: 'mid' }), 'alice'),
      ).toBe(true);
      expect([...store.entryAcceptance('fix')].sort()).toEqual([
        ['local', { accepted: 2, total: 3 }],
        ['mid', { accepted: 0, total: 1 }],
      ]);
      expect(store.entryAcceptance('sweep').size).toBe(0);
      const byKey = (counts: ReturnType<GafferStore['countOutcomes']>) =>
        counts.map((c) => `${c.type} ${c.runner} ${c.model} ${c.provider} ${c.status} ${c.count}`).sort();
      expect(byKey(store.countOutcomes('alice'))).toEqual([
        'fix builtin null null not_dispatched 1',
        'fix builtin qwen3:8b ollama abstained 1',
        'fix builtin qwen3:8b ollama failed 2',
        'fix builtin qwen3:8b ollama passed 1',
      ]);
      expect(byKey(store.countOutcomes(null))).toEqual([
        'fix builtin null null not_dispatched 1',
        'fix builtin qwen3:8b ollama abstained 1',
        'fix builtin qwen3:8b ollama failed 2',
        'fix builtin qwen3:8b ollama passed 2',
      ]);
      expect(store.countOutcomes('bob')).toEqual([]);
      // the acceptance history outlives the jobs' retention
      store.updateJob('job00000000a', { status: 'done' });
      expect(store.pruneFinishedJobs(0)).toEqual(['job00000000a']);
      expect(byKey(store.countOutcomes('alice'))).toHaveLength(4);
      store.close();
    });
  });
}
