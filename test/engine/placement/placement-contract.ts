import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Place, Placement, PlacementRequest } from '../../../src/engine/placement/placement.js';
import { BuiltinRunner } from '../../../src/runners/builtin/builtin-runner.js';
import { ShellRunner } from '../../../src/runners/shell/shell-runner.js';

/** A runner that may share a workspace with others (builtin, under file locks), and one that may not (`shell`, the agent CLIs). */
export const SHARING = new BuiltinRunner({});
export const EXCLUSIVE = new ShellRunner({});

/** A workspace placed in the contract: its `README.md` holds this. */
export const README = 'placed\n';

/** One implementation set up for the contract: a placement over a git workspace whose README.md is `README`. */
export interface PlacementFixture {
  placement: Placement;
  /**
   * The n-th request for a place: a place of its own for each n (another job on the same workspace,
   * or another task of the job, as the implementation places), all on the fixture's workspace.
   */
  request(n: number, signal?: AbortSignal): PlacementRequest & { waits: string[] };
}

/** A request as a job makes it: its waits collected. */
export function requestOf(
  jobId: string,
  workspace: string,
  task: string,
  signal: AbortSignal = new AbortController().signal,
): PlacementRequest & { waits: string[] } {
  const waits: string[] = [];
  return { jobId, workspace, task, signal, waits, onWait: (message) => waits.push(message) };
}

/** Resolves with the promise's value, or with `late` when it has not settled within `ms`. */
export function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  return Promise.race([promise, new Promise<L>((r) => setTimeout(() => r(late), ms))]);
}

async function acquired(fixture: PlacementFixture, n: number): Promise<Place> {
  const place = await fixture.placement.acquire(fixture.request(n));
  expect(place, `request ${n} got no place`).not.toBeNull();
  return place as Place;
}

/**
 * What any Placement must do (issue 12, issue 34), through `Placement` and `Place` only:
 * placement-contract.test.ts runs it on the shared workspace and on worktrees. What they may do
 * differently (the shared one's lock, its turns) is tested there, per implementation.
 */
export function placementContract(name: string, make: () => Promise<PlacementFixture>): void {
  describe(`${name} keeps the Placement contract`, () => {
    it('acquire gives a place whose workspace exists and holds the workspace’s files, fit to work in', async () => {
      const fixture = await make();
      expect(fixture.placement.kind).toMatch(/^[a-z]+$/);
      const place = await acquired(fixture, 0);
      expect(statSync(place.workspace).isDirectory()).toBe(true);
      expect(readFileSync(join(place.workspace, 'README.md'), 'utf8')).toBe(README);
      expect(place.failure).toBeUndefined();
      for (const value of Object.values(place.env ?? {})) expect(typeof value).toBe('string');
      place.release();
    });

    it('turn: a runner that shares the workspace never waits, even while a turn is held; a released turn lets the next one in', async () => {
      const fixture = await make();
      const place = await acquired(fixture, 0);
      const first = await within(place.turn(EXCLUSIVE), 2000, 'waited');
      expect(first).toBeTypeOf('function');
      expect(await within(place.turn(SHARING), 500, 'waited')).toBeTypeOf('function');
      (first as () => void)();
      (first as () => void)();
      const next = await within(place.turn(EXCLUSIVE), 2000, 'waited');
      expect(next).toBeTypeOf('function');
      (next as () => void)();
      place.release();
    });

    it('release is idempotent: a second release changes nothing, and the workspace is placed again for the next job or task', async () => {
      const fixture = await make();
      const place = await acquired(fixture, 0);
      place.release();
      expect(() => place.release()).not.toThrow();
      const again = await within(fixture.placement.acquire(fixture.request(1)), 5000, 'waited');
      expect(again, 'the next request was not placed after a double release').not.toBe('waited');
      expect(again).not.toBeNull();
      (again as Place).release();
      expect(existsSync(join((again as Place).workspace, 'README.md'))).toBe(true);
    });

    it('acquire with an aborted signal answers null: a job cancelled before its place is ready gets none', async () => {
      const fixture = await make();
      const cancelled = new AbortController();
      cancelled.abort();
      expect(await within(fixture.placement.acquire(fixture.request(0, cancelled.signal)), 2000, 'waited')).toBeNull();
      // and it held nothing: the next request is placed
      const next = await within(fixture.placement.acquire(fixture.request(1)), 5000, 'waited');
      expect(next).not.toBe('waited');
      (next as Place).release();
    });
  });
}
