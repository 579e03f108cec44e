import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { isFinalStatus } from '../../domain/status.js';
import type { Engine } from '../../engine/engine.js';
import type { JobEvent } from '../../domain/events.js';

export const HEARTBEAT_MS = 15_000;
/** A stream never outlives the job's ceiling by more than this (spec 02). */
export const CEILING_GRACE_S = 120;
/** A job run by another process is followed through the store at most this often. */
export const STORE_POLL_MS = 200;

/** Live counts for /api/health, so a leak can be seen. */
export class StreamCounters {
  sseClients = 0;
  timers = 0;

  /** A timer that is counted while it is pending. */
  timeout(fn: () => void, ms: number): () => void {
    this.timers++;
    let pending = true;
    const handle = setTimeout(() => {
      pending = false;
      this.timers--;
      fn();
    }, ms);
    return () => {
      if (!pending) return;
      pending = false;
      this.timers--;
      clearTimeout(handle);
    };
  }
}

/** Resolves on the first of: a wake-up call, a timeout, the stream closing. */
class Waker {
  #resolve: (() => void) | null = null;
  #woken = false;

  wake(): void {
    this.#woken = true;
    this.#resolve?.();
  }

  wait(ms: number, counters: StreamCounters): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const cancel = counters.timeout(finish, ms);
      const self = this;
      function finish() {
        cancel();
        self.#resolve = null;
        self.#woken = false;
        resolve();
      }
      this.#resolve = finish;
    });
  }
}

/**
 * `GET /api/jobs/:id/events?stream=1`: every event as `id: <seq>` + `event: job`, resume after
 * `Last-Event-ID` (a `gap` first when older events were dropped), heartbeats, and a final `end`.
 */
export function streamJob(
  c: Context,
  engine: Engine,
  id: string,
  owner: string | null,
  lastEventId: number,
  counters: StreamCounters,
): Response {
  return streamSSE(c, async (stream) => {
    counters.sseClients++;
    const waker = new Waker();
    let closed = false;
    const local = engine.runsJob(id);
    const unsubscribe = local ? engine.subscribe(id, () => waker.wake()) : () => undefined;
    stream.onAbort(() => {
      closed = true;
      waker.wake();
    });
    try {
      let after = lastEventId;
      const first = engine.events(id, { owner, after: 0 }).events[0];
      const oldest = first?.seq ?? after + 1;
      if (after + 1 < oldest) {
        await stream.writeSSE({ event: 'gap', data: JSON.stringify({ missed: oldest - after - 1 }) });
        after = oldest - 1;
      }
      // a listing is capped (the store's 5,000): read on until nothing is left
      const drain = async () => {
        for (;;) {
          const { events } = engine.events(id, { owner, after });
          if (events.length === 0 || closed) return;
          for (const e of events) await writeEvent(stream, e);
          after = events.at(-1)?.seq ?? after;
        }
      };
      let lastBeat = performance.now();
      let deadline: number | null = null;
      while (!closed) {
        await drain();
        const job = engine.get(id, { owner });
        if (isFinalStatus(job.status)) {
          // another process writes the final row before its last events: read them too
          await drain();
          await stream.writeSSE({
            event: 'end',
            data: JSON.stringify({ id: job.id, status: job.status, verdict: job.verdict, error: job.error }),
          });
          return;
        }
        if (job.status !== 'queued' && job.ceiling_s !== undefined) {
          deadline ??= performance.now() + (job.ceiling_s + CEILING_GRACE_S) * 1000;
          if (performance.now() >= deadline) return;
        }
        if (performance.now() - lastBeat >= HEARTBEAT_MS) {
          await stream.write(': heartbeat\n\n');
          lastBeat = performance.now();
        }
        const untilBeat = HEARTBEAT_MS - (performance.now() - lastBeat);
        await waker.wait(local ? untilBeat : Math.min(STORE_POLL_MS, untilBeat), counters);
      }
    } finally {
      unsubscribe();
      counters.sseClients--;
    }
  });
}

/** The worker events that can change a job's count of workers by state: not `output`, which only says it still runs. */
const WORKER_STATE_EVENTS: ReadonlySet<string> = new Set(['queued', 'started', 'state', 'done', 'error']);

/** A `progress` is due on a worker's change of state, and on the job's change of phase (what the board says it does now). */
const movesProgress = (e: JobEvent): boolean =>
  e.name === 'job' ? e.event === 'phase' : WORKER_STATE_EVENTS.has(e.event);

/**
 * `GET /api/events?stream=1`: job-level changes of every visible job run here — `created` and
 * `status` with {id, title, workspace, status, verdict}, and `progress` with {id, status, phase,
 * progress} (the compact answer's fields) when a live job's worker is queued, starts, reports a
 * detected state or ends, or the job enters a phase. A job's progress waiting to be written is
 * written once, read when it is.
 */
export function streamAllJobs(c: Context, engine: Engine, owner: string | null, counters: StreamCounters): Response {
  return streamSSE(c, async (stream) => {
    counters.sseClients++;
    const queue: { jobId: string; kind: 'created' | 'status' | 'progress' }[] = [];
    const progressQueued = new Set<string>();
    const waker = new Waker();
    let closed = false;
    const unsubscribe = engine.subscribeAll((jobId, event) => {
      if (event.name === 'job' && (event.event === 'status' || event.event === 'created'))
        queue.push({ jobId, kind: event.event });
      else if (movesProgress(event) && !progressQueued.has(jobId)) {
        progressQueued.add(jobId);
        queue.push({ jobId, kind: 'progress' });
      } else return;
      waker.wake();
    });
    stream.onAbort(() => {
      closed = true;
      waker.wake();
    });
    try {
      while (!closed) {
        while (queue.length > 0) {
          const item = queue.shift() as (typeof queue)[number];
          if (item.kind === 'progress') progressQueued.delete(item.jobId);
          let job;
          try {
            job = engine.get(item.jobId, { owner });
          } catch {
            continue; // another owner's job
          }
          if (item.kind === 'progress') {
            // an ended job has no progress: its `status` says the rest
            if (job.progress === undefined) continue;
            await stream.writeSSE({
              event: 'progress',
              data: JSON.stringify({
                id: job.id,
                status: job.status,
                phase: job.phase ?? null,
                progress: job.progress,
              }),
            });
            continue;
          }
          await stream.writeSSE({
            event: item.kind,
            data: JSON.stringify({
              id: job.id,
              title: job.title,
              workspace: job.workspace,
              status: job.status,
              verdict: job.verdict,
            }),
          });
        }
        await waker.wait(HEARTBEAT_MS, counters);
        if (!closed && queue.length === 0) await stream.write(': heartbeat\n\n');
      }
    } finally {
      unsubscribe();
      counters.sseClients--;
    }
  });
}

async function writeEvent(stream: SSEStreamingApi, e: JobEvent): Promise<void> {
  await stream.writeSSE({ id: String(e.seq), event: 'job', data: JSON.stringify(e) });
}
