import { describe, expect, it } from 'vitest';
import { endsJob, statusOfEvent } from '../../src/domain/events.js';

describe('job events', () => {
  it('reads the status a status event announces, and only a known one', () => {
    expect(statusOfEvent({ event: 'status', status: 'running' })).toBe('running');
    expect(statusOfEvent({ event: 'status', status: 'nonsense' })).toBeNull();
    expect(statusOfEvent({ event: 'status', status: 3 })).toBeNull();
    expect(statusOfEvent({ event: 'phase', status: 'done' })).toBeNull();
  });

  it('says which event ends a job', () => {
    expect(endsJob({ event: 'status', status: 'partial' })).toBe(true);
    expect(endsJob({ event: 'status', status: 'cancelling' })).toBe(false);
    expect(endsJob({ event: 'done', status: 'done' })).toBe(false);
  });
});
