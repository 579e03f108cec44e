import type { RemoteRepo } from '../../domain/remote-repo.js';
import type { RunnerReport } from '../../domain/runner-report.js';
import type { Runner, RunnerInput } from '../../runners/contract.js';

/**
 * How an attempt's process runs (issue 12): here, in this process's runners (`LocalExecutor`);
 * on another machine through a BullMQ queue (`BullmqExecutor`, issue 17). The worker cap is the
 * executor's: an attempt holds a slot only while its process runs, never while it waits (a lock, a
 * rate limit).
 */
export interface Executor {
  /** How many attempts' processes may run at once (`workers.max_parallel`; in a cluster, how many may be on the queue). */
  readonly cap: number;
  /** Waits for a slot; resolves to its release (idempotent); rejects when `signal` aborts first. */
  slot(signal?: AbortSignal): Promise<() => void>;
  /**
   * Runs one attempt's process to its end. Cancel is `input.signal`. Never throws for the
   * runner's own failure: a runner that throws is a `panic` report (spec 01). A remote executor's
   * report ends `node_lost` (`NODE_LOST`) when the node running it stopped answering and BullMQ
   * handed the work to another node: the next attempt takes it over with `continues`.
   */
  run(runner: Runner, input: RunnerInput, opts?: RunOptions): Promise<RunnerReport>;
  /** Connects to what it runs attempts through (a queue); the local one needs nothing. */
  open?(): Promise<void>;
  /** Lets go of what the executor holds (a queue's connections); the local one holds nothing. */
  close?(): Promise<void>;
}

/** What an attempt's run is told besides the runner's input. */
export interface RunOptions {
  /** The worker name of this job's attempt whose node was lost: this attempt takes over its queued work. */
  continues?: string;
  /** Told what happens to the attempt on the wire (a node took it, a node was lost): a remote executor's words. */
  onNode?: (e: NodeEvent) => void;
  /** spec 09: the job's remote repository (a cluster's nodes fetch from it and push to it). */
  remote?: RemoteRepo;
}

/** Something a remote attempt's node did. */
export interface NodeEvent {
  /** `waiting`: no node took it yet; `taken`: a node started it; `lost`: its node stopped answering; `requeued`: BullMQ gave it back to the queue. */
  event: 'waiting' | 'taken' | 'lost' | 'requeued';
  /** The node's name (`--name`, else host and pid); null when not known. */
  node: string | null;
  /** One line for a person. */
  message: string;
}

/** The stop reason of an attempt whose node stopped answering (spec 09): one new attempt takes over its work. */
export const NODE_LOST = 'node_lost';
