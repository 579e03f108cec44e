import { describe, expect, it } from 'vitest';
import { inTurns, serialized } from '../../src/evidence/worktree-git.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

/** A call that logs its start and end around a short wait, and counts how many run at once. */
function probe(log: string[], running: { now: number; most: number }, name: string) {
  return async () => {
    running.now++;
    running.most = Math.max(running.most, running.now);
    log.push(`${name}>`);
    await tick();
    log.push(`<${name}`);
    running.now--;
    return name;
  };
}

describe("a repository's lanes (spec 06: calls on one repository take turns)", () => {
  it('serialized: one call at a time, in order; a call that can wait (later) lets the ones others wait for go first', async () => {
    const repo = { commonDir: '/lanes-test/a' };
    const log: string[] = [];
    const running = { now: 0, most: 0 };
    const calls = [
      serialized(repo, probe(log, running, 'add1')),
      serialized(repo, probe(log, running, 'remove1'), '', { later: true }),
      serialized(repo, probe(log, running, 'remove2'), '', { later: true }),
      serialized(repo, probe(log, running, 'add2')),
    ];
    // made in the same turn as the removals, after them: still first
    const add3 = serialized(repo, probe(log, running, 'add3'));
    expect(await Promise.all([...calls, add3])).toEqual(['add1', 'remove1', 'remove2', 'add2', 'add3']);
    expect(running.most).toBe(1);
    expect(log.filter((e) => e.endsWith('>'))).toEqual(['add1>', 'add2>', 'add3>', 'remove1>', 'remove2>']);
    // an idle lane starts a removal a turn later; a call that throws at once is a rejection, the lane goes on
    const thrown = serialized(repo, () => {
      throw new Error('boom');
    });
    await expect(thrown).rejects.toThrow('boom');
    expect(await serialized(repo, async () => 'after', '', { later: true })).toBe('after');
  });

  it('inTurns: at most `width` at once, the others in order', async () => {
    const repo = { commonDir: '/lanes-test/b' };
    const log: string[] = [];
    const running = { now: 0, most: 0 };
    const names = ['c1', 'c2', 'c3', 'c4', 'c5'];
    expect(await Promise.all(names.map((n) => inTurns(repo, 'checkout', 2, probe(log, running, n))))).toEqual(names);
    expect(running.most).toBe(2);
    expect(log.filter((e) => e.endsWith('>'))).toEqual(names.map((n) => `${n}>`));
    // a failing call passes its turn on
    await expect(inTurns(repo, 'checkout', 1, () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await inTurns(repo, 'checkout', 1, async () => 'next')).toBe('next');
  });
});
