import { createHash, randomBytes } from 'node:crypto';
import { GafferError } from '../../domain/errors.js';
import { describeVerify, LIMITS, parseJobRequest, type JobSpec } from '../../domain/request.js';
import type { FollowUpBase, FollowUpLink } from '../../domain/follow-up.js';
import { admittedRoute, billingOfRoute } from '../../domain/routing.js';
import { lintJob, type LintReport, type SpecLintMode } from '../../domain/spec-lint.js';
import { isFinalStatus } from '../../domain/status.js';
import { ownProcessIdentity } from '../../platform/process/process-identity.js';
import type { Runner } from '../../runners/contract.js';
import type { JobRow, Store } from '../../store/store.js';
import { epochS } from '../clock.js';
import type { CompactJob } from '../queries/compact.js';
import { planFollowUp } from './follow-up.js';
import { mergeSpec } from '../placement/merge-later.js';
import type { Caller, JobQueries } from '../queries/queries.js';
import { rosterFor } from './roster-source.js';
import { remoteCheckoutOf, remoteRoot } from '../placement/remote-checkout.js';
import type { Operations } from './operations.js';
import type { Roster } from '../../domain/roster.js';
import type { Billing } from '../../domain/route.js';
import {
  vetTaskPaths,
  vetWorkspace,
  vetWorktreeRepository,
  workspacesHolding,
  type WorkspaceRules,
} from './workspace-vetting.js';

export const IDEMPOTENCY_WINDOW_S = 3_600;

/** How admission judges a request. */
export interface AdmissionOptions {
  dataDir: string;
  runners: ReadonlyMap<string, Runner>;
  /** The configured default runner for tasks that name none. */
  defaultRunner: string | null;
  /** Config `roster` (spec 05); null: a `gaffer.roster.json` in the data dir or the workspace may apply (roster-source.ts). */
  roster: Roster | null;
  /** Who pays for a runner's calls (config `runners.<key>.billing`). */
  billing: (runner: string) => Billing;
  /** Spec lint at dispatch (spec 07). */
  specLint: SpecLintMode;
  /** Config `routing` (spec 05): with `learn`, a task starts on the rung its type's logged acceptance earns; null: off. */
  learn: { minAcceptance: number } | null;
  /** Config `timeouts` for requests that give none; null: the request parser's defaults. */
  timeouts: { worker_s: number; verify_s: number } | null;
  /** The config file read and config `protected_paths` (issue 11, workspace-vetting.ts). */
  protect: Pick<WorkspaceRules, 'configFile' | 'protectedPaths'>;
  /** The breaker and the budgets asked before a job starts (spec 07). */
  operations: Operations;
  /** spec 09: jobs on a remote repository (`repo`) are taken — a cluster's coordinator. */
  remoteRepos?: boolean;
  /** spec 09: whether a live node of the cluster offers a runner — one not installed here is then taken (it runs there). */
  offeredByNodes?: (runner: string) => boolean;
}

/** What admission hands on: whether jobs are still accepted, and where an admitted job goes to run. */
export interface AdmissionHooks {
  isClosed: () => boolean;
  start: (job: JobRow) => void;
}

/**
 * Turns a request into a job, or refuses it: parsing, the workspace vetting, the runners' own
 * checks, spec lint and idempotency all run before anything is stored or started.
 */
export class Admission {
  readonly #store: Store;
  readonly #queries: JobQueries;
  readonly #opts: AdmissionOptions;
  readonly #hooks: AdmissionHooks;

  constructor(store: Store, queries: JobQueries, opts: AdmissionOptions, hooks: AdmissionHooks) {
    this.#store = store;
    this.#queries = queries;
    this.#opts = opts;
    this.#hooks = hooks;
  }

