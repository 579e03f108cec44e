import { useEffect, useRef } from 'preact/hooks';
import type { BriefJob, JobEvent, JobStatus } from './api.js';

/** A job-level change from `GET /api/events?stream=1`. */
export interface JobChange {
  kind: 'created' | 'status';
  id: string;
  title: string;
  workspace: string;
  status: string;
  verdict: string | null;
}

/** `progress` of the all-jobs stream: a live job's workers changed state (queued, started, a detected state, ended) or the job entered a phase. */
export interface ProgressChange {
  id: string;
  status: JobStatus;
  phase: BriefJob['phase'];
  progress: NonNullable<BriefJob['progress']>;
}

interface Listeners {
  change: Set<(change: JobChange) => void>;
  progress: Set<(change: ProgressChange) => void>;
  /** The stream (re)opened: anything read before it may have missed events. */
  open: Set<() => void>;
}
const listeners: Listeners = { change: new Set(), progress: new Set(), open: new Set() };
let source: EventSource | null = null;

const count = () => listeners.change.size + listeners.progress.size + listeners.open.size;

/**
 * One EventSource on the all-jobs stream for the whole page, shared by every listener (a browser
 * allows few connections per host over HTTP/1.1; a stream per component would starve the fetches).
 */
function listen<K extends keyof Listeners>(
  kind: K,
  listener: Listeners[K] extends Set<infer L> ? L : never,
): () => void {
  const set = listeners[kind] as Set<typeof listener>;
  set.add(listener);
  if (source === null) {
    source = new EventSource('/api/events?stream=1');
    for (const kind of ['created', 'status'] as const) {
      source.addEventListener(kind, (e) => {
        const change = { kind, ...(JSON.parse((e as MessageEvent<string>).data) as Omit<JobChange, 'kind'>) };
        for (const l of listeners.change) l(change);
      });
    }
    source.addEventListener('progress', (e) => {
      const change = JSON.parse((e as MessageEvent<string>).data) as ProgressChange;
      for (const l of listeners.progress) l(change);
    });
    source.addEventListener('open', () => {
      for (const l of listeners.open) l();
    });
  }
  return () => {
    set.delete(listener);
    if (count() === 0) {
      source?.close();
      source = null;
    }
  };
}

/** Calls `listener` on every job-level change (created, status) while the component is mounted. */
export function useJobChanges(listener: (change: JobChange) => void): void {
  const ref = useRef(listener);
  ref.current = listener;
  useEffect(() => listen('change', (c) => ref.current(c)), []);
}

/** Calls `listener` on every `progress` of a live job while the component is mounted. */
export function useJobProgress(listener: (change: ProgressChange) => void): void {
  const ref = useRef(listener);
  ref.current = listener;
  useEffect(() => listen('progress', (c) => ref.current(c)), []);
}

/**
 * Calls `listener` each time the all-jobs stream opens, the first time included: what a component
 * read before (or while the stream was down) may have missed changes, so it reads again.
 */
export function useStreamOpen(listener: () => void): void {
  const ref = useRef(listener);
  ref.current = listener;
  useEffect(() => listen('open', () => ref.current()), []);
}

/**
 * Follows one job's events (`GET /api/jobs/:id/events?stream=1`) while mounted: every event in
 * order, resumed by the browser after a drop (Last-Event-ID), and `onEnd` when the job ends.
 */
export function useJobEvents(id: string, onEvent: (e: JobEvent) => void, onEnd: () => void): void {
  const ref = useRef({ onEvent, onEnd });
  ref.current = { onEvent, onEnd };
  useEffect(() => {
    const es = new EventSource(`/api/jobs/${encodeURIComponent(id)}/events?stream=1`);
    es.addEventListener('job', (e) => ref.current.onEvent(JSON.parse((e as MessageEvent<string>).data) as JobEvent));
    es.addEventListener('end', () => {
      es.close();
      ref.current.onEnd();
    });
    return () => es.close();
  }, [id]);
}
