import { buildAcceptance, type AcceptanceReport } from '../../domain/acceptance.js';
import { GafferError } from '../../domain/errors.js';
import { isFinalStatus, JOB_STATUSES } from '../../domain/status.js';
import { fileDiff } from '../../evidence/index.js';
import type { Runner } from '../../runners/contract.js';
import { describeRunners, type RunnerRow } from '../../runners/table.js';
import type { JobEvent, JobRow, Store } from '../../store/store.js';
import type { RecentCounts } from '../../store/ports.js';
import { PACE_WINDOW, paceOf, type WorkspacePace } from './ceiling.js';
import { buildCompact, type CompactJob } from './compact.js';
import { readTail } from './job-files.js';
import { worktreeTaskDiff } from './task-diff.js';

/** `gaffer stats`, `GET /api/stats`: the acceptance report, and `recent` job counts. */
export type StatsAnswer = AcceptanceReport & { recent: RecentCounts };

/** Live jobs whose workspace pace is remembered (see JobQueries.#paces). */
const PACES_KEPT = 1_000;

/** Who is asking: an owner sees only their jobs (null: everything, single-user). */
export interface Caller {
  owner?: string | null;
}

/**
 * The engine's reads of what the store holds: one place decides which jobs a caller may see and
 * how a job is answered, so admission, waits and cancel answer the same way as `get`.
 */
export class JobQueries {
  readonly #store: Store;
  readonly #runners: ReadonlyMap<string, Runner>;
  readonly #workerCap: number;
  /**
   * Each live job's workspace pace, read once when it is queued and once when it starts: an SSE
   * stream answers the job on every event, and the history hardly moves while the job runs.
   */
  readonly #paces = new Map<string, { started: number | null; pace: WorkspacePace | null }>();

  readonly #remote: boolean;

  constructor(store: Store, runners: ReadonlyMap<string, Runner>, workerCap: number, opts: { remote?: boolean } = {}) {
    this.#store = store;
    this.#runners = runners;
    this.#workerCap = workerCap;
    this.#remote = opts.remote ?? false;
  }

  /** The node that took each attempt, by worker name, from the job's `node` events (a coordinator's jobs only). */
  #nodesOf(jobId: string): Map<string, string> | undefined {
    if (!this.#remote) return undefined;
    const nodes = new Map<string, string>();
    for (const e of this.#store.listEvents(jobId))
      if (e.event === 'node' && e.node_event === 'taken' && typeof e.node === 'string') nodes.set(e.name, e.node);
    return nodes;
  }

  /** The stored job, or `not_found` when it does not exist or belongs to another owner. */
  visibleJob(id: string, opts: Caller): JobRow {
    const job = this.#store.getJob(id);
    if (!job || (opts.owner != null && job.owner !== opts.owner)) {
      throw new GafferError(
        'not_found',
        `no job ${JSON.stringify(id)}${opts.owner != null ? ' visible to this owner' : ''} — see gaffer list`,
        'job_id',
      );
    }
    return job;
  }

  /** The compact answer of a stored job row. */
  compact(job: JobRow, full = false): CompactJob {
    // spec 07: the full answer carries the evidence the job left its objectives (one indexed read)
    const evidence =
      full && job.spec.objectives ? { evidence: this.#store.listObjectiveEvidence({ jobId: job.id }) } : {};
    return buildCompact(job, this.#store.listAttempts(job.id), {
      full,
      workerCap: this.#workerCap,
      asks: this.#store.listAsks(job.id).map((a) => a.ask),
      pace: this.#paceOf(job),
      ...evidence,
      ...(this.#remote ? { nodes: this.#nodesOf(job.id) } : {}),
    });
  }

  /** What jobs in a live job's workspace took (spec 07), from the cache or one indexed read; null once it is final. */
  #paceOf(job: JobRow): WorkspacePace | null {
    if (isFinalStatus(job.status)) {
      this.#paces.delete(job.id);
      return null;
    }
    const known = this.#paces.get(job.id);
    if (known !== undefined && known.started === job.started) return known.pace;
    const pace = paceOf(this.#store.recentDurations(job.workspace, PACE_WINDOW));
    // a job that ended in another process and was never read again stays until the oldest are dropped
    if (known === undefined && this.#paces.size >= PACES_KEPT)
      this.#paces.delete(this.#paces.keys().next().value ?? '');
    this.#paces.set(job.id, { started: job.started, pace });
    return pace;
  }

  /** The compact answer of a job. */
  get(id: string, opts: Caller & { full?: boolean } = {}): CompactJob {
    return this.compact(this.visibleJob(id, opts), opts.full);
  }

  /** Recent jobs, newest first, as briefs (compact without `result`). */
  list(opts: Caller & { limit?: number; status?: string } = {}): CompactJob[] {
    if (opts.status !== undefined && !(JOB_STATUSES as readonly string[]).includes(opts.status)) {
      throw new GafferError(
        'invalid_request',
        `status: must be one of ${JOB_STATUSES.join(', ')}, got ${JSON.stringify(opts.status)}`,
        'status',
      );
    }
    const rows = this.#store.listJobs({
      limit: Math.min(Math.max(opts.limit ?? 50, 1), 1_000),
      status: opts.status,
      owner: opts.owner,
    });
    return rows.map((row) => {
      const { result: _result, ...brief } = this.compact(row);
      return brief;
    });
  }

  /** The job's events after `after` and how many it produced. */
  events(id: string, opts: Caller & { after?: number } = {}): { events: JobEvent[]; produced: number } {
    const job = this.visibleJob(id, opts);
    return { events: this.#store.listEvents(id, opts.after ?? 0), produced: job.seq };
  }

  /**
   * The unified diff of one changed path (binary: a size line): against the checkpoint, or — for a
   * worktree job, whose tasks each have a branch — between the base and `task`'s commit.
   */
  async diff(id: string, path: string, opts: Caller & { task?: string | undefined } = {}): Promise<string> {
    const job = this.visibleJob(id, opts);
    if (job.spec.isolation === 'worktree') return worktreeTaskDiff(job, path, opts.task);
    if (opts.task !== undefined) {
      throw new GafferError(
        'invalid_request',
        `task: job ${id} ran its tasks in one shared workspace, so it has one diff against its checkpoint — leave task out (got ${JSON.stringify(opts.task)})`,
        'task',
      );
    }
    const snaps = job.checkpoint;
    if (!snaps?.pre) throw new GafferError('conflict', `job ${id} has no checkpoint yet (${job.status})`);
    return fileDiff(snaps.pre, isFinalStatus(job.status) ? (snaps.post ?? null) : null, path);
  }

  /** The last `tailBytes` of a worker's output log. */
  workerLog(id: string, worker: string, tailBytes: number, opts: Caller = {}): string {
    this.visibleJob(id, opts);
    const attempt = this.#store.listAttempts(id).find((a) => a.worker === worker);
    if (!attempt?.logFile)
      throw new GafferError('not_found', `job ${id} has no worker ${JSON.stringify(worker)}`, 'name');
    return readTail(attempt.logFile, tailBytes);
  }

  /** The runner table. */
  runners(): RunnerRow[] {
    return describeRunners(this.#runners);
  }

  /** The acceptance rate per (type, model) from the outcome log's rows (spec 05) and the `recent` job counts (spec 07), of the caller's jobs. */
  stats(opts: Caller = {}): StatsAnswer {
    const owner = opts.owner ?? null;
    return { ...buildAcceptance(this.#store.countOutcomes(owner)), recent: this.#store.countRecent(owner) };
  }
}