  /** Validates and starts a job; an idempotency key already used returns the first job (`created: false`). */
  submit(
    body: unknown,
    opts: Caller & {
      idempotencyKey?: string | null;
      cwd?: string | null;
      followUp?: FollowUpLink;
      followUpBase?: FollowUpBase;
      pins?: ReadonlyMap<string, string>;
    } = {},
  ): { job: CompactJob; created: boolean } {
    if (this.#hooks.isClosed()) throw new GafferError('internal', 'the engine is shutting down');
    const spec = this.#parse(body, opts.pins);
    // set here, never parsed: the request schema refuses the fields, so only followUp() links a job (and bases it on a branch)
    if (opts.followUp) spec.follow_up = opts.followUp;
    if (opts.followUp && opts.followUpBase) spec.follow_up_base = opts.followUpBase;
    const id = randomBytes(6).toString('hex');
    if (spec.repo) {
      // spec 09: its checkout is made when it starts; until then it is known by its remote
      if (!this.#opts.remoteRepos)
        throw new GafferError(
          'not_supported',
          'repo: a remote repository is worked on by a cluster (gaffer serve --queue redis://…) — on one machine, clone it and give its folder as `workspace`',
          'repo',
        );
      spec.workspace = remoteRoot(this.#opts.dataDir, spec.repo.url);
    } else {
      // opts.cwd: the client's working directory; inside a live job's workspace, the request comes from that job
      const spawnedFrom = opts.cwd
        ? workspacesHolding(
            opts.cwd,
            this.#store.listLiveJobs().map((j) => j.spec.workspace),
          )
        : [];
      spec.workspace = vetWorkspace(spec.workspace, {
        dataDir: this.#opts.dataDir,
        ...this.#opts.protect,
        spawnedFrom,
      });
      vetTaskPaths(spec.workspace, spec);
      if (spec.isolation === 'worktree') vetWorktreeRepository(spec.workspace);
    }
    this.#vetRunners(spec);
    this.#applySpecLint(spec);
    const idemKey = idempotencyKeyOf(spec, opts.idempotencyKey ?? null);
    const requestHash = hashSpec(spec);
    if (spec.repo) spec.workspace = remoteCheckoutOf(this.#opts.dataDir, spec.repo, id);
    return this.#admit(id, spec, { owner: opts.owner ?? null, idemKey, requestHash });
  }

  /**
   * A merge later of a finished worktree job's passing branches (or one task's): a job of its own,
   * stored, run and cancelled like any (merge-later.ts). Refused before anything is stored when there
   * is nothing to merge, or while another merge of the job is live.
   */
  async merge(id: string, task: string | null, opts: Caller = {}): Promise<{ job: CompactJob; created: boolean }> {
    if (this.#hooks.isClosed()) throw new GafferError('internal', 'the engine is shutting down');
    const spec = await mergeSpec(this.#store, this.#queries.visibleJob(id, opts), task);
    return this.#admit(randomBytes(6).toString('hex'), spec, {
      owner: opts.owner ?? null,
      idemKey: null,
      requestHash: hashSpec(spec),
    });
  }

  /** Stores an admitted job (its first, for an idempotency key used before) and starts it. */
  #admit(
    id: string,
    spec: JobSpec,
    opts: { owner: string | null; idemKey: string | null; requestHash: string },
  ): { job: CompactJob; created: boolean } {
    const { idemKey, requestHash } = opts;
    const me = ownProcessIdentity();
    const { job, created } = this.#store.insertJob(
      {
        id,
        owner: opts.owner,
        spec,
        created: epochS(),
        idemKey,
        requestHash,
        idemWindowS: IDEMPOTENCY_WINDOW_S,
        pid: me.pid,
        pidStart: me.start,
      },
      () => {
        // spec 07: the breaker and the budgets, for a new job only (a repeated key gets its first job)
        const warnings = this.#opts.operations.admit(spec);
        if (warnings.length > 0) spec.warnings = warnings;
      },
    );
    if (!created) {
      if (job.requestHash !== requestHash) {
        throw new GafferError(
          'conflict',
          `idempotency key ${JSON.stringify(idemKey)} was used for job ${job.id} with a different request — use a new key`,
          'client_request_id',
        );
      }
      return { job: this.#queries.compact(job), created: false };
    }
    this.#hooks.start(job);
    return { job: this.#queries.compact(job), created: true };
  }

  /** The spec-lint report of a request, without dispatching (`gaffer lint`, `POST /api/lint`). */
  lint(body: unknown): LintReport {
    // a request that would be refused at dispatch is refused here too, with the same error
    const spec = this.#parse(body);
    this.#vetRunners(spec);
    const routes = spec.tasks.map((t) => ({
      task: t.name,
      runner: t.runner,
      model: t.model,
      entry: t.roster?.entry ?? null,
      billing: billingOfRoute(t, admittedRoute(t), this.#opts.billing),
      why: t.roster?.why ?? null,
    }));
    return { ...lintJob(spec, this.#opts.specLint === 'off' ? 'warn' : this.#opts.specLint), routes };
  }

  /** A new job for the tasks of this one that did not end `done`, same settings. */
  redispatch(id: string, opts: Caller = {}): { job: CompactJob; created: boolean } {
    const job = this.#queries.visibleJob(id, opts);
    if (!isFinalStatus(job.status))
      throw new GafferError('conflict', `job ${id} is still ${job.status}; wait for it or cancel it first`);
    const attempts = this.#store.listAttempts(id);
    const done = new Set(attempts.filter((a) => a.role === 'worker' && a.status === 'done').map((a) => a.task));
    const tasks = job.spec.tasks.filter((t) => !done.has(t.name));
    if (tasks.length === 0)
      throw new GafferError('conflict', `every task of job ${id} ended done; nothing to re-dispatch`);
    // what the engine wrote on the spec as the job ran is not a request's: the new job makes its own
    const {
      spec_lint: _lint,
      client_request_id: _key,
      objectives: _objectives,
      task_order: _order,
      follow_up: link,
      follow_up_base: base,
      verify,
      workspace,
      ...rest
    } = job.spec;
    const body = {
      ...rest,
      // a job on a remote repository is checked out anew
      ...(rest.repo ? {} : { workspace }),
      verify: describeVerify(verify),
      title: `${job.title} (re-dispatch of ${id})`,
      // a task the roster routed is routed again, by the roster as it is now; the others keep their runner
      tasks: tasks.map(({ runner, model, command, roster, brief, ...t }) => ({
        ...t,
        ...brief,
        ...(roster ? {} : { runner, ...(model ? { model } : {}) }),
        ...(command ? { command } : {}),
      })),
    };
    // a follow-up's re-dispatch is still that task's follow-up (on its branch, for a worktree job), in a new session
    return this.submit(body, {
      ...opts,
      ...(link ? { followUp: { ...link, resumed: false } } : {}),
      ...(base ? { followUpBase: base } : {}),
    });
  }

  /**
   * A new job in the same workspace for a finished job's task, told the review's comments and note
   * (issue 16); its first attempt resumes the task's session where it can. A worktree job's task is
   * followed up in a worktree from its branch.
   */
  async followUp(
    id: string,
    task: string,
    body: unknown,
    opts: Caller = {},
  ): Promise<{ job: CompactJob; created: boolean }> {
    const job = this.#queries.visibleJob(id, opts);
    if (job.spec.repo)
      throw new GafferError(
        'not_supported',
        `job ${id} worked on a remote repository: its checkout is gone — review its branch gaffer/${id}/${task} on ${job.spec.repo.url}, and dispatch a new job for what is left`,
        'job',
      );
    const plan = await planFollowUp(this.#store, job, task, body);
    // it goes on where the task last ran, routed and billed as that roster entry (an api rung asks again)
    const pins = plan.entry !== null ? new Map([[task, plan.entry]]) : undefined;
    return this.submit(plan.body, {
      ...opts,
      followUp: plan.link,
      ...(plan.base ? { followUpBase: plan.base } : {}),
      ...(pins ? { pins } : {}),
    });
  }

  #parse(body: unknown, pins?: ReadonlyMap<string, string>): JobSpec {
    const { timeouts, defaultRunner, runners, billing } = this.#opts;
    const defaults = timeouts === null ? {} : { timeoutS: timeouts.worker_s, verifyTimeoutS: timeouts.verify_s };
    const workspace =
      typeof body === 'object' && body !== null ? (body as { workspace?: unknown }).workspace : undefined;
    const roster = rosterFor(this.#opts.roster, this.#opts.dataDir, workspace);
    const learn = this.#opts.learn
      ? {
          minAcceptance: this.#opts.learn.minAcceptance,
          acceptance: (type: string) => this.#store.entryAcceptance(type),
        }
      : null;
    return parseJobRequest(body, {
      defaultRunner,
      available: [...runners.keys()],
      roster,
      billing,
      ...defaults,
      ...(learn ? { learn } : {}),
      ...(pins ? { pins } : {}),
    });
  }

  #vetRunners(spec: JobSpec): void {
    // the judge's endpoint, like an entry's, is said before anything runs, not met as an abstention
    if (spec.judge?.endpoint !== undefined)
      this.#opts.runners
        .get('builtin')
        ?.vetEndpoint?.(spec.judge.endpoint, `roster judge ${spec.judge.entry}.endpoint`);
    spec.tasks.forEach((task, i) => {
      const endpoint = task.roster?.endpoint;
      try {
        this.#opts.runners
          .get(task.runner)
          ?.vet?.({ model: task.model, ...(endpoint ? { endpoint } : {}) }, `tasks[${i}].runner`);
      } catch (err) {
        const offered = this.#opts.offeredByNodes;
        if (!(err instanceof GafferError) || err.code !== 'runner_not_installed' || offered === undefined) throw err;
        if (!offered(task.runner))
          throw new GafferError(
            err.code,
            `${err.message} — or start a node that has it (gaffer node --runners ${task.runner}): no live node of this cluster offers it`,
            err.field,
          );
      }
      // the rungs a climb may reach are checked now too: an endpoint that cannot work is said before anything runs
      for (const rung of task.roster?.ladder ?? []) {
        if (rung.endpoint !== null)
          this.#opts.runners.get(rung.runner)?.vetEndpoint?.(rung.endpoint, `roster entry ${rung.entry}.endpoint`);
      }
    });
  }

  /** spec 07: `enforce` refuses a request that needs detail; `warn` records the findings on the job. */
  #applySpecLint(spec: JobSpec): void {
    const mode = this.#opts.specLint;
    if (mode === 'off') return;
    const report = lintJob(spec, mode);
    if (!report.ok && mode === 'enforce') {
      throw new GafferError(
        'needs_detail',
        `the request needs detail before it runs: ${report.needs_detail.map((f) => `${f.task}: ${f.message}`).join('; ')}`,
        'tasks',
        { lint: report },
      );
    }
    if (!report.ok) spec.spec_lint = { mode: report.mode, needs_detail: report.needs_detail, codes: report.codes };
  }
}

/** The request's idempotency key: the header's or the body's `client_request_id`, refused when they disagree. */
function idempotencyKeyOf(spec: JobSpec, headerKey: string | null): string | null {
  // the same limits as client_request_id: an empty key would tie every keyless-looking request together
  if (headerKey !== null && (headerKey.trim() === '' || headerKey.length > LIMITS.clientRequestId)) {
    throw new GafferError(
      'invalid_request',
      `Idempotency-Key: must be 1..${LIMITS.clientRequestId} characters, got ${headerKey.trim() === '' ? 'an empty key' : `${headerKey.length} characters`}`,
      'Idempotency-Key',
    );
  }
  if (headerKey !== null && spec.client_request_id !== null && headerKey !== spec.client_request_id) {
    throw new GafferError(
      'invalid_request',
      `the Idempotency-Key header (${JSON.stringify(headerKey)}) and client_request_id (${JSON.stringify(spec.client_request_id)}) disagree — send one, or the same in both`,
      'client_request_id',
    );
  }
  return headerKey ?? spec.client_request_id;
}

/** What makes two requests the same: the spec without its key (a header key and a body key are one key). */
function hashSpec(spec: JobSpec): string {
  const { client_request_id: _key, ...request } = spec;
  return createHash('sha256').update(JSON.stringify(request)).digest('hex');
}
