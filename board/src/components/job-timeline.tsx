import type { JobEvent } from '../api.js';
import { duration } from '../format.js';

/**
 * The job's phases in order (its `phase` events): when each began, after the job was created, and
 * how long it lasted; the last one is where a live job is now.
 */
export function JobTimeline({ phases, created, live }: { phases: JobEvent[]; created: number; live: boolean }) {
  return (
    <section aria-labelledby="job-timeline-h">
      <h2 id="job-timeline-h">Phases</h2>
      {phases.length === 0 ? (
        <p class="muted">No phase yet.</p>
      ) : (
        <ol class="job-timeline">
          {phases.map((p, i) => {
            const next = phases[i + 1];
            const current = live && next === undefined;
            return (
              <li key={p.seq} class={current ? 'job-phase-now' : undefined} aria-current={current ? 'step' : undefined}>
                <span class="job-phase-at mono">+{took(p.ts - created)}</span>
                <span class="job-phase-what">{p.message}</span>
                {next && <span class="muted job-phase-took"> {took(next.ts - p.ts)}</span>}
                {current && <span class="muted job-phase-took"> now</span>}
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}

/** Seconds with a tenth below ten (phases often take less than one), else as `duration` says them. */
function took(s: number): string {
  const t = Math.max(0, s);
  return t < 10 ? `${t.toFixed(1)}s` : duration(t);
}
