import { GafferError } from '../../domain/errors.js';
import { DETECTED_STATES, WORKER_STATUSES } from '../../domain/status.js';
import type { JobEvent } from '../../domain/events.js';

/** A parsed `wait_for` condition (spec 02). */
export type WaitCondition =
  | { kind: 'done' }
  | { kind: 'changed' }
  | { kind: 'phase'; text: string }
  | { kind: 'event'; text: string }
  | { kind: 'worker'; worker: string; state: string };

const FORMS = 'done, changed, phase:<text>, event:<text>, worker:<name|*>:<state>';
const STATES = new Set<string>([...DETECTED_STATES, ...WORKER_STATUSES]);

/** Parses a condition; anything else is refused with every form listed. */
export function parseWaitCondition(raw: string | undefined | null): WaitCondition {
  const text = (raw ?? 'done').trim();
  if (text === '' || text === 'done') return { kind: 'done' };
  const refuse = (why: string): never => {
    throw new GafferError(
      'invalid_request',
      `condition: ${why}, got ${JSON.stringify(text)} — use one of: ${FORMS}`,
      'condition',
    );
  };
  if (text === 'changed') return { kind: 'changed' };
  const [head, ...rest] = text.split(':');
  const tail = rest.join(':');
  if ((head === 'phase' || head === 'event') && tail.length > 0) return { kind: head, text: tail };
  if (head === 'worker') {
    const cut = tail.lastIndexOf(':');
    const worker = tail.slice(0, cut);
    const state = tail.slice(cut + 1);
    if (cut <= 0 || !state) refuse('a worker condition is worker:<name|*>:<state>');
    if (!STATES.has(state)) refuse(`unknown state "${state}" (states: ${[...STATES].join(', ')})`);
    return { kind: 'worker', worker, state };
  }
  return refuse('unknown condition');
}

/** The condition as text, as answers echo it. */
export function describeCondition(c: WaitCondition): string {
  switch (c.kind) {
    case 'done':
    case 'changed':
      return c.kind;
    case 'phase':
    case 'event':
      return `${c.kind}:${c.text}`;
    case 'worker':
      return `worker:${c.worker}:${c.state}`;
  }
}

/** True when this event makes a non-`done` condition hold. */
export function eventMeets(c: WaitCondition, e: JobEvent): boolean {
  switch (c.kind) {
    case 'done':
    case 'changed':
      return false;
    case 'phase':
      return e.name === 'job' && e.event === 'phase' && e.message.includes(c.text);
    case 'event':
      return Object.values(e).some((v) =>
        typeof v === 'string' ? v.includes(c.text) : typeof v === 'number' && String(v).includes(c.text),
      );
    case 'worker':
      return (
        e.name !== 'job' && (c.worker === '*' || e.name === c.worker) && (e.state === c.state || e.status === c.state)
      );
  }
}
