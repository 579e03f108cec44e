import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as ListingModule from '../../src/evidence/listing.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { diffSnapshots } from '../../src/evidence/diff.js';
import { git, lsTree, snap, tempDir, write } from './helpers.js';

// the full listing is spied on, so each step can say whether its checkpoint listed the workspace
vi.mock('../../src/evidence/listing.js', async (importOriginal) => {
  const original = await importOriginal<typeof ListingModule>();
  return { ...original, listWorkspacePaths: vi.fn(original.listWorkspacePaths) };
});
const { listWorkspacePaths } = await import('../../src/evidence/listing.js');
const { trackedDigestLimits } = await import('../../src/evidence/quick-look.js');
const listings = vi.mocked(listWorkspacePaths);

const contents = (s: Snapshot): unknown => ({ tree: Object.fromEntries(lsTree(s)), skipped: s.skipped });

type Step = [what: string, change: (ws: string) => Promise<void>, expected: 'quick' | 'full'];

/** After each step, the re-checkpoint must hold what a first checkpoint in a fresh data dir holds. */
async function compareWithCold(ws: string, steps: Step[]): Promise<void> {
  const data = await tempDir('gaffer-data-');
  await snap(ws, data, 'pre');
  for (const [i, [what, change, expected]] of steps.entries()) {
    await change(ws);
    listings.mockClear();
    const warm = await snap(ws, data, `s${i}`);
    const listed = listings.mock.calls.length > 0;
    const cold = await snap(ws, await tempDir('gaffer-data-'), 'cold');
    expect(contents(warm), what).toEqual(contents(cold));
    expect(listed ? 'full' : 'quick', what).toBe(expected);
  }
}

/** The user commits everything (as between jobs). */
const commitAll = (ws: string, message: string): void => {
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', message);
};

