import { execFileSync } from 'node:child_process';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  keepSpares,
  makeFolder,
  recycleFolder,
  sparesAtHand,
  SPARE_DIR,
  writeNewFile,
} from '../../src/platform/files/spare-entries.js';
import { tempDir } from '../helpers/temp.js';

const releases: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const release of releases.splice(0)) await release();
});

/** A data dir whose spares are made; its spare folder's entries by kind, with their inodes. */
async function dataDirWithSpares(): Promise<{ data: string; spare: string }> {
  const data = tempDir('gaffer-spares-');
  releases.push(keepSpares(data));
  // none are made until one is asked for: an engine that runs no job makes none
  expect(await sparesAtHand(data)).toEqual({ folders: 0, files: 0 });
  makeFolder(join(data, 'first'));
  expect(await sparesAtHand(data)).toEqual({ folders: 32, files: 16 });
  return { data, spare: join(data, SPARE_DIR) };
}

const inodes = (dir: string, kind: 'd' | 'f') =>
  new Set(
    readdirSync(dir)
      .filter((n) => n.startsWith(`${kind}.`))
      .map((n) => lstatSync(join(dir, n)).ino),
  );

/** Puts `plant(path)` in the place of every spare of a kind: whichever is taken next is hostile. */
function plantInEvery(spare: string, kind: 'd' | 'f', plant: (path: string) => void): void {
  for (const name of readdirSync(spare).filter((n) => n.startsWith(`${kind}.`))) {
    rmSync(join(spare, name), { recursive: true, force: true });
    plant(join(spare, name));
  }
}

