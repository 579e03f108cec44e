import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JobBus } from '../../../src/engine/bus.js';
import { SharedPlacement } from '../../../src/engine/placement/shared.js';
import {
  DEFAULT_WORKTREE_SETTINGS,
  WorktreePlacement,
  type TaskWorktree,
} from '../../../src/engine/placement/worktree.js';
import { commitWorkingTree, readRepo, serialized } from '../../../src/evidence/worktree-git.js';
import { Store } from '../../../src/store/store.js';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import {
  EXCLUSIVE,
  placementContract,
  README,
  requestOf,
  SHARING,
  within,
  type PlacementFixture,
} from './placement-contract.js';

const stores: Store[] = [];
afterAll(() => stores.forEach((s) => s.close()));

/** The shared workspace under its lock, as an engine composes it: each request another job on the same workspace. */
function shared(): { fixture: PlacementFixture; workspace: string } {
  const store = new Store(tempDir());
  stores.push(store);
  const workspace = makeWorkspace({ 'README.md': README }, { git: true });
  const placement = new SharedPlacement(store, new JobBus());
  return {
    workspace,
    fixture: {
      placement,
      request: (n, signal) => requestOf(`job${String(n).padStart(9, '0')}`, workspace, 'worker-1', signal),
    },
  };
}

/** Worktrees as a worktree job makes them (engine/placement/worktree-job.ts): the job's base commit, a worktree per task. */
async function worktrees(): Promise<{ fixture: PlacementFixture; workspace: string }> {
  const workspace = makeWorkspace({ 'README.md': README }, { git: true });
  const repo = await readRepo(workspace);
  if ('refused' in repo) throw new Error(repo.refused);
  const base = await serialized(repo, () => commitWorkingTree(repo, 'gaffer: base of job jobwt0000001'));
  const dir = tempDir();
  const placement = new WorktreePlacement({
    repo,
    base,
    workspace,
    root: join(dir, 'worktrees'),
    settings: DEFAULT_WORKTREE_SETTINGS,
    logDir: join(dir, 'job'),
  });
  return {
    workspace,
    fixture: { placement, request: (n, signal) => requestOf('jobwt0000001', workspace, `task-${n}`, signal) },
  };
}

placementContract('the shared placement', async () => shared().fixture);
placementContract('the worktree placement', async () => (await worktrees()).fixture);

describe('the shared placement, its own rules (spec 06 "shared")', () => {
  it('holds the workspace against another job: the next job waits, told who holds it, and is placed once the first lets go', async () => {
    const { fixture, workspace } = shared();
    const first = await fixture.placement.acquire(fixture.request(0));
    expect(first?.workspace).toBe(workspace);
    const second = fixture.request(1);
    const waiting = fixture.placement.acquire(second);
    expect(await within(waiting, 300, 'waited')).toBe('waited');
    expect(second.waits).toEqual(['waiting for job job000000000 in the same workspace']);
    first?.release();
    const placed = await within(waiting, 2000, 'waited');
    expect(placed).not.toBe('waited');
    expect(placed).not.toBeNull();
  });

  it('a job cancelled while it waits for the lock answers null, and the holder keeps the workspace', async () => {
    const { fixture } = shared();
    const first = await fixture.placement.acquire(fixture.request(0));
    const cancel = new AbortController();
    const waiting = fixture.placement.acquire(fixture.request(1, cancel.signal));
    expect(await within(waiting, 200, 'waited')).toBe('waited');
    cancel.abort();
    expect(await within(waiting, 2000, 'waited')).toBeNull();
    expect(await within(fixture.placement.acquire(fixture.request(2)), 300, 'waited')).toBe('waited');
    first?.release();
  });

  it('a second release of a job that let go does not free the workspace another job now holds', async () => {
    const { fixture } = shared();
    const first = await fixture.placement.acquire(fixture.request(0));
    first?.release();
    const second = await fixture.placement.acquire(fixture.request(1));
    first?.release();
    expect(await within(fixture.placement.acquire(fixture.request(2)), 400, 'waited')).toBe('waited');
    second?.release();
  });

  it('turn: runners that cannot share the workspace take turns, one at a time; one that can goes in beside them', async () => {
    const { fixture } = shared();
    const place = await fixture.placement.acquire(fixture.request(0));
    if (place === null) throw new Error('no place');
    const first = await place.turn(EXCLUSIVE);
    const second = place.turn(EXCLUSIVE);
    expect(await within(second, 300, 'waited')).toBe('waited');
    expect(await within(place.turn(SHARING), 300, 'waited')).toBeTypeOf('function');
    // a turn released twice is one release: the third waits for the second
    first();
    first();
    const secondRelease = await within(second, 1000, 'waited');
    expect(secondRelease).toBeTypeOf('function');
    const third = place.turn(EXCLUSIVE);
    expect(await within(third, 300, 'waited')).toBe('waited');
    (secondRelease as () => void)();
    expect(await within(third, 1000, 'waited')).toBeTypeOf('function');
    place.release();
  });
});

describe('the worktree placement, its own rules (spec 06 "Worktree isolation")', () => {
  it("each task's place is a worktree of its own on gaffer/<job>/<task>, off the user's workspace, with a port; tasks are placed at once, and their runners never wait on each other", async () => {
    const { fixture, workspace } = await worktrees();
    const [a, b] = (await Promise.all([
      fixture.placement.acquire(fixture.request(0)),
      fixture.placement.acquire(fixture.request(1)),
    ])) as TaskWorktree[];
    expect(a?.branch).toBe('gaffer/jobwt0000001/task-0');
    expect(b?.branch).toBe('gaffer/jobwt0000001/task-1');
    expect(new Set([a?.workspace, b?.workspace, workspace]).size).toBe(3);
    expect(a?.isolated).toBe(true);
    expect(a?.env?.GAFFER_PORT).toMatch(/^\d+$/);
    expect(a?.env?.GAFFER_PORT).not.toBe(b?.env?.GAFFER_PORT);
    // a worktree is its task's alone: an agent CLI's turn there waits for nobody
    await a?.turn(EXCLUSIVE);
    expect(await within(a?.turn(EXCLUSIVE) ?? Promise.resolve(null), 300, 'waited')).toBeTypeOf('function');
  });

  it('a request that names no task is refused: a worktree placement places one task at a time', async () => {
    const { fixture } = await worktrees();
    const { task: _task, ...untasked } = fixture.request(0);
    await expect(fixture.placement.acquire(untasked)).rejects.toThrow(/one task at a time/);
  });
});
