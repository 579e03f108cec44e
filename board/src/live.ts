import { useEffect, useRef } from 'preact/hooks';
import type { JobEvent } from './api.js';

/** A job-level change from `GET /api/events?stream=1`. */
export interface JobChange {
  kind: 'created' | 'status';
  id: string;
  title: string;
  workspace: string;
  status: string;
  verdict: string | null;
}

type Listener = (change: JobChange) => void;
const listeners = new Set<Listener>();
let source: EventSource | null = null;

/**
 * One EventSource on the all-jobs stream for the whole page, shared by every listener (a browser
 * allows few connections per host over HTTP/1.1; a stream per component would starve the fetches).
 */
export function onJobChange(listener: Listener): () => void {
  listeners.add(listener);
  if (source === null) {
    source = new EventSource('/api/events?stream=1');
    for (const kind of ['created', 'status'] as const) {
      source.addEventListener(kind, (e) => {
        const change = { kind, ...(JSON.parse((e as MessageEvent<string>).data) as Omit<JobChange, 'kind'>) };
        for (const l of listeners) l(change);
      });
    }
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) {
      source?.close();
      source = null;
    }
  };
}

/** Calls `listener` on every job-level change while the component is mounted. */
export function useJobChanges(listener: Listener): void {
  const ref = useRef(listener);
  ref.current = listener;
  useEffect(() => onJobChange((c) => ref.current(c)), []);
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
