import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useJobChanges, useJobProgress, useStreamOpen, type JobChange } from '../live.js';
import type { JobRowData } from './jobs-row.js';

/** How many jobs the page reads: the store keeps 200 (retention.jobs default). */
const LIST_LIMIT = 200;

const epochNow = () => Date.now() / 1000;

/** The Jobs page's rows by id (null until the list is read) and why the list could not be read. */
export interface JobRows {
  rows: Map<string, JobRowData> | null;
  error: string | null;
}

/**
 * Every job visible to the caller, kept current without a reload or a poll: the list is read once
 * (and again when the stream reconnects, as events may have been missed); then the all-jobs stream
 * says what changed — `created` adds a row, `status` changes its status and verdict, `progress` its
 * workers and phase, each at once — and after `created` and `status` the job's answer is read for
 * the rest (runners, times, duration). A read that raced a newer event keeps the event's fields.
 */
export function useJobRows(): JobRows {
  const [rows, setRows] = useState<Map<string, JobRowData> | null>(null);
  const [error, setError] = useState<string | null>(null);
  // the rows as last set: every change starts from the newest, whatever has rendered
  const latest = useRef<Map<string, JobRowData> | null>(null);
  // per job: how many stream events changed its row, so a read that raced one does not undo it
  const changes = useRef(new Map<string, number>());
  const reading = useRef(new Map<string, 'reading' | 'again'>());
  // rows the stream announced before the list was read: merged into it
  const early = useRef(new Map<string, JobRowData>());

  /** Sets one job's row (before the list is read: keeps it for then). */
  const setRow = (id: string, row: JobRowData) => {
    if (latest.current === null) {
      early.current.set(id, row);
      return;
    }
    latest.current = new Map(latest.current).set(id, row);
    setRows(latest.current);
  };
  const rowOf = (id: string) => (latest.current ?? early.current).get(id);

  const readJob = (id: string) => {
    if (reading.current.has(id)) {
      reading.current.set(id, 'again');
      return;
    }
    reading.current.set(id, 'reading');
    const before = changes.current.get(id) ?? 0;
    api
      .compact(id)
      .then(
        ({ result: _result, ...brief }) => {
          const current = rowOf(id);
          const raced = current !== undefined && (changes.current.get(id) ?? 0) !== before;
          setRow(
            id,
            raced
              ? {
                  ...brief,
                  status: current.status,
                  verdict: current.verdict,
                  progress: current.progress,
                  phase: current.phase,
                }
              : brief,
          );
        },
        () => undefined, // the row keeps what the stream said; its next event reads again
      )
      .finally(() => {
        const again = reading.current.get(id) === 'again';
        reading.current.delete(id);
        if (again) readJob(id);
      });
  };

  const readList = () => {
    api.jobs({ limit: LIST_LIMIT }).then(
      ({ jobs }) => {
        const listed = new Map<string, JobRowData>(jobs.map((j) => [j.id, j]));
        for (const [id, row] of early.current) if (!listed.has(id)) listed.set(id, row);
        const changed = [...early.current.keys()];
        early.current.clear();
        latest.current = listed;
        setRows(listed);
        setError(null);
        // what changed while the list was read is read again
        for (const id of changed) readJob(id);
      },
      (e: unknown) => setError(e instanceof Error ? e.message : String(e)),
    );
  };
  useEffect(readList, []);

  /** Applies `patch` to the job's row; a job not listed yet gets a row from `fallback`. */
  const patchRow = (id: string, patch: Partial<JobRowData>, fallback: JobRowData | null) => {
    const current = rowOf(id) ?? fallback;
    if (current) setRow(id, { ...current, ...patch });
  };

  useJobChanges((c: JobChange) => {
    changes.current.set(c.id, (changes.current.get(c.id) ?? 0) + 1);
    const patch = { status: c.status as JobRowData['status'], verdict: c.verdict };
    patchRow(c.id, patch, { id: c.id, title: c.title, workspace: c.workspace, ...patch, created: epochNow() });
    readJob(c.id);
  });

  useJobProgress((p) => {
    changes.current.set(p.id, (changes.current.get(p.id) ?? 0) + 1);
    patchRow(p.id, { progress: p.progress, phase: p.phase }, null);
  });
  // the stream (re)opened: what it missed while it was not yet or no longer open is read again
  useStreamOpen(readList);

  return { rows, error };
}
