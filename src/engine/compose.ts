import { NO_NOTIFY, type NotifySettings } from './settle/notify.js';
import { DEFAULT_APPROVAL_POLICY, type ApprovalPolicy } from '../domain/approval.js';
import { resolve } from 'node:path';
import type { SpecLintMode } from '../domain/spec-lint.js';
import type { Roster } from '../domain/roster.js';
import { DEFAULT_CONFIG, type GafferConfig } from '../config/config.js';
import type { Billing } from '../domain/route.js';
import type { Runner } from '../runners/contract.js';
import { getRunner, listRunnerKeys } from '../runners/index.js';
import { NO_NETWORK, type SandboxNetwork } from '../platform/sandbox/network.js';
import { createSandbox, type Sandbox } from '../platform/sandbox/sandbox.js';
import type { Store } from '../store/store.js';
import { JobBus } from './bus.js';
import { Operations, type OperationsSettings } from './admission/operations.js';
import { LocalExecutor } from './execution/local.js';
import { BullmqExecutor, type ClusterSettings } from './execution/bullmq.js';
import type { EngineServices, JobContext } from './job-context.js';
import { LiveJobs } from './queue/live-jobs.js';
import type { JobQueue } from './queue/job-queue.js';
import { SharedPlacement } from './placement/shared.js';
import type { JobPlacement } from './placement/job-placement.js';
import { sharedJob } from './placement/shared-job.js';
import { remoteCheckoutJob } from './placement/remote-job.js';
import { worktreeJob } from './placement/worktree-job.js';
import { runJob } from './pipeline/job-life.js';
import { runMergeJob } from './placement/merge-later.js';
import type { JobSpec } from '../domain/request.js';
import { DEFAULT_WORKTREE_SETTINGS, type WorktreeSettings } from './placement/worktree.js';
import { rosterRouter, type Router } from './routing/router.js';
import type { WorkspaceRules } from './admission/workspace-vetting.js';

/** How an engine is set up. */
export interface EngineOptions {
  dataDir: string;
  /** The worker cap (`workers.max_parallel`), default 2. */
  maxParallel?: number;
  /** Runners by key; default: the built-in registry. */
  runners?: ReadonlyMap<string, Runner>;
  /** The configured default runner for tasks that name none. */
  defaultRunner?: string | null;
  /** Finished jobs kept (`retention.jobs`), default 200. */
  retentionJobs?: number;
  /** How often this process looks for cancels asked by other processes, ms. */
  cancelPollMs?: number;
  /** Spec lint at dispatch (spec 07), default `warn`. */
  specLint?: SpecLintMode;
  /** Config `timeouts`: per-worker and verification timeouts (s) for requests that give none. */
  timeouts?: { worker_s: number; verify_s: number };
  /** Config `verification.confirm_full_suite` (default true): a related-scope verification is confirmed by one full-suite run. */
  confirmFullSuite?: boolean;
  /** The verification's network under the sandbox (`verificationNetwork(config)`); default `none`, nothing forwarded. */
  verificationNetwork?: SandboxNetwork;
  /** The runners' sandbox (`createSandbox(config.sandbox)`), for the verification; default bubblewrap under `auto`. */
  sandbox?: Sandbox;
  /**
   * Start git through the small spawner process (see platform/spawner/spawner.ts): for a long-lived
   * engine (a server, MCP) that runs many jobs; a one-shot command spawns directly. Default false.
   */
  spawner?: boolean;
  /** Config `roster` (spec 05): routes the tasks that name no runner; default none (a `gaffer.roster.json` may apply). */
  roster?: Roster | null;
  /** Config `runners.<key>.billing` (spec 04): an `api`-billed task always asks (spec 05); default: each runner's own. */
  billing?: Readonly<Record<string, Billing>>;
  /** Config `routing` (spec 05): `learn` starts a task on the rung its type's logged acceptance earns (`minAcceptance`, default 0.8); default off. */
  routing?: { learn: boolean; minAcceptance?: number };
  /** Config `handoff.rules`: the standing rules of every agent worker's prompt (spec 05); default config's. */
  handoffRules?: readonly string[];
  /** Routes each attempt; default: the roster's router (`rosterRouter`). A partial one keeps the default's other decisions. */
  router?: Partial<Router>;
  /** Worktree isolation's settings (config `worktrees`, `fanout`); default: worktrees under the data dir, nothing copied or set up. */
  worktrees?: Partial<WorktreeSettings>;
  /** Config `approval` (spec 05): `default` and `timeout_s`; default: `auto` asks nothing, 24 h to answer. */
  approval?: Partial<ApprovalPolicy>;
  /** Config `notify`: a command and/or webhook told when asks open and when a job ends; default none. */
  notify?: NotifySettings;
  /** Config `budgets`, `prices`, `breaker`, and the clock they are judged by (spec 07, issue 15); default none, the wall clock. */
  operations?: Partial<OperationsSettings>;
  /** The config file read and config `protected_paths`: folders no job may be created for (issue 11, workspace-vetting.ts). */
  protect?: Pick<WorkspaceRules, 'configFile' | 'protectedPaths'>;
  /** Run the attempts on worker nodes through BullMQ (spec 09, `gaffer serve --queue`); default: in this process. */
  cluster?: ClusterSettings;
  /**
   * The config the options above were read from: `Engine.roster()` judges routing with it, as
   * `gaffer doctor` does. Default: the defaults with `defaultRunner`, `roster` and `routing` above.
   */
  config?: GafferConfig;
}

