import type { NotifySettings } from './settle/notify.js';
import type { Operations } from './admission/operations.js';
import type { Billing } from '../domain/route.js';
import type { ApprovalPolicy } from '../domain/approval.js';
import { join } from 'node:path';
import type { JobStatus } from '../domain/status.js';
import type { Runner } from '../runners/contract.js';
import type { SandboxNetwork } from '../platform/sandbox/network.js';
import type { Sandbox } from '../platform/sandbox/sandbox.js';
import type { JobEvent, JobPatch, JobRow, NewJobEvent, Store } from '../store/store.js';
import { AttemptLedger } from './pipeline/attempt-ledger.js';
import type { JobBus } from './bus.js';
import type { Executor } from './execution/executor.js';
import type { Placement } from './placement/placement.js';
import type { WorktreeSettings } from './placement/worktree.js';
import type { Router } from './routing/router.js';
import { SteerInbox } from './admission/steer-inbox.js';

/**
 * What a running job reaches of its engine: the store, the bus, the runners, and the pipeline's
 * seams (issue 12) — the Router picks each attempt's route, the Placement where the job works, the
 * Executor runs the attempts' processes under the worker cap. compose.ts picks them.
 */
export interface EngineServices {
  store: Store;
  bus: JobBus;
  runners: ReadonlyMap<string, Runner>;
  router: Router;
  placement: Placement;
  executor: Executor;
  dataDir: string;
  /** After a related-scope verification, run the full suite once on the final state (spec 03 "Scope"). */
  confirmFullSuite: boolean;
  /** The verification's network under the sandbox (config `network.verification`, `loopback_ports`; spec 04). */
  verificationNetwork: SandboxNetwork;
  /** Worktree isolation's settings (config `worktrees`, `fanout`; spec 06). */
  worktrees: WorktreeSettings;
  /** The sandbox the workers' runners were given (made once from config `sandbox`): the verification, baseline and criteria run under it when the workers ran sandboxed (spec 03). */
  sandbox: Sandbox;
  /** Config `approval` (spec 05): what `approval: "auto"` asks, and how long an ask waits. */
  approval: ApprovalPolicy;
  /** Who pays for a runner's calls (config `runners.<key>.billing`): an `api` task always asks (spec 05). */
  billing: (runner: string) => Billing;
  /** The handoff prompt's standing rules (config `handoff.rules`). */
  handoffRules: readonly string[];
  /** Config `notify`: told when a job's asks open and when it ends. */
  notify: NotifySettings;
  /** Budgets, provider suspensions, the breaker and spend (spec 07, issue 15). */
  operations: Operations;
}

/** One job being run by this process. */
export class JobContext {
  readonly services: EngineServices;
  readonly id: string;
  readonly abort = new AbortController();
  /** The job's attempts, moved only through the attempt machine; each move is stored on the attempt's row. */
  readonly attempts: AttemptLedger;
  /** The tasks a person said yes to before they started (the job's asks): their first attempts pass their gates as `approved`. */
  readonly approvedByAsk = new Set<string>();
  /** Set when gaffer itself is shutting down: the job ends `interrupted` with this reason, not `cancelled`. */
  interruptReason: string | null = null;
  /** Settles when the job is final. */
  done: Promise<void> = Promise.resolve();
  /** Messages sent to its tasks while it runs (issue 16), until an attempt takes them or the job ends. */
  readonly inbox: SteerInbox;
  #job: JobRow;

  constructor(services: EngineServices, job: JobRow) {
    this.services = services;
    this.id = job.id;
    this.#job = job;
    this.attempts = new AttemptLedger((worker, attempt) =>
      services.store.updateAttempt(job.id, worker, { machine: attempt }),
    );
    this.inbox = new SteerInbox((events) => this.emitAll(events));
  }

  get job(): JobRow {
    return this.#job;
  }

  get spec(): JobRow['spec'] {
    return this.#job.spec;
  }

  get isCancelled(): boolean {
    return this.abort.signal.aborted;
  }

  /** Where this job's logs and instruction files live. */
  get jobDir(): string {
    return join(this.services.dataDir, 'jobs', this.id);
  }

  /** Writes a job change to the store (first), then keeps the in-memory row in step. */
  update(patch: JobPatch): void {
    this.services.store.updateJob(this.id, patch);
    this.#job = { ...this.#job, ...patch };
  }

  /**
   * Records an event (with the job change it reports, in the same transaction), then announces
   * it: every state change is written before it is announced.
   */
  emit(event: NewJobEvent, patch: JobPatch = {}): JobEvent {
    return this.emitAll([event], patch)[0] as JobEvent;
  }

  /**
   * Records several events in order, with the job change they report, in one transaction (one
   * commit on the engine's thread where each would take its own), then announces them in order.
   */
  emitAll(events: readonly NewJobEvent[], patch: JobPatch = {}): JobEvent[] {
    const stored = this.services.store.appendEvents(this.id, events, patch);
    this.#job = { ...this.#job, ...patch, seq: stored.at(-1)?.seq ?? this.#job.seq };
    for (const e of stored) this.services.bus.publish({ ...e, jobId: this.id });
    return stored;
  }

  /** A job phase message (spec 02 "Live events"), with any job change that goes with it. */
  phase(message: string, patch: JobPatch = {}): void {
    this.emit(phaseEvent(message), { ...patch, phase: message });
  }

  /** A status change, written then announced as a `status` event. */
  setStatus(status: JobStatus, patch: JobPatch = {}): void {
    this.emit(statusEvent(status), { ...patch, status });
  }

  /** A status change and the phase it starts, written together: `status` then `phase`. */
  enter(status: JobStatus, phase: string, patch: JobPatch = {}): void {
    this.emitAll([statusEvent(status), phaseEvent(phase)], { ...patch, status, phase });
  }

  /** The job's last phase and its final status, written with the final patch: `phase` then `status`. */
  settle(phase: string, status: JobStatus, patch: JobPatch): void {
    this.emitAll([phaseEvent(phase), statusEvent(status)], { ...patch, phase, status });
  }
}

const phaseEvent = (message: string): NewJobEvent => ({ name: 'job', event: 'phase', message });
const statusEvent = (status: JobStatus): NewJobEvent => ({ name: 'job', event: 'status', message: status, status });