describe('spare folders and files (made ahead, renamed into place)', () => {
  it('a new folder or file under the data dir is a spare renamed into place, and the spares are made again', async () => {
    const { data, spare } = await dataDirWithSpares();
    const folders = inodes(spare, 'd');
    const files = inodes(spare, 'f');
    const job = join(data, 'jobs', 'j1');
    mkdirSync(join(data, 'jobs'));
    makeFolder(job);
    expect(folders.has(statSync(job).ino)).toBe(true);
    writeNewFile(join(job, 'w.instruction.txt'), 'do it');
    const file = join(job, 'w.instruction.txt');
    expect(files.has(statSync(file).ino)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('do it');
    // the same mode as a file written the ordinary way
    writeFileSync(join(job, 'plain.txt'), 'x');
    expect(statSync(file).mode).toBe(statSync(join(job, 'plain.txt')).mode);
    expect(await sparesAtHand(data)).toEqual({ folders: 32, files: 16 });
    // an existing folder stays; an existing file is written over in place
    makeFolder(job);
    expect(readdirSync(job).sort()).toEqual(['plain.txt', 'w.instruction.txt']);
    const ino = statSync(file).ino;
    writeNewFile(file, 'again');
    expect([statSync(file).ino, readFileSync(file, 'utf8')]).toEqual([ino, 'again']);
    // a folder whose parent is missing is made with it, as mkdir -p
    makeFolder(join(data, 'a', 'b', 'c'));
    expect(statSync(join(data, 'a', 'b', 'c')).isDirectory()).toBe(true);
  });

  it('outside a data dir that keeps spares, entries are made the ordinary way', async () => {
    const { spare } = await dataDirWithSpares();
    const elsewhere = tempDir('gaffer-elsewhere-');
    makeFolder(join(elsewhere, 'x'));
    writeNewFile(join(elsewhere, 'x', 'f'), 'y');
    expect(inodes(spare, 'd').has(statSync(join(elsewhere, 'x')).ino)).toBe(false);
    expect(readdirSync(spare)).toHaveLength(48);
  });

  it('a spare folder swapped for a link or a folder with something in it is not used', async () => {
    const { data, spare } = await dataDirWithSpares();
    const outside = tempDir('gaffer-outside-');
    plantInEvery(spare, 'd', (path) => symlinkSync(outside, path));
    makeFolder(join(data, 'j1'));
    writeNewFile(join(data, 'j1', 'f'), 'mine');
    expect(lstatSync(join(data, 'j1')).isDirectory()).toBe(true);
    expect(readdirSync(outside)).toEqual([]);
    plantInEvery(spare, 'd', (path) => {
      mkdirSync(path);
      symlinkSync(join(outside, 'victim'), join(path, 'f'));
    });
    makeFolder(join(data, 'j2'));
    expect(readdirSync(join(data, 'j2'))).toEqual([]);
    writeNewFile(join(data, 'j2', 'f'), 'mine');
    expect(readdirSync(outside)).toEqual([]);
  });

  it('a spare file swapped for a link, a hard link, a FIFO or a file with content is not written through', async () => {
    const { data, spare } = await dataDirWithSpares();
    const outside = tempDir('gaffer-outside-');
    const victim = join(outside, 'victim');
    writeFileSync(victim, 'precious');
    // an empty file looks like a spare by its size: only the link itself gives it away
    const empty = join(outside, 'empty');
    writeFileSync(empty, '');
    const plants: [string, (path: string) => void][] = [
      ['symlink', (path) => symlinkSync(victim, path)],
      ['symlink to an empty file', (path) => symlinkSync(empty, path)],
      ['hard link', (path) => linkSync(victim, path)],
      ['hard link to an empty file', (path) => linkSync(empty, path)],
      ['FIFO', (path) => execFileSync('mkfifo', [path])],
      ['content', (path) => writeFileSync(path, 'left behind')],
    ];
    for (const [what, plant] of plants) {
      plantInEvery(spare, 'f', plant);
      const dest = join(data, `f-${what}`);
      const started = Date.now();
      writeNewFile(dest, 'mine');
      expect(Date.now() - started, what).toBeLessThan(2_000);
      const st = lstatSync(dest);
      expect([what, st.isFile(), st.nlink, readFileSync(dest, 'utf8')]).toEqual([what, true, 1, 'mine']);
      expect([readFileSync(victim, 'utf8'), readFileSync(empty, 'utf8')], what).toEqual(['precious', '']);
    }
  });

  it("a pruned job's folder and files come back as spares, emptied; a link in it is removed by name, never followed", async () => {
    const { data, spare } = await dataDirWithSpares();
    const outside = tempDir('gaffer-outside-');
    writeFileSync(join(outside, 'victim'), 'precious');
    writeFileSync(join(outside, 'shared'), 'shared');
    const job = join(data, 'jobs', 'old');
    mkdirSync(job, { recursive: true });
    writeFileSync(join(job, 'w.instruction.txt'), 'an instruction');
    writeFileSync(join(job, 'w.log'), 'a log');
    symlinkSync(join(outside, 'victim'), join(job, 'link'));
    linkSync(join(outside, 'shared'), join(job, 'hard'));
    execFileSync('mkfifo', [join(job, 'fifo')]); // no reader: an open for writing would wait for one
    const folder = statSync(job).ino;
    const files = [statSync(join(job, 'w.instruction.txt')).ino, statSync(join(job, 'w.log')).ino];
    const started = Date.now();
    await recycleFolder(job);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(() => lstatSync(job)).toThrow(/ENOENT/);
    expect(inodes(spare, 'd').has(folder)).toBe(true); // the link, the hard link and the FIFO went, by name
    for (const ino of files) expect(inodes(spare, 'f').has(ino)).toBe(true);
    for (const name of readdirSync(spare).filter((n) => n.startsWith('f.')))
      expect(statSync(join(spare, name)).size).toBe(0);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('precious');
    expect(readFileSync(join(outside, 'shared'), 'utf8')).toBe('shared');
    expect(await sparesAtHand(data)).toEqual({ folders: 33, files: 18 });

    const clean = join(data, 'jobs', 'clean');
    mkdirSync(clean);
    writeFileSync(join(clean, 'w.instruction.txt'), 'x');
    const cleanIno = statSync(clean).ino;
    await recycleFolder(clean);
    expect(inodes(spare, 'd').has(cleanIno)).toBe(true);
    expect(await sparesAtHand(data)).toEqual({ folders: 34, files: 19 });
  });

  it('without spares kept, a recycled folder is removed; spares left by an engine are taken on by the next', async () => {
    const bare = tempDir('gaffer-bare-');
    mkdirSync(join(bare, 'jobs', 'x'), { recursive: true });
    await recycleFolder(join(bare, 'jobs', 'x'));
    expect(readdirSync(join(bare, 'jobs'))).toEqual([]);
    expect(await sparesAtHand(bare)).toBeNull();

    const { data, spare } = await dataDirWithSpares();
    const made = inodes(spare, 'd');
    await releases.pop()?.();
    expect(await sparesAtHand(data)).toBeNull();
    releases.push(keepSpares(data));
    expect(await sparesAtHand(data)).toEqual({ folders: 32, files: 16 });
    expect(inodes(spare, 'd')).toEqual(made);
  });
});