describe("a user's commit between checkpoints of a big repository", () => {
  let saved: number;
  beforeAll(() => {
    // every index counts as big here: the digest of what it tracks decides
    saved = trackedDigestLimits.minIndexBytes;
    trackedDigestLimits.minIndexBytes = 0;
  });
  afterAll(() => {
    trackedDigestLimits.minIndexBytes = saved;
  });

  it('keeps the quick look while what the index tracks is the same, and lists in full when a tracked ignored file comes or goes', async () => {
    const ws = await tempDir();
    await write(ws, {
      'a.txt': 'a\n',
      'src/b.js': 'b\n',
      '.gitignore': '*.log\n',
      'kept.log': 'tracked though ignored\n',
    });
    git(ws, 'init', '-q');
    git(ws, 'add', '-A');
    git(ws, 'add', '-f', 'kept.log');
    git(ws, 'commit', '-qm', 'init');
    await compareWithCold(ws, [
      // the first checkpoint noted what the index tracks, beside its listing
      [
        'a file modified and committed',
        async (w) => {
          await write(w, { 'a.txt': 'a2\n' });
          commitAll(w, 'a2');
        },
        'quick',
      ],
      [
        'another modified and committed',
        async (w) => {
          await write(w, { 'src/b.js': 'b2\n' });
          commitAll(w, 'b2');
        },
        'quick',
      ],
      [
        'a new file committed, an ignored one written',
        async (w) => {
          await write(w, { 'src/new.js': 'n\n', 'x.log': 'ignored\n' });
          commitAll(w, 'new');
        },
        'quick',
      ],
      [
        'a file deleted and committed',
        async (w) => {
          await fs.rm(path.join(w, 'src/new.js'));
          commitAll(w, 'rm');
        },
        'quick',
      ],
      [
        'a tracked ignored file changed and committed',
        async (w) => {
          await write(w, { 'kept.log': 'changed\n' });
          git(w, 'commit', '-qam', 'kept');
        },
        'quick',
      ],
      [
        'an ignored file force-added and committed',
        async (w) => {
          await write(w, { 'forced.log': 'forced\n' });
          git(w, 'add', '-f', 'forced.log');
          git(w, 'commit', '-qm', 'forced');
        },
        'full',
      ],
      [
        'a tracked ignored file untracked (it stays on disk)',
        async (w) => {
          git(w, 'rm', '-q', '--cached', 'kept.log');
          git(w, 'commit', '-qm', 'untrack');
        },
        'full',
      ],
      [
        'quick again after that',
        async (w) => {
          await write(w, { 'a.txt': 'a3\n' });
          commitAll(w, 'a3');
        },
        'quick',
      ],
    ]);
  });

  it('sees a tracked ignored file deleted and then written again, as a first checkpoint does', async () => {
    const ws = await tempDir();
    await write(ws, { 'a.txt': 'a\n', '.gitignore': '*.log\n', 'kept.log': 'tracked though ignored\n' });
    git(ws, 'init', '-q');
    git(ws, 'add', '-A');
    git(ws, 'add', '-f', 'kept.log');
    git(ws, 'commit', '-qm', 'init');
    await compareWithCold(ws, [
      ['a tracked ignored file deleted', (w) => fs.rm(path.join(w, 'kept.log')), 'quick'],
      // git's look for new files leaves out what the ignore rules match: the path is looked for by name
      ['and written again', (w) => write(w, { 'kept.log': 'written again\n' }), 'quick'],
      ['and changed', (w) => write(w, { 'kept.log': 'changed\n' }), 'quick'],
      ['an untracked ignored file written (never in the set)', (w) => write(w, { 'x.log': 'x\n' }), 'quick'],
    ]);
  });

  it('sees a change to a tracked ignored file the index does not hold (above the size cap), warm as cold', async () => {
    const ws = await tempDir();
    await write(ws, { 'a.txt': 'a\n', '.gitignore': '*.bin\n', 'big.bin': 'x'.repeat(4096) });
    git(ws, 'init', '-q');
    git(ws, 'add', '-A');
    git(ws, 'add', '-f', 'big.bin');
    git(ws, 'commit', '-qm', 'init');
    const data = await tempDir('gaffer-data-');
    const cap = { sizeCapBytes: 1024 };
    const first = await snap(ws, data, 'first', cap);
    listings.mockClear();
    const pre = await snap(ws, data, 'pre', { ...cap, jobId: 'job2' });
    // the worker changes it: git's look for new files leaves it out (ignored), so it is looked at by name
    await write(ws, { 'big.bin': 'y'.repeat(5000) });
    const post = await snap(ws, data, 'post', { ...cap, jobId: 'job2', like: pre });
    expect(listings.mock.calls.length).toBe(0);
    expect(await diffSnapshots(pre, post)).toMatchObject({ modified: ['big.bin'], added: [], deleted: [] });
    expect(await diffSnapshots(first, post)).toMatchObject({ modified: ['big.bin'], added: [], deleted: [] });
    // gone, then noticed gone
    await fs.rm(path.join(ws, 'big.bin'));
    const after = await snap(ws, data, 'after', { ...cap, jobId: 'job2', like: post });
    expect(await diffSnapshots(post, after)).toMatchObject({ modified: [], added: [], deleted: ['big.bin'] });
    // and written again: looked for by name, as a path gone from the set is
    await write(ws, { 'big.bin': 'z'.repeat(6000) });
    const back = await snap(ws, data, 'back', { ...cap, jobId: 'job2', like: after });
    expect(listings.mock.calls.length).toBe(0);
    expect(await diffSnapshots(after, back)).toMatchObject({ modified: [], added: ['big.bin'], deleted: [] });
    expect(await diffSnapshots(first, back)).toMatchObject({ modified: ['big.bin'], added: [], deleted: [] });
    // a worker puts a folder in its place (a name the ignore rules match), a file and a FIFO in it: as a first checkpoint sees it
    await fs.rm(path.join(ws, 'big.bin'));
    await write(ws, { 'big.bin/inner.txt': 'hidden?\n' });
    execFileSync('mkfifo', [path.join(ws, 'big.bin', 'pipe')]);
    const swapped = await snap(ws, data, 'swapped', { ...cap, jobId: 'job2', like: back });
    const cold = await snap(ws, await tempDir('gaffer-data-'), 'cold', cap);
    expect(contents(swapped)).toEqual(contents(cold));
  });

  it('a job after a commit sees every file it writes', async () => {
    const ws = await tempDir();
    await write(ws, { 'a.txt': 'a\n', 'src/b.js': 'b\n' });
    git(ws, 'init', '-q');
    commitAll(ws, 'init');
    const data = await tempDir('gaffer-data-');
    await snap(ws, data, 'start');
    await write(ws, { 'a.txt': 'user\n' });
    commitAll(ws, 'user');
    await snap(ws, data, 'noted', { jobId: 'job0' });
    for (let job = 1; job <= 2; job++) {
      await write(ws, { 'src/b.js': `user ${job}\n` });
      commitAll(ws, `user ${job}`);
      listings.mockClear();
      const pre = await snap(ws, data, 'pre', { jobId: `job${job}` });
      await write(ws, { 'a.txt': `worker ${job}\n`, [`new-${job}.txt`]: 'new\n' });
      const post = await snap(ws, data, 'post', { jobId: `job${job}`, like: pre });
      expect(listings.mock.calls.length, `job ${job}`).toBe(0);
      expect(await diffSnapshots(pre, post)).toEqual({ added: [`new-${job}.txt`], modified: ['a.txt'], deleted: [] });
    }
  });
});
