import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function dispatch(data: string, ws: string, command: string): Promise<{ code: number | null; job: { id: string; status: string; started: number; finished: number } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, ['--data-dir', data, '--json', 'dispatch', '--workspace', ws, '--verify', 'none', '--task', command, '--command', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    // 'close': both pipes drained; a CLI that printed no answer fails the test with its stderr
    child.on('close', (code) => {
      try {
        resolve({ code, job: JSON.parse(out) });
      } catch {
        reject(new Error(`gaffer dispatch exited ${code} without a JSON answer; stderr:\n${err.slice(-2000)}`));
      }
    });
  });
}

describe('several gaffer processes on one data dir', () => {
  it('share the store, and one workspace takes one job at a time across processes', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'a.txt': 'a' });
    const other = makeWorkspace({ 'b.txt': 'b' });
    const [a, b, c] = await Promise.all([dispatch(data, ws, 'sleep 1.5; echo 1 >> a.txt'), dispatch(data, ws, 'sleep 1.5; echo 2 >> a.txt'), dispatch(data, other, 'echo 3 >> b.txt')]);
    for (const r of [a, b, c]) expect(r.code).toBe(0);
    const [first, second] = [a.job, b.job].sort((x, y) => x.started - y.started) as [typeof a.job, typeof a.job];
    // the second started only after the first finished, within the 200 ms cross-process look
    expect(second.started).toBeGreaterThanOrEqual(first.finished - 0.05);
    expect(second.started - first.finished).toBeLessThan(1);
  });
});
