import type { RemoteRepo } from '../../domain/remote-repo.js';
import type { RepoFacts } from '../../evidence/worktree-git.js';
import type { WireProgress } from './wire.js';

/** How a BullMQ job of an attempt ended: its node's return value, BullMQ's failure, or gone from the queue (removed). */
export type WorkOutcome = { kind: 'completed'; value: unknown } | { kind: 'failed'; reason: string } | { kind: 'gone' };

/** Who follows a piece of remote work: the attempt that runs it now. */
export interface WorkListener {
  progress(p: Exclude<WireProgress, { type: 'taken' }>): void;
  /** A node took it (again). */
  taken(node: string): void;
  /** Its node stopped answering and BullMQ put it back on the queue (`stalls` times so far). */
  stalled(stalls: number): void;
  settled(outcome: WorkOutcome): void;
}

/**
 * One attempt's work on the queue, as the coordinator sees it: the BullMQ job (by its key), the
 * base it was exported from, which node's turn at it is trusted (`take`), and how it ended. It
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
  /** True once BullMQ holds the job (its add returned). */
  queued = false;
  /** How often BullMQ found it stalled (its `stalledCounter`). */
  stalls = 0;
  /** The node that has it now, as it said. */
  node: string | null = null;
  /** The turn whose progress is believed: a node that lost the job (a partition) and still talks is not heard. */
  #take: string | null = null;
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

  /** A node's progress update: `taken` starts a turn; anything of another turn is dropped. */
  onProgress(p: WireProgress): void {
    if (p.type === 'taken') {
      // the same turn told twice: a command Redis ran just before it went down is sent again once it is back
      if (p.take === this.#take) return;
      this.#take = p.take;
      this.node = p.node;
      this.#listener?.taken(p.node);
      return;
    }
    if (p.take !== this.#take) return;
    this.#listener?.progress(p);
  }

  /** BullMQ's stall count as last read: a rise is a stall (an event and a poll may both report one). */
  noteStalls(count: number): void {
    if (count <= this.stalls) return;
    this.stalls = count;
    // the node that had it is no longer heard, nor named: the next `taken` says who has it
    this.#take = null;
    this.node = null;
    this.#listener?.stalled(count);
  }

  settle(outcome: WorkOutcome): void {
    if (this.#outcome) return;
    this.#outcome = outcome;
    this.#listener?.settled(outcome);
  }
}
