import type { RemoteRepo } from '../../domain/remote-repo.js';
import type { RepoFacts } from '../../evidence/worktree-git.js';
import type { WireProgress } from './wire.js';

/** How a BullMQ job of an attempt ended: its node's return value, BullMQ's failure, or gone from the queue (removed). */
export type WorkOutcome = { kind: 'completed'; value: unknown } | { kind: 'failed'; reason: string } | { kind: 'gone' };

/** Who follows a piece of remote work: the attempt that runs it now. */
export interface WorkListener {
  progress(p: WireProgress): void;
  /** A node claimed it (again). */
  taken(node: string): void;
  /** Its node stopped answering and the coordinator offers it again (`stalls` times so far). */
  stalled(stalls: number): void;
  settled(outcome: WorkOutcome): void;
}

/**
 * One attempt's work on the cluster, as the coordinator sees it: the base it was exported from,
 * the node it is offered to now (and that offer's BullMQ job), and how it ended. Its node's word
 * (output, report) comes over the node routes with the current claim's ticket only. It
 * outlives the attempt that put it there when its node was lost: the task's next attempt attaches
 * to it (spec 09), and an end that came meanwhile is kept for it.
 */
export class RemoteWork {
  readonly key: string;
  readonly runner: string;
  readonly repo: RepoFacts;
  readonly base: string;
  readonly branch: string;
  /** The job's remote repository, when it has one (spec 09). */
  readonly remote: RemoteRepo | undefined;
  /** True once the coordinator holds it for an offer. */
  queued = false;
  /** How often its node was lost (unheard past its stall window; before a claim, its BullMQ lock expired). */
  stalls = 0;
  /** The node that claimed the current offer. */
  node: string | null = null;
  /** When it was put on the cluster, ms since the epoch. */
  readonly placedAt = Date.now();
  /** When its entries stop being runnable, ms since the epoch. */
  expires = Infinity;
  /** The node the current offer is for; null while it waits for one. */
  offeredTo: string | null = null;
  /** The BullMQ job id of the current offer. */
  jobId: string | null = null;
  /** When the current offer was made, ms since the epoch. */
  offeredAt = 0;
  /** Offers made so far. */
  offers = 0;
  /** Offers that failed (not counting a lost node's). */
  tries = 0;
  /** Nodes it failed or was lost on: offered to again only when no other can take it. */
  readonly avoid = new Set<string>();
  #listener: WorkListener | null = null;
  #outcome: WorkOutcome | null = null;

  constructor(opts: {
    key: string;
    runner: string;
    repo: RepoFacts;
    base: string;
    branch: string;
    remote?: RemoteRepo;
  }) {
    this.key = opts.key;
    this.runner = opts.runner;
    this.repo = opts.repo;
    this.base = opts.base;
    this.branch = opts.branch;
    this.remote = opts.remote;
  }

  get isSettled(): boolean {
    return this.#outcome !== null;
  }

  /**
   * Follows it from now on; what came before is told at once: the node that has it, and an end.
   * A node's `taken` can come before the attempt that put the work on the queue attaches: the
   * node's word and the add's reply reach the coordinator on different connections, and a busy
   * one may read them in either order.
   */
  attach(listener: WorkListener): void {
    this.#listener = listener;
    if (this.node !== null) listener.taken(this.node);
    if (this.#outcome) listener.settled(this.#outcome);
  }

  detach(): void {
    this.#listener = null;
  }

  /** The node the current offer was for claimed it. */
  onTaken(node: string): void {
    this.node = node;
    this.#listener?.taken(node);
  }

  /** The claiming node's output or state (the exchange checked its ticket). */
  onProgress(p: WireProgress): void {
    this.#listener?.progress(p);
  }

  /** Its node was lost `count` times so far. */
  noteStalls(count: number): void {
    if (count <= this.stalls) return;
    this.stalls = count;
    // the node that had it is no longer named: the next claim says who has it
    this.node = null;
    this.#listener?.stalled(count);
  }

  settle(outcome: WorkOutcome): void {
    if (this.#outcome) return;
    this.#outcome = outcome;
    this.#listener?.settled(outcome);
  }
}
