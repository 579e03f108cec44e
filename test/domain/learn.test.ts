import { describe, expect, it } from 'vitest';
import { LEARN_MIN_SAMPLES, learnedStart, wilsonInterval } from '../../src/domain/learn.js';
import type { RosterEntry } from '../../src/domain/roster.js';

const rung = (id: string, cost: RosterEntry['cost']): RosterEntry => ({
  id,
  runner: 'shell',
  model: null,
  provider: 'local',
  billing: 'free',
  cost,
  tasks: ['fix'],
  approve: false,
  endpoint: null,
  fallback: null,
});
const ladder = [rung('cheap', 'free'), rung('middle', 'mid'), rung('top', 'high')];
const stats = (rows: Record<string, [accepted: number, total: number]>) =>
  new Map(Object.entries(rows).map(([id, [accepted, total]]) => [id, { accepted, total }]));

describe('the Wilson interval', () => {
  it('matches the textbook figures, and knows nothing without outcomes', () => {
    expect(wilsonInterval(0, 0)).toEqual({ lower: 0, upper: 1 });
    const all = wilsonInterval(30, 30);
    expect(all.upper).toBe(1);
    expect(all.lower).toBeCloseTo(30 / (30 + 1.96 ** 2), 10); // n / (n + z²) at p = 1
    const half = wilsonInterval(15, 30);
    expect(half.lower).toBeCloseTo(0.3315, 4);
    expect(half.upper).toBeCloseTo(0.6685, 4);
    expect(wilsonInterval(0, 30).lower).toBe(0); // clamped: the formula gives -1e-17
  });
});

describe('the learned start (spec 05)', () => {
  it('never skips a rung with fewer than 30 outcomes, even at 0/29', () => {
    const got = learnedStart(ladder, stats({ cheap: [0, LEARN_MIN_SAMPLES - 1] }), 0.8);
    expect(got?.entry.id).toBe('cheap');
    expect(got?.skipped).toEqual([]);
    expect(got?.why).toBe('learned: cheap has 29 outcomes (< 30), too few to skip');
    expect(learnedStart(ladder, new Map(), 0.8)?.figures).toBeNull();
  });

  it('skips a rung that demonstrably fails, with its figures, and starts where the rate clears', () => {
    const got = learnedStart(ladder, stats({ cheap: [9, 31], middle: [30, 30] }), 0.8);
    expect(got?.entry.id).toBe('middle');
    expect(got?.skipped).toHaveLength(1);
    expect(got?.skipped[0]).toMatchObject({ entry: 'cheap', accepted: 9, total: 31 });
    expect(got?.skipped[0]?.upper).toBeCloseTo(0.466, 3);
    expect(got?.figures).toMatchObject({ entry: 'middle', accepted: 30, total: 30 });
    expect(got?.why).toBe(
      'learned: skipped cheap (9/31 accepted, upper bound 0.47 < 0.8); middle clears 0.8 (30/30, lower bound 0.89)',
    );
  });

  it('starts on the cheapest rung that clears, skipping nothing', () => {
    const got = learnedStart(ladder, stats({ cheap: [30, 30], middle: [0, 40] }), 0.8);
    expect(got?.entry.id).toBe('cheap');
    expect(got?.skipped).toEqual([]);
  });

  it('starts on an undecided rung rather than skip it', () => {
    // 24/30: the interval 0.63–0.90 straddles 0.8
    const got = learnedStart(ladder, stats({ cheap: [24, 30] }), 0.8);
    expect(got?.entry.id).toBe('cheap');
    expect(got?.why).toBe('learned: cheap is undecided at 0.8 (24/30, bounds 0.63–0.90)');
  });

  it('an unknown rung above a skipped one is where it starts', () => {
    const got = learnedStart(ladder, stats({ cheap: [0, 30], middle: [3, 12] }), 0.8);
    expect(got?.entry.id).toBe('middle');
    expect(got?.skipped.map((f) => f.entry)).toEqual(['cheap']);
  });

  it('starts at the top when every rung fails, never past the ladder', () => {
    const got = learnedStart(ladder, stats({ cheap: [0, 30], middle: [5, 30], top: [10, 30] }), 0.8);
    expect(got?.entry.id).toBe('top');
    expect(got?.skipped.map((f) => f.entry)).toEqual(['cheap', 'middle']);
    expect(got?.figures).toMatchObject({ entry: 'top', accepted: 10, total: 30 });
    expect(got?.why).toMatch(
      /; top, the top rung, fails 0\.8 too \(10\/30, upper bound 0\.5\d\) but the ladder ends there$/,
    );
  });

  it('prints a bound that two decimals would round onto the threshold with more, so the comparison reads true', () => {
    // 21/32: upper bound 0.7959 (as "0.80 < 0.8" it would read false); 30/32: lower bound 0.7985
    const got = learnedStart(ladder, stats({ cheap: [21, 32], middle: [30, 32] }), 0.8);
    expect(got?.why).toBe(
      'learned: skipped cheap (21/32 accepted, upper bound 0.7959 < 0.8); middle is undecided at 0.8 (30/32, bounds 0.7985–0.98)',
    );
    expect(learnedStart([], new Map(), 0.8)).toBeNull();
  });
});
