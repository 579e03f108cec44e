import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type * as QuickLookModule from '../../src/evidence/quick-look.js';
import type { Snapshot } from '../../src/domain/snapshot.js';
import { git, lsTree, snap, tempDir, write } from './helpers.js';

// the quick look is spied on, so each step can say which way its checkpoint went
vi.mock('../../src/evidence/quick-look.js', async (importOriginal) => {
  const original = await importOriginal<typeof QuickLookModule>();
  return { ...original, quickLook: vi.fn(original.quickLook) };
});
const { lastLook, quickLook, quickLookLimits } = await import('../../src/evidence/quick-look.js');
const looks = vi.mocked(quickLook);

type Via = typeof lastLook.via;
type Step = [what: string, change: (ws: string) => Promise<void>, expected: 'quick' | 'full', via?: Via];

/** What a checkpoint holds, comparable across data dirs. */
function contents(s: Snapshot): unknown {
  return { tree: Object.fromEntries(lsTree(s)), skipped: s.skipped, large: s.largeFilesByStat };
}

/**
 * Runs the steps on one workspace: after each, the warm re-checkpoint (which may derive its path
 * set from the shadow index) must hold exactly what a first checkpoint in a fresh data dir holds.
 */
async function compareWithCold(ws: string, steps: Step[], alwaysInclude: string[] = []): Promise<string> {
  const data = await tempDir('gaffer-data-');
  const opts = { sizeCapBytes: 1000, alwaysInclude };
  await snap(ws, data, 'pre', opts);
  for (const [i, [what, change, expected, via]] of steps.entries()) {
    await change(ws);
    looks.mockClear();
    lastLook.via = null;
    const warm = await snap(ws, data, `s${i}`, opts);
    const cold = await snap(ws, await tempDir('gaffer-data-'), 'cold', opts);
    expect(contents(warm), what).toEqual(contents(cold));
    const quick =
      looks.mock.results.length === 1 &&
      looks.mock.results[0]?.type === 'return' &&
      (await looks.mock.results[0].value) !== null;
    expect(quick ? 'quick' : 'full', what).toBe(expected);
    if (via !== undefined) expect(lastLook.via, what).toBe(via);
  }
  return data;
}

/** Runs `body` with the quick look's limits changed, then puts them back. */
async function withLimits<T>(limits: Partial<typeof quickLookLimits>, body: () => Promise<T>): Promise<T> {
  const saved = { ...quickLookLimits };
  Object.assign(quickLookLimits, limits);
  try {
    return await body();
  } finally {
    Object.assign(quickLookLimits, saved);
  }
}

const common: Step[] = [
  [
    'a file modified, one added, an ignored one added',
    (ws) => write(ws, { 'a.txt': 'changed\n', 'src/new.js': 'n\n', 'x.log': 'ignored\n' }),
    'quick',
  ],
  [
    'a file deleted, one added in a new folder',
    async (ws) => {
      await fs.rm(path.join(ws, 'src/b.js'));
      await write(ws, { 'newdir/deeper/d.js': 'd\n' });
    },
    'quick',
  ],
  ['nothing changed', async () => undefined, 'quick'],
  [
    'a large file grown, a small one made large',
    (ws) => write(ws, { 'big.bin': Buffer.alloc(3000, 2), 'a.txt': Buffer.alloc(2000, 3) }),
    'quick',
  ],
  [
    'a file replaced by a symlink, a folder removed',
    async (ws) => {
      await fs.rm(path.join(ws, 'src/deep'), { recursive: true });
      await fs.rm(path.join(ws, 'src/new.js'));
      await fs.symlink('../a.txt', path.join(ws, 'src/new.js'));
    },
    'quick',
  ],
  [
    'a FIFO appears',
    async (ws) => {
      execFileSync('mkfifo', [path.join(ws, 'src/pipe')]);
    },
    'quick',
  ],
  ['.gitignore changed: the rules changed', (ws) => write(ws, { '.gitignore': '*.log\n*.js\n' }), 'full'],
  ['after a full listing, quick again', (ws) => write(ws, { 'z.txt': 'z\n' }), 'quick'],
  [
    'a nested repository appears',
    async (ws) => {
      await write(ws, { 'sub/inner.txt': 'inner\n', 'sub/.gitignore': 'skip.txt\n', 'sub/skip.txt': 's\n' });
      git(path.join(ws, 'sub'), 'init', '-q');
    },
    'full',
  ],
  ['a .gitignore deleted', (ws) => fs.rm(path.join(ws, '.gitignore')), 'full'],
];

