import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// spec 05 "The task queue folder", through bin/gaffer: good, ungrounded, held and malformed records.

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, GAFFER_URL: '', GAFFER_SANDBOX: 'off' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const grounded = { type: 'sweep', source: 'issue tracker', receipts: ['README.md:1 says todo'], done_means: ['the file exists'] };

describe('gaffer queue', () => {
  it('dispatches the grounded records as one job, writes back every status atomically, reports and skips the malformed, and skips what it finished', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ default_runner: 'shell' }));
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const put = (file: string, value: unknown) => writeFileSync(join(dir, file), typeof value === 'string' ? value : JSON.stringify(value));
    put('1-good.json', { id: 'Good One', title: 'write good.txt', instruction: 'echo good > good.txt', files: ['good.txt'], ...grounded });
    put('2-also.json', { id: 'also', title: 'write also.txt', instruction: 'echo also > also.txt', files: ['also.txt'], ...grounded });
    put('3-ungrounded.json', { id: 'vague', title: 'make it better', type: 'fix', source: 'a chat' });
    put('4-held.json', { id: 'held', title: 'later', ...grounded, hold: 'waiting on the design review' });
    const broken = '{"id": "x", "title": ';
    put('5-broken.json', broken);
    put('6-nosource.json', { id: 'y', title: 't', type: 'fix' });

    const listed = gaffer(data, ['queue', 'ls', dir, '--workspace', ws]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/1-good\.json {2}Good One {2}ready {2}route: runner shell, billed free$/m);
    expect(listed.stdout).toMatch(/3-ungrounded\.json {2}vague {2}returned {2}no receipts/);

    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(ran.code, ran.stderr).toBe(0);
    const byFile = Object.fromEntries((JSON.parse(ran.stdout) as { records: { file: string; status: string; detail: string }[] }).records.map((r) => [r.file, r]));
    expect(byFile['1-good.json']?.status).toBe('done');
    expect(byFile['2-also.json']?.status).toBe('done');
    expect(byFile['3-ungrounded.json']).toMatchObject({ status: 'returned', detail: expect.stringMatching(/^no receipts \(evidence the task is real.*; no done_means/) });
    expect(byFile['4-held.json']).toMatchObject({ status: 'held', detail: 'held: waiting on the design review' });
    expect(byFile['5-broken.json']).toMatchObject({ status: 'malformed', detail: expect.stringMatching(/^not valid JSON/) });
    expect(byFile['6-nosource.json']).toMatchObject({ status: 'malformed', detail: expect.stringMatching(/^source: .*a record needs id, title, type and source/) });

    expect(readFileSync(join(ws, 'good.txt'), 'utf8')).toBe('good\n');
    const good = JSON.parse(readFileSync(join(dir, '1-good.json'), 'utf8'));
    const also = JSON.parse(readFileSync(join(dir, '2-also.json'), 'utf8'));
    // one job for the queue: one batch of asks when any are needed
    expect(good.job).toBe(also.job);
    expect(good).toMatchObject({ id: 'Good One', status: 'done', attempts: [{ job: good.job, worker: 'good-one', runner: 'shell', status: 'done', outcome: 'success' }] });
    expect(JSON.parse(readFileSync(join(dir, '3-ungrounded.json'), 'utf8'))).toMatchObject({ status: 'returned', gaps: [expect.stringMatching(/^no receipts/), expect.stringMatching(/^no done_means/)] });
    expect(readFileSync(join(dir, '5-broken.json'), 'utf8')).toBe(broken);

    // a second run leaves what is finished alone
    const again = JSON.parse(gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws]).stdout) as { records: { file: string; status: string }[] };
    expect(again.records.find((r) => r.file === '1-good.json')?.status).toBe('skipped');
  });

  it('a record its cost ladder could not carry comes back returned, the autopsy in its gaps and every rung in its attempts', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    const rung = (id: string, cost: string) => ({ id, runner: 'shell', provider: 'local', billing: 'free', cost, tasks: ['fix'] });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ roster: { entries: [rung('cheap', 'free'), rung('dear', 'mid')] } }));
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const record = { id: 'stubborn', title: 'the answer', instruction: 'echo 41 > answer.txt', files: ['answer.txt'], gates: ['grep -qx 42 answer.txt'], ...grounded, type: 'fix' };
    writeFileSync(join(dir, 'stubborn.json'), JSON.stringify(record));
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(ran.code, ran.stderr).toBe(0);
    const back = JSON.parse(readFileSync(join(dir, 'stubborn.json'), 'utf8'));
    expect(back).toMatchObject({
      status: 'returned',
      gaps: [expect.stringMatching(/two rungs failed: returned to its spawner with the autopsy$/), expect.stringMatching(/^cheap \(shell\): grep -qx 42 answer\.txt fail: exit 1/), expect.stringMatching(/^dear \(shell\): grep -qx 42 answer\.txt fail: exit 1/)],
      attempts: [expect.objectContaining({ worker: 'stubborn' }), expect.objectContaining({ worker: 'stubborn+dear', status: 'done' })],
    });
  });
  it("each record's status is its own task's: one that passed its gates stays done when a sibling's climb is denied", () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    const rung = (id: string, cost: string, billing: string) => ({ id, runner: 'shell', provider: 'local', billing, cost, tasks: ['fix'] });
    // the second rung bills per call: its climb asks, and an ask unanswered in a second is a no
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ approval: { timeout_s: 1 }, roster: { entries: [rung('cheap', 'free', 'free'), rung('dear', 'mid', 'api')] } }));
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const record = (id: string, answer: string) => ({ id, title: `${id}'s answer`, instruction: `echo ${answer} > ${id}.txt`, files: [`${id}.txt`], gates: [`grep -qx 42 ${id}.txt`], ...grounded, type: 'fix' });
    writeFileSync(join(dir, '1-right.json'), JSON.stringify(record('right', '42')));
    writeFileSync(join(dir, '2-wrong.json'), JSON.stringify(record('wrong', '41')));
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(ran.code, ran.stderr).toBe(0);
    const right = JSON.parse(readFileSync(join(dir, '1-right.json'), 'utf8'));
    const wrong = JSON.parse(readFileSync(join(dir, '2-wrong.json'), 'utf8'));
    expect(right.job).toBe(wrong.job);
    // the job is partial (a task came back), but that is the sibling's end, not this record's
    expect(right).toMatchObject({ status: 'done', attempts: [{ worker: 'right', status: 'done' }] });
    expect(wrong).toMatchObject({ status: 'returned', gaps: [expect.stringMatching(/the climb to dear was not approved: returned to its spawner$/), expect.stringMatching(/^cheap \(shell\): grep -qx 42 wrong\.txt fail/)] });
    const lines = (JSON.parse(ran.stdout) as { records: { file: string; status: string }[] }).records;
    expect(lines.map((l) => [l.file, l.status])).toEqual([['1-right.json', 'done'], ['2-wrong.json', 'returned']]);
  });

  it('a spent budget holds the whole batch: nothing dispatched, every record left as it was, the reason reported (issue 15)', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ default_runner: 'shell', budgets: [{ provider: 'shell', window: 'day', unit: 'seconds', limit: 0.05 }] }));
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const record = JSON.stringify({ id: 'first', title: 'spend the day', instruction: 'sleep 0.2; echo a > a.txt', files: ['a.txt'], ...grounded });
    writeFileSync(join(dir, '1-first.json'), record);
    expect(gaffer(data, ['queue', 'run', dir, '--workspace', ws, '--wait']).code).toBe(0);
    const second = JSON.stringify({ id: 'second', title: 'one more', instruction: 'echo b > b.txt', files: ['b.txt'], ...grounded });
    writeFileSync(join(dir, '2-second.json'), second);
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws]);
    const rows = (JSON.parse(ran.stdout) as { records: { file: string; status: string; detail: string }[] }).records;
    expect(rows.find((r) => r.file === '2-second.json')).toMatchObject({ status: 'paused', detail: expect.stringMatching(/shell day budget \(0\.05 seconds\) is spent/) });
    expect(readFileSync(join(dir, '2-second.json'), 'utf8')).toBe(second);
  });
});