/** The config an engine's routing is described by (EngineOptions `config`). */
export function configOf(opts: EngineOptions): GafferConfig {
  if (opts.config) return opts.config;
  const routing = {
    learn: opts.routing?.learn ?? false,
    min_acceptance: opts.routing?.minAcceptance ?? DEFAULT_CONFIG.routing.min_acceptance,
  };
  return { ...DEFAULT_CONFIG, default_runner: opts.defaultRunner ?? null, roster: opts.roster ?? null, routing };
}

/**
 * The composition root (issue 12): the one place that picks the pipeline's implementations — the
 * Router, the Placement, the Executor and the Sandbox, and the JobQueue below — for an engine. Routing by roster (issue 14),
 * worktrees (issue 13) and remote execution (issue 17) are new choices made here, nowhere else.
 */
export function composeServices(opts: EngineOptions, store: Store): EngineServices {
  const bus = new JobBus();
  const billing = billingOf(opts.billing);
  return {
    store,
    bus,
    runners: opts.runners ?? new Map(listRunnerKeys().map((k) => [k, getRunner(k) as Runner])),
    router: { ...rosterRouter(billing), ...opts.router },
    placement: new SharedPlacement(store, bus),
    executor: opts.cluster
      ? new BullmqExecutor(opts.cluster, resolve(opts.dataDir))
      : new LocalExecutor(opts.maxParallel ?? 2),
    dataDir: resolve(opts.dataDir),
    confirmFullSuite: opts.confirmFullSuite ?? true,
    verificationNetwork: opts.verificationNetwork ?? NO_NETWORK,
    sandbox: opts.sandbox ?? createSandbox('auto'),
    worktrees: { ...DEFAULT_WORKTREE_SETTINGS, ...opts.worktrees },
    approval: { ...DEFAULT_APPROVAL_POLICY, ...opts.approval },
    billing,
    handoffRules: opts.handoffRules ?? DEFAULT_CONFIG.handoff.rules,
    notify: opts.notify ?? NO_NOTIFY,
    operations: new Operations(store, opts.operations),
  };
}

/**
 * A runner's billing from config; a runner it does not name bills as config's defaults say (spec 04).
 * A runner config does not know at all is one an embedder handed the engine (`runners`): its billing
 * is theirs to give (`billing`), and it is taken as `free` until they do.
 */
function billingOf(configured: Readonly<Record<string, Billing>> | undefined): (runner: string) => Billing {
  const defaults: Record<string, { billing: Billing }> = DEFAULT_CONFIG.runners;
  return (runner) => configured?.[runner] ?? defaults[runner]?.billing ?? 'free';
}

/**
 * Where each job is carried out (issue 34): a worktree per task for `isolation: "worktree"`, a
 * checkout of its remote for a job on a `repo`, else the shared workspace under its lock — each an
 * orchestrator of the same pipeline (placement/job-placement.ts).
 */
export function placementOf(spec: JobSpec, services: EngineServices): JobPlacement {
  if (spec.isolation === 'worktree') return worktreeJob;
  const shared = sharedJob(services.placement);
  return spec.repo ? remoteCheckoutJob(shared) : shared;
}

/**
 * The job queue admission hands jobs to: the in-process one; `onSettled` runs once each job is final, `onEnd` after it has left the queue.
 * A merge later (`merge_of`) has no tasks to approve or place: it is the merge of another job's branches (merge-later.ts).
 */
export function composeQueue(
  opts: EngineOptions,
  services: EngineServices,
  hooks: { onEnd: () => void; onSettled: (ctx: JobContext) => Promise<void> },
): JobQueue {
  const run = (ctx: JobContext) =>
    ctx.spec.merge_of ? runMergeJob(ctx) : runJob(ctx, placementOf(ctx.spec, services));
  return new LiveJobs(services, { ...hooks, run, cancelPollMs: opts.cancelPollMs ?? 250 });
}