const initial = {
  'a.txt': 'a\n',
  'src/b.js': 'b\n',
  'src/deep/c.js': 'c\n',
  'big.bin': Buffer.alloc(2000, 1),
  '.gitignore': '*.log\n',
};

describe('re-checkpoints that derive the path set from the shadow index', () => {
  it('hold what a full listing holds, in a folder outside any repository', async () => {
    const ws = await tempDir();
    await write(ws, initial);
    await compareWithCold(ws, common);
  });

  it('hold the same with the two-process look of big trees (others ‖ diff-files)', async () => {
    const ws = await tempDir();
    await write(ws, initial);
    await withLimits({ oneProcessMaxPaths: 0, statusLook: false }, () => compareWithCold(ws, common));
  });

  it("hold the same with the status look of big trees (git's untracked cache), in a folder and in a repository", async () => {
    const plain = await tempDir();
    await write(plain, initial);
    const repo = await tempDir();
    await write(repo, initial);
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'init');
    await withLimits({ oneProcessMaxPaths: 0 }, async () => {
      await compareWithCold(plain, common);
      await compareWithCold(repo, common);
    });
  });

  it('the status look: a worker cannot hide a new file behind a .gitignore that ignores itself, an old mtime or a re-included folder', async () => {
    const ws = await tempDir();
    await write(ws, { ...initial, '.gitignore': '*.log\n!node_modules/\n', 'node_modules/a.js': 'a\n' });
    await withLimits({ oneProcessMaxPaths: 0 }, async () => {
      const data = await compareWithCold(ws, [
        // the first status makes the untracked cache: every folder is new to it
        ['a file modified', (w) => write(w, { 'a.txt': 'one\n' }), 'quick', 'status+others'],
        ['a file modified, one added', (w) => write(w, { 'a.txt': 'two\n', 'src/n.js': 'n\n' }), 'quick', 'status'],
        [
          'a new folder whose .gitignore ignores itself and the file beside it',
          (w) => write(w, { 'hid/.gitignore': '*\n', 'hid/secret.txt': 'hidden\n' }),
          'full',
          'status+others',
        ],
        // the new .gitignore went into the index, which made git forget its folder's rules: they are read again once
        ['quick again', (w) => write(w, { 'a.txt': 'three\n' }), 'quick', 'status+others'],
        ['quick again, from the cache', (w) => write(w, { 'a.txt': 'four\n' }), 'quick', 'status'],
        [
          'an old folder gets a .gitignore that ignores itself and a new file',
          (w) => write(w, { 'src/deep/.gitignore': '*\n', 'src/deep/secret.js': 'hidden\n' }),
          'full',
          'status+others',
        ],
        ['and again', (w) => write(w, { 'a.txt': 'five\n' }), 'quick', 'status+others'],
        [
          "a file added, then its folder's mtime set back",
          async (w) => {
            const before = await fs.stat(path.join(w, 'src'));
            await new Promise((r) => setTimeout(r, 1100));
            await write(w, { 'src/sneak.js': 's\n' });
            await fs.utimes(path.join(w, 'src'), before.atime, before.mtime);
          },
          'quick',
          'status',
        ],
        // status walks node_modules (the .gitignore re-includes it, above the exclude file): spec 03 keeps it out
        [
          'a file added in a re-included excluded folder',
          (w) => write(w, { 'node_modules/b.js': 'b\n' }),
          'quick',
          'status',
        ],
        ['a file deleted', (w) => fs.rm(path.join(w, 'src/sneak.js')), 'quick', 'status'],
        [
          'a file whose name is not UTF-8 (skipped, named quoted)',
          (w) => fs.writeFile(Buffer.concat([Buffer.from(`${w}/src/caf`), Buffer.from([0xe9])]), 'latin1\n'),
          'quick',
          'status',
        ],
        ['and the look after it', (w) => write(w, { 'a.txt': 'six\n' }), 'quick', 'status'],
      ]);
      const [shadow] = await fs.readdir(path.join(data, 'shadow'));
      // HEAD pointed at the warm checkpoint for the look only
      expect(await fs.readFile(path.join(data, 'shadow', shadow as string, 'HEAD'), 'utf8')).toBe(
        'ref: refs/heads/main\n',
      );
    });
  });

  it('hold what a full listing holds in a repository, and list in full when its index, exclude file or config changes', async () => {
    const ws = await tempDir();
    await write(ws, initial);
    git(ws, 'init', '-q');
    git(ws, 'add', '-A');
    git(ws, 'commit', '-qm', 'init');
    await compareWithCold(ws, [
      ...common,
      [
        'an ignored file force-added to the index',
        async (w) => {
          await write(w, { 'forced.log': 'tracked though ignored\n' });
          git(w, 'add', '-f', 'forced.log');
        },
        'full',
      ],
      ['quick again after that', (w) => write(w, { 'y.txt': 'y\n' }), 'quick'],
      ['info/exclude changed', (w) => write(w, { '.git/info/exclude': 'y.txt\n' }), 'full'],
      [
        'the .git/info folder replaced by a file',
        async (w) => {
          await fs.rm(path.join(w, '.git/info'), { recursive: true });
          await write(w, { '.git/info': 'not a folder\n', 'v.txt': 'v\n' });
        },
        'full',
      ],
      ['and quick again after it', (w) => write(w, { 'u.txt': 'u\n' }), 'quick'],
      [
        'the repo config names an excludes file: always in full',
        async (w) => {
          git(w, 'config', 'core.excludesFile', path.join(w, 'nothing'));
          await write(w, { 'w.txt': 'w\n' });
        },
        'full',
      ],
    ]);
  });

  it('always-included paths: the same list keeps the quick look whether its files come or go; another list lists in full', async () => {
    const ws = await tempDir();
    await write(ws, { ...initial, 'keep.log': 'ignored but asked for\n' });
    await compareWithCold(
      ws,
      [
        ['the included ignored file modified', (w) => write(w, { 'keep.log': 'changed\n' }), 'quick'],
        ['the included file deleted', (w) => fs.rm(path.join(w, 'keep.log')), 'quick'],
        ['the included ignored file back', (w) => write(w, { 'keep.log': 'back\n' }), 'quick'],
        [
          'an included file that was not there appears (a task writes its declared file)',
          (w) => write(w, { 'out/new.txt': 'declared\n' }),
          'quick',
        ],
        ['an included ignored file that was not there appears', (w) => write(w, { 'late.log': 'late\n' }), 'quick'],
        [
          'both deleted again',
          async (w) => {
            await fs.rm(path.join(w, 'late.log'));
            await fs.rm(path.join(w, 'out/new.txt'));
          },
          'quick',
        ],
      ],
      ['keep.log', 'out/new.txt', 'late.log'],
    );
    // the same workspace checkpointed for a request that includes less: its ignored file is no longer held
    const data = await tempDir('gaffer-data-');
    await snap(ws, data, 'pre', { sizeCapBytes: 1000, alwaysInclude: ['keep.log'] });
    looks.mockClear();
    const narrower = await snap(ws, data, 'narrower', { sizeCapBytes: 1000, alwaysInclude: [] });
    const cold = await snap(ws, await tempDir('gaffer-data-'), 'cold', { sizeCapBytes: 1000, alwaysInclude: [] });
    expect(contents(narrower)).toEqual(contents(cold));
    expect(lsTree(narrower).has('keep.log')).toBe(false);
    expect(looks.mock.results.length === 0 || (await looks.mock.results[0]?.value) === null).toBe(true);
  });
});

describe("the status look's reading of git's trace2", () => {
  const data = (key: string, value: string): string =>
    `{"event":"data","sid":"s","thread":"main","file":"dir.c","line":2990,"repo":1,"nesting":3,"category":"read_directory","key":"${key}","value":"${value}"}`;
  it('held only when git counted no new folder and no changed ignore file; unused when it said nothing of its cache', async () => {
    const { cacheOf } = await import('../../src/evidence/status-look.js');
    const region = '{"event":"region_enter","category":"dir","label":"read_directory"}';
    expect(cacheOf([region, data('node-creation', '0'), data('gitignore-invalidation', '0')].join('\n'))).toBe('held');
    expect(cacheOf([data('node-creation', '2'), data('gitignore-invalidation', '0')].join('\n'))).toBe('changed');
    expect(cacheOf([data('node-creation', '0'), data('gitignore-invalidation', '1')].join('\n'))).toBe('changed');
    expect(cacheOf(`warning: could not open directory 'x/': Permission denied\n${region}`)).toBe('unused');
    expect(cacheOf('')).toBe('unused');
    expect(cacheOf(`${data('node-creation', '0')}\n{"event":"data","category":"read_directory",`)).toBe('changed');
  });
});
