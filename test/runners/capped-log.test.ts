import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CappedLog, formatDroppedLine } from '../../src/platform/process/capped-log.js';
import { makeTempDir } from './helpers.js';
import { readTail } from '../../src/engine/queries/job-files.js';

/** Bytes 0..n-1 as a repeating, position-revealing pattern: letter a–z per byte. */
function pattern(from: number, to: number): Buffer {
  const bytes = Buffer.alloc(to - from);
  for (let i = from; i < to; i++) bytes[i - from] = 97 + (i % 26);
  return bytes;
}

function writeInChunks(log: CappedLog, total: number, chunk: number): void {
  for (let at = 0; at < total; at += chunk) log.write(pattern(at, Math.min(total, at + chunk)));
}

describe('CappedLog', () => {
  it('keeps everything while the output fits head + tail', () => {
    const path = join(makeTempDir(), 'a', 'b.log');
    const log = new CappedLog(path, { headBytes: 100, tailBytes: 300 });
    writeInChunks(log, 400, 7);
    expect(log.close()).toEqual({ totalBytes: 400, droppedBytes: 0, error: null });
    expect(readFileSync(path)).toEqual(pattern(0, 400));
  });

  it("makes no file for a worker that prints nothing, and leaves no earlier run's log at its path", () => {
    const dir = makeTempDir();
    const silent = join(dir, 'jobs', 'j1', 'w.log');
    expect(new CappedLog(silent).close()).toEqual({ totalBytes: 0, droppedBytes: 0, error: null });
    expect(existsSync(join(dir, 'jobs'))).toBe(false);
    expect(readTail(silent, 100)).toBe('');
    // an earlier run of the same worker name printed: a silent run now must not read as that one
    const again = join(dir, 'again.log');
    writeFileSync(again, 'the earlier run\n');
    new CappedLog(again).close();
    expect(existsSync(again)).toBe(false);
    const loud = new CappedLog(again);
    loud.write(Buffer.alloc(0));
    expect(existsSync(again)).toBe(false);
    loud.write(Buffer.from('now\n'));
    expect(loud.close()).toEqual({ totalBytes: 4, droppedBytes: 0, error: null });
    expect(readFileSync(again, 'utf8')).toBe('now\n');
  });

  it('keeps the head and the newest tail when the ring has not wrapped', () => {
    const path = join(makeTempDir(), 'w.log');
    const log = new CappedLog(path, { headBytes: 100, tailBytes: 300 });
    writeInChunks(log, 550, 13);
    expect(log.close()).toEqual({ totalBytes: 550, droppedBytes: 150, error: null });
    const expected = Buffer.concat([pattern(0, 100), Buffer.from('\n' + formatDroppedLine(150)), pattern(250, 550)]);
    expect(readFileSync(path)).toEqual(expected);
    expect(existsSync(`${path}.ring`)).toBe(false);
  });

  it('keeps the head and the newest tail after the ring wrapped many times', () => {
    const path = join(makeTempDir(), 'w.log');
    const log = new CappedLog(path, { headBytes: 100, tailBytes: 300 });
    writeInChunks(log, 10_123, 37);
    const dropped = 10_123 - 400;
    expect(log.close()).toEqual({ totalBytes: 10_123, droppedBytes: dropped, error: null });
    const expected = Buffer.concat([
      pattern(0, 100),
      Buffer.from('\n' + formatDroppedLine(dropped)),
      pattern(10_123 - 300, 10_123),
    ]);
    expect(readFileSync(path)).toEqual(expected);
  });

  it('handles one chunk larger than the whole cap', () => {
    const path = join(makeTempDir(), 'w.log');
    const log = new CappedLog(path, { headBytes: 100, tailBytes: 300 });
    log.write(pattern(0, 5000));
    log.write(pattern(5000, 5010));
    log.close();
    const expected = Buffer.concat([pattern(0, 100), Buffer.from('\n' + formatDroppedLine(4610)), pattern(4710, 5010)]);
    expect(readFileSync(path)).toEqual(expected);
  });

  it('does not add a newline before the dropped line when the head ends a line', () => {
    const path = join(makeTempDir(), 'w.log');
    const log = new CappedLog(path, { headBytes: 4, tailBytes: 4 });
    log.write(Buffer.from('abc\n12345678wxyz'));
    log.close();
    expect(readFileSync(path, 'utf8')).toBe(`abc\n${formatDroppedLine(8)}wxyz`);
  });

  it('reports a log it cannot write instead of throwing', () => {
    const dir = makeTempDir();
    writeFileSync(join(dir, 'file'), '');
    const path = join(dir, 'file', 'w.log'); // a regular file where a directory should be
    const log = new CappedLog(path);
    log.write(Buffer.from('x'));
    const summary = log.close();
    expect(summary.totalBytes).toBe(1);
    expect(summary.error).toContain(`log ${path}: `);
    expect(summary.error).toMatch(/EEXIST|ENOTDIR/);
  });
});
