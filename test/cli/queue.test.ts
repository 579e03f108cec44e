import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { gaffer as gafferAsync, startServe } from '../reliability/helpers.js';

// spec 05 "The task queue folder", through bin/gaffer: good, ungrounded, held and malformed records.

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gaffer');

function gaffer(dataDir: string, args: string[]) {
  const r = spawnSync(BIN, ['--data-dir', dataDir, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, GAFFER_URL: '', GAFFER_SANDBOX: 'off' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const grounded = {
  type: 'sweep',
  source: 'issue tracker',
  receipts: ['README.md:1 says todo'],
  done_means: ['the file exists'],
};

/** A record whose gate passes only when its instruction writes 42. */
const answering = (id: string, answer: string) => ({
  id,
  title: `${id}'s answer`,
  instruction: `echo ${answer} > ${id}.txt`,
  files: [`${id}.txt`],
  gates: [`grep -qx 42 ${id}.txt`],
  ...grounded,
  type: 'fix',
});

/** A data dir with `config`, a git workspace and an empty queue folder. */
function setUp(config: unknown) {
  const data = join(tempDir(), 'data');
  mkdirSync(data, { recursive: true });
  writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify(config));
  const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
  const dir = join(tempDir(), 'dispatch');
  mkdirSync(dir);
  return {
    data,
    ws,
    dir,
    put: (file: string, value: unknown) => writeFileSync(join(dir, file), JSON.stringify(value)),
    read: (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')),
  };
}

type Report = { records: { file: string; id: string | null; status: string; detail: string }[] };

describe('gaffer queue', () => {
  it('dispatches the grounded records as one job, writes back every status atomically, reports and skips the malformed, and skips what it finished', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'gaffer.config.json'), JSON.stringify({ default_runner: 'shell' }));
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const put = (file: string, value: unknown) =>
      writeFileSync(join(dir, file), typeof value === 'string' ? value : JSON.stringify(value));
    put('1-good.json', {
      id: 'Good One',
      title: 'write good.txt',
      instruction: 'echo good > good.txt',
      files: ['good.txt'],
      ...grounded,
    });
    put('2-also.json', {
      id: 'also',
      title: 'write also.txt',
      instruction: 'echo also > also.txt',
      files: ['also.txt'],
      ...grounded,
    });
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
    const byFile = Object.fromEntries(
      (JSON.parse(ran.stdout) as { records: { file: string; status: string; detail: string }[] }).records.map((r) => [
        r.file,
        r,
      ]),
    );
    expect(byFile['1-good.json']?.status).toBe('done');
    expect(byFile['2-also.json']?.status).toBe('done');
    expect(byFile['3-ungrounded.json']).toMatchObject({
      status: 'returned',
      detail: expect.stringMatching(/^no receipts \(evidence the task is real.*; no done_means/),
    });
    expect(byFile['4-held.json']).toMatchObject({ status: 'held', detail: 'held: waiting on the design review' });
    expect(byFile['5-broken.json']).toMatchObject({
      status: 'malformed',
      detail: expect.stringMatching(/^not valid JSON/),
    });
    expect(byFile['6-nosource.json']).toMatchObject({
      status: 'malformed',
      detail: expect.stringMatching(/^source: .*a record needs id, title, type and source/),
    });

    expect(readFileSync(join(ws, 'good.txt'), 'utf8')).toBe('good\n');
    const good = JSON.parse(readFileSync(join(dir, '1-good.json'), 'utf8'));
    const also = JSON.parse(readFileSync(join(dir, '2-also.json'), 'utf8'));
    // one job for the queue: one batch of asks when any are needed
    expect(good.job).toBe(also.job);
    expect(good).toMatchObject({
      id: 'Good One',
      status: 'done',
      attempts: [{ job: good.job, worker: 'good-one', runner: 'shell', status: 'done', outcome: 'success' }],
    });
    expect(JSON.parse(readFileSync(join(dir, '3-ungrounded.json'), 'utf8'))).toMatchObject({
      status: 'returned',
      gaps: [expect.stringMatching(/^no receipts/), expect.stringMatching(/^no done_means/)],
    });
    expect(readFileSync(join(dir, '5-broken.json'), 'utf8')).toBe(broken);

    // a second run leaves what is finished alone
    const again = JSON.parse(gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws]).stdout) as {
      records: { file: string; status: string }[];
    };
    expect(again.records.find((r) => r.file === '1-good.json')?.status).toBe('skipped');
  });

  it('a record its cost ladder could not carry comes back returned, the autopsy in its gaps and every rung in its attempts', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    const rung = (id: string, cost: string) => ({
      id,
      runner: 'shell',
      provider: 'local',
      billing: 'free',
      cost,
      tasks: ['fix'],
    });
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({ roster: { entries: [rung('cheap', 'free'), rung('dear', 'mid')] } }),
    );
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const record = {
      id: 'stubborn',
      title: 'the answer',
      instruction: 'echo 41 > answer.txt',
      files: ['answer.txt'],
      gates: ['grep -qx 42 answer.txt'],
      ...grounded,
      type: 'fix',
    };
    writeFileSync(join(dir, 'stubborn.json'), JSON.stringify(record));
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(ran.code, ran.stderr).toBe(1);
    const back = JSON.parse(readFileSync(join(dir, 'stubborn.json'), 'utf8'));
    expect(back).toMatchObject({
      status: 'returned',
      gaps: [
        expect.stringMatching(/two rungs failed: returned to its spawner with the autopsy$/),
        expect.stringMatching(/^cheap \(shell\): grep -qx 42 answer\.txt fail: exit 1/),
        expect.stringMatching(/^dear \(shell\): grep -qx 42 answer\.txt fail: exit 1/),
      ],
      attempts: [
        expect.objectContaining({ worker: 'stubborn' }),
        expect.objectContaining({ worker: 'stubborn+dear', status: 'done' }),
      ],
    });
  });
  it("each record's status is its own task's: one that passed its gates stays done when a sibling's climb is denied", () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    const rung = (id: string, cost: string, billing: string) => ({
      id,
      runner: 'shell',
      provider: 'local',
      billing,
      cost,
      tasks: ['fix'],
    });
    // the second rung bills per call: its climb asks, and an ask unanswered in a second is a no
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({
        approval: { timeout_s: 1 },
        roster: { entries: [rung('cheap', 'free', 'free'), rung('dear', 'mid', 'api')] },
      }),
    );
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const record = (id: string, answer: string) => ({
      id,
      title: `${id}'s answer`,
      instruction: `echo ${answer} > ${id}.txt`,
      files: [`${id}.txt`],
      gates: [`grep -qx 42 ${id}.txt`],
      ...grounded,
      type: 'fix',
    });
    writeFileSync(join(dir, '1-right.json'), JSON.stringify(record('right', '42')));
    writeFileSync(join(dir, '2-wrong.json'), JSON.stringify(record('wrong', '41')));
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    // the returned sibling ran and did not end done: the run says so, and only of it
    expect(ran.code, ran.stderr).toBe(1);
    expect(ran.stderr).toMatch(/1 of 2 record\(s\) that ran did not end done — 2-wrong\.json \(wrong\): returned$/m);
    const right = JSON.parse(readFileSync(join(dir, '1-right.json'), 'utf8'));
    const wrong = JSON.parse(readFileSync(join(dir, '2-wrong.json'), 'utf8'));
    expect(right.job).toBe(wrong.job);
    // the job is partial (a task came back), but that is the sibling's end, not this record's
    expect(right).toMatchObject({ status: 'done', attempts: [{ worker: 'right', status: 'done' }] });
    expect(wrong).toMatchObject({
      status: 'returned',
      gaps: [
        expect.stringMatching(/the climb to dear was not approved: returned to its spawner$/),
        expect.stringMatching(/^cheap \(shell\): grep -qx 42 wrong\.txt fail/),
      ],
    });
    const lines = (JSON.parse(ran.stdout) as { records: { file: string; status: string }[] }).records;
    expect(lines.map((l) => [l.file, l.status])).toEqual([
      ['1-right.json', 'done'],
      ['2-wrong.json', 'returned'],
    ]);
  });

  it('--wait exits 1 when a record it ran did not end done, naming each such record, and 0 when every one did', () => {
    const { data, ws, dir, put, read } = setUp({ default_runner: 'shell' });
    put('1-right.json', answering('right', '42'));
    put('2-wrong.json', answering('wrong', '41'));
    put('3-crash.json', { ...answering('crash', '42'), instruction: 'exit 3' });
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(ran.code, ran.stderr).toBe(1);
    expect((JSON.parse(ran.stdout) as Report).records.map((r) => [r.file, r.status])).toEqual([
      ['1-right.json', 'done'],
      ['2-wrong.json', 'failed'],
      ['3-crash.json', 'error'],
    ]);
    expect(ran.stderr).toMatch(
      /2 of 3 record\(s\) that ran did not end done — 2-wrong\.json \(wrong\): failed, 3-crash\.json \(crash\): error$/m,
    );
    expect(ran.stderr).not.toContain('1-right.json');
    expect([read('2-wrong.json').status, read('3-crash.json').status]).toEqual(['failed', 'error']);

    put('4-fine.json', answering('fine', '42'));
    const fine = gaffer(data, ['queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(fine.code, fine.stderr).toBe(0);
    expect(fine.stdout).toMatch(/^4-fine\.json {2}fine {2}done {2}job /m);
  });

  it("with no server a run without --wait runs its job to the end in this process and writes each record's end back", () => {
    const { data, ws, dir, put, read } = setUp({ default_runner: 'shell' });
    put('1-slow.json', { ...answering('slow', '42'), instruction: 'sleep 1; echo 42 > slow.txt' });
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws]);
    expect(ran.code, ran.stderr).toBe(0);
    const record = read('1-slow.json');
    // closing the process that ran the job would have cancelled it, leaving the record `dispatched`
    expect(record).toMatchObject({
      status: 'done',
      task: 'slow',
      attempts: [{ job: record.job, worker: 'slow', status: 'done', outcome: 'success' }],
    });
    expect(readFileSync(join(ws, 'slow.txt'), 'utf8')).toBe('42\n');
  });

  it('a later run collects the records whose job has ended since they were dispatched and writes back what --wait would have', async () => {
    const { data, ws, dir, put, read } = setUp({ default_runner: 'shell' });
    const env = { ...process.env, GAFFER_URL: '', GAFFER_SANDBOX: 'off' };
    await startServe(data, { env });
    put('1-right.json', answering('right', '42'));
    put('2-wrong.json', answering('wrong', '41'));
    const sent = await gafferAsync(data, ['--json', 'queue', 'run', dir, '--workspace', ws], env);
    expect(sent.code, sent.stderr).toBe(0);
    expect((JSON.parse(sent.stdout) as Report).records.map((r) => r.status)).toEqual(['dispatched', 'dispatched']);
    const job = read('1-right.json').job as string;
    expect(read('2-wrong.json')).toMatchObject({ status: 'dispatched', job, task: 'wrong' });
    expect((await gafferAsync(data, ['wait', job, '--timeout-s', '60'], env)).code).toBe(0);

    const listed = await gafferAsync(data, ['queue', 'ls', dir, '--workspace', ws], env);
    expect(listed.stdout).toMatch(
      new RegExp(
        `^1-right\\.json {2}right {2}dispatched {2}job ${job} ended partial: the next \`gaffer queue run\` writes its end back$`,
        'm',
      ),
    );
    expect(read('1-right.json').status).toBe('dispatched');

    const collected = await gafferAsync(data, ['--json', 'queue', 'run', dir, '--workspace', ws], env);
    expect(collected.code, collected.stderr).toBe(1);
    expect((JSON.parse(collected.stdout) as Report).records).toEqual([
      {
        file: '1-right.json',
        id: 'right',
        status: 'done',
        detail: expect.stringMatching(new RegExp(`^collected: job ${job} ended `)),
      },
      {
        file: '2-wrong.json',
        id: 'wrong',
        status: 'failed',
        detail: expect.stringMatching(new RegExp(`^collected: job ${job} ended `)),
      },
    ]);
    expect(collected.stderr).toMatch(
      /1 of 2 record\(s\) that ran did not end done — 2-wrong\.json \(wrong\): failed$/m,
    );
    expect(read('1-right.json')).toMatchObject({
      status: 'done',
      job,
      task: 'right',
      attempts: [{ job, worker: 'right', runner: 'shell', status: 'done', outcome: 'success' }],
    });
    expect(read('2-wrong.json')).toMatchObject({
      status: 'failed',
      job,
      attempts: [{ job, worker: 'wrong', status: 'done' }],
    });

    // collected once: a third run leaves the finished records alone
    const again = await gafferAsync(data, ['--json', 'queue', 'run', dir, '--workspace', ws], env);
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as Report).records.map((r) => r.status)).toEqual(['skipped', 'skipped']);
  });

  it('a returned record is not sent again unchanged: the run names it, its status and the fix, and sends it once it is edited', () => {
    const rung = (id: string, cost: string) => ({
      id,
      runner: 'shell',
      provider: 'local',
      billing: 'free',
      cost,
      tasks: ['fix'],
    });
    const { data, ws, dir, put, read } = setUp({ roster: { entries: [rung('cheap', 'free'), rung('dear', 'mid')] } });
    put('stubborn.json', answering('stubborn', '41'));
    expect(gaffer(data, ['queue', 'run', dir, '--workspace', ws, '--wait']).code).toBe(1);
    const returned = readFileSync(join(dir, 'stubborn.json'), 'utf8');
    expect(JSON.parse(returned)).toMatchObject({
      status: 'returned',
      gaps: [expect.stringMatching(/returned to its spawner/), expect.any(String), expect.any(String)],
    });

    const refusal =
      /^not sent again: "status" is "returned" and the record is unchanged since gaffer returned it \(its "gaps" say why\) — edit it \(.*\) to send it again, or delete its "status" to send it as it is$/;
    const again = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as Report).records).toEqual([
      { file: 'stubborn.json', id: 'stubborn', status: 'returned', detail: expect.stringMatching(refusal) },
    ]);
    expect(readFileSync(join(dir, 'stubborn.json'), 'utf8')).toBe(returned);
    const listed = JSON.parse(gaffer(data, ['--json', 'queue', 'ls', dir, '--workspace', ws]).stdout) as Report;
    expect(listed.records[0]).toMatchObject({ status: 'returned', detail: expect.stringMatching(refusal) });

    // the spawner's edit is what sends it again (gaffer's own fields, rewritten, are not an edit)
    const { instruction: _old, ...rest } = JSON.parse(returned) as Record<string, unknown>;
    put('stubborn.json', { ...rest, instruction: 'echo 42 > stubborn.txt' });
    const edited = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws, '--wait']);
    expect(edited.code, edited.stderr).toBe(0);
    const done = read('stubborn.json');
    expect(done).toMatchObject({ status: 'done', task: 'stubborn' });
    expect(done.job).not.toBe(JSON.parse(returned).job);
    expect(done).not.toHaveProperty('gaps');
    expect(done).not.toHaveProperty('returned_digest');
  });

  it('a spent budget holds the whole batch: nothing dispatched, every record left as it was, the reason reported (issue 15)', () => {
    const data = join(tempDir(), 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(
      join(data, 'gaffer.config.json'),
      JSON.stringify({
        default_runner: 'shell',
        budgets: [{ provider: 'shell', window: 'day', unit: 'seconds', limit: 0.05 }],
      }),
    );
    const ws = makeWorkspace({ 'README.md': 'todo\n' }, { git: true });
    const dir = join(tempDir(), 'dispatch');
    mkdirSync(dir);
    const record = JSON.stringify({
      id: 'first',
      title: 'spend the day',
      instruction: 'sleep 0.2; echo a > a.txt',
      files: ['a.txt'],
      ...grounded,
    });
    writeFileSync(join(dir, '1-first.json'), record);
    expect(gaffer(data, ['queue', 'run', dir, '--workspace', ws, '--wait']).code).toBe(0);
    const second = JSON.stringify({
      id: 'second',
      title: 'one more',
      instruction: 'echo b > b.txt',
      files: ['b.txt'],
      ...grounded,
    });
    writeFileSync(join(dir, '2-second.json'), second);
    const ran = gaffer(data, ['--json', 'queue', 'run', dir, '--workspace', ws]);
    const rows = (JSON.parse(ran.stdout) as { records: { file: string; status: string; detail: string }[] }).records;
    expect(rows.find((r) => r.file === '2-second.json')).toMatchObject({
      status: 'paused',
      detail: expect.stringMatching(/shell day budget \(0\.05 seconds\) is spent/),
    });
    expect(readFileSync(join(dir, '2-second.json'), 'utf8')).toBe(second);
  });
});
