import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function dispatch(
  data: string,
  ws: string,
  command: string,
): Promise<{ code: number | null; job: { id: string; status: string; started: number; finished: number } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      BIN,
      [
        '--data-dir',
        data,
        '--json',
        'dispatch',
        '--workspace',
        ws,
        '--verify',
        'none',
        '--task',
        command,
        '--command',
        command,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
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
    const [a, b, c] = await Promise.all([
      dispatch(data, ws, 'sleep 1.5; echo 1 >> a.txt'),
      dispatch(data, ws, 'sleep 1.5; echo 2 >> a.txt'),
      dispatch(data, other, 'echo 3 >> b.txt'),
    ]);
    for (const r of [a, b, c]) expect(r.code).toBe(0);
    const [first, second] = [a.job, b.job].sort((x, y) => x.started - y.started) as [typeof a.job, typeof a.job];
    // the second started only after the first finished, within the 200 ms cross-process look
    expect(second.started).toBeGreaterThanOrEqual(first.finished - 0.05);
    expect(second.started - first.finished).toBeLessThan(1);
  });
});

function gaffer(data: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(BIN, ['--data-dir', data, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('an approval answered from another gaffer process', () => {
  it('gaffer asks lists the open asks; gaffer approve answers each task; the dispatching process runs the yes and refuses the no', async () => {
    const data = join(tempDir(), 'data');
    const ws = makeWorkspace({ 'README.md': 'x\n' });
    const request = join(tempDir(), 'job.json');
    writeFileSync(
      request,
      JSON.stringify({
        workspace: ws,
        approval: 'required',
        verify: 'none',
        tasks: [
          { name: 'a', instruction: 'write a', files: ['a.txt'], command: 'echo a > a.txt' },
          { name: 'b', instruction: 'write b', files: ['b.txt'], command: 'echo b > b.txt' },
        ],
      }),
    );
    const dispatched = gaffer(data, ['--json', 'dispatch', request]);
    let asks: { job_id: string; ask: { task: string } }[] = [];
    for (let i = 0; i < 100 && asks.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const listed = await gaffer(data, ['--json', 'asks']);
      if (listed.code === 0) asks = JSON.parse(listed.out).asks;
    }
    expect(asks.map((a) => a.ask.task)).toEqual(['a', 'b']);
    const id = asks[0]?.job_id ?? '';
    const human = await gaffer(data, ['asks']);
    expect(human.out).toContain(`answer: gaffer approve ${id} a=yes (or a=no)`);
    expect((await gaffer(data, ['approve', id, 'zed=yes'])).code).toBe(2);
    expect((await gaffer(data, ['approve', id, 'a=maybe'])).code).toBe(2);
    expect((await gaffer(data, ['approve', id, 'a=yes', '--deny'])).code).toBe(2);
    expect((await gaffer(data, ['approve', id, '--task', 'a'])).code).toBe(0);
    expect((await gaffer(data, ['approve', id, 'b=no', '--note', 'not now'])).code).toBe(0);
    const end = await dispatched;
    expect(end.code).toBe(1);
    const job = JSON.parse(end.out);
    expect(job.result.workers.map((w: { name: string; status: string }) => [w.name, w.status])).toEqual([
      ['a', 'done'],
      ['b', 'refused'],
    ]);
    expect((await gaffer(data, ['approve', id])).code).toBe(2);
  });
});
