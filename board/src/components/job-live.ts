import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, type JobEvent } from '../api.js';
import { useJobEvents } from '../live.js';
import type { WorkerRun } from './job-concurrency.js';
import { isLive, type FullJob } from './job-types.js';

/** At most this often the answer is fetched again while events pour in (≤ 4 a second). */
const REFETCH_MS = 250;

export interface LiveJob {
  job: FullJob | null;
  /** Why the job could not be read (not found, signed out, the server down). */
  error: string | null;
  /** The job's `phase` events, in order: the timeline. */
  phases: JobEvent[];
  /** Per worker, how many `output` events it has had: a shown log tail reads again when it moves. */
  outputs: Record<string, number>;
  /** Per worker, when it started and ended in the order of the job's events: how its tasks really ran. */
  runs: ReadonlyMap<string, WorkerRun>;
  /** Reads the answer again now (after an action of this page). */
  reload: () => void;
}

/**
 * One job's full answer, kept current without a reload: its event stream (SSE) says when something
 * happened, and the answer is read again, at most every REFETCH_MS; the stream replays the job's
 * past events first, which also gives the phase timeline of a job that has ended.
 */
export function useLiveJob(id: string): LiveJob {
  const [job, setJob] = useState<FullJob | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [phases, setPhases] = useState<JobEvent[]>([]);
  const [outputs, setOutputs] = useState<Record<string, number>>({});
  const [runs, setRuns] = useState<ReadonlyMap<string, WorkerRun>>(new Map());
  const state = useRef({ seen: 0, asked: 0, lastAt: 0, timer: 0 as ReturnType<typeof setTimeout> | 0, final: false });

  const fetchNow = useCallback(() => {
    const s = state.current;
    if (s.timer !== 0) clearTimeout(s.timer);
    s.timer = 0;
    s.lastAt = performance.now();
    const ask = ++s.asked;
    api.job(id).then(
      (answer) => {
        // an answer that comes back after a newer one was asked for is stale
        if (ask !== s.asked) return;
        const full = answer;
        s.final = !isLive(full.status);
        setJob(full);
        setError(null);
      },
      (e: unknown) => {
        if (ask === s.asked) setError(e instanceof Error ? e.message : String(e));
      },
    );
  }, [id]);

  const refetchSoon = useCallback(() => {
    const s = state.current;
    if (s.timer !== 0) return;
    s.timer = setTimeout(fetchNow, Math.max(0, s.lastAt + REFETCH_MS - performance.now()));
  }, [fetchNow]);

  useEffect(() => {
    state.current = { seen: 0, asked: 0, lastAt: 0, timer: 0, final: false };
    setJob(null);
    setError(null);
    setPhases([]);
    setOutputs({});
    setRuns(new Map());
    fetchNow();
    return () => {
      const { timer } = state.current;
      if (timer !== 0) clearTimeout(timer);
      state.current.asked++;
    };
  }, [id, fetchNow]);

  useJobEvents(
    id,
    (e) => {
      const s = state.current;
      // a stream resumed after a drop may repeat what it sent
      if (e.seq <= s.seen) return;
      s.seen = e.seq;
      if (e.event === 'phase') setPhases((p) => [...p, e]);
      else if (e.event === 'output') setOutputs((o) => ({ ...o, [e.name]: (o[e.name] ?? 0) + 1 }));
      else if (e.name !== 'job' && (e.event === 'started' || e.event === 'done' || e.event === 'error'))
        setRuns((r) => withRun(r, e));
      // a job that has ended never changes: its replayed history needs no reading again
      if (!s.final) refetchSoon();
    },
    () => {
      if (!state.current.final) fetchNow();
    },
  );

  return { job, error, phases, outputs, runs, reload: fetchNow };
}

/** The runs with a worker's `started` or end event: its first start and its last end count. */
function withRun(runs: ReadonlyMap<string, WorkerRun>, e: JobEvent): ReadonlyMap<string, WorkerRun> {
  const known = runs.get(e.name);
  const next = new Map(runs);
  if (e.event === 'started') next.set(e.name, { started: known?.started ?? e.seq, ended: null });
  else if (known) next.set(e.name, { ...known, ended: e.seq });
  return next;
}
