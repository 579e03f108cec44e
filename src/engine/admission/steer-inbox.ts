import { steerEventText, type SteerDelivery, type SteerMessage } from '../../domain/steer.js';
import type { NewJobEvent } from '../../domain/events.js';

/**
 * A live job's messages to its tasks (issue 16 "steering"), by task, until an attempt of the task
 * takes them at its next turn or the job ends and they go on as the task's follow-up. Each receipt
 * and each delivery is a job event, so the board's stream shows it and when.
 */
export class SteerInbox {
  readonly #emit: (events: readonly NewJobEvent[]) => void;
  readonly #waiting = new Map<string, SteerMessage[]>();
  #drained = false;

  constructor(emit: (events: readonly NewJobEvent[]) => void) {
    this.#emit = emit;
  }

  /** The messages waiting for `task`, oldest first. */
  waitingFor(task: string): readonly SteerMessage[] {
    return this.#waiting.get(task) ?? [];
  }

  /** Keeps a message for `task` and says so (`steer_received`); answers how many now wait for it. */
  put(task: string, message: SteerMessage, how: { delivery: SteerDelivery; worker: string | null }): number {
    if (this.#drained) throw new Error(`steer ${message.id} came after the job's inbox was emptied`);
    const list = [...this.waitingFor(task), message];
    this.#waiting.set(task, list);
    const to =
      how.delivery === 'next_turn'
        ? `read at the next turn of ${how.worker ?? `${task}'s worker once it starts`}`
        : `queued as ${task}'s follow-up`;
    this.#emit([
      {
        name: 'job',
        event: 'steer_received',
        message: `steer ${message.id} for ${task}: ${to}`,
        steer_id: message.id,
        task,
        delivery: how.delivery,
        worker: how.worker,
        text: steerEventText(message.text),
      },
    ]);
    return list.length;
  }

  /** What one attempt of `task` takes its messages from: taking one is its delivery (`steer_delivered`, named by the worker). */
  for(task: string, worker: string): { take(): SteerMessage[] } {
    return {
      take: () => {
        const taken = this.#waiting.get(task) ?? [];
        if (taken.length === 0) return [];
        this.#waiting.delete(task);
        this.#emit(
          taken.map((m) => ({
            name: worker,
            event: 'steer_delivered',
            message: `steer ${m.id} read by ${worker} before its next model call`,
            steer_id: m.id,
            task,
            delivery: 'next_turn',
          })),
        );
        return taken;
      },
    };
  }

  /** Empties the inbox once the job has ended: what no attempt took, by task; nothing more may be put. */
  drain(): Map<string, SteerMessage[]> {
    this.#drained = true;
    const left = new Map(this.#waiting);
    this.#waiting.clear();
    return left;
  }
}
