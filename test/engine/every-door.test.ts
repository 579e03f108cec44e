import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRoster } from '../../src/domain/roster.js';
import { Engine } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

// "Money is never spent without a yes", whichever door an attempt comes through: a follow-up of a
// task whose last attempt ran on an api rung, and a steer that becomes such a follow-up, are routed
// by the roster to that rung and asked first (they ran it with no ask, spend null: issue 34).

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

// the api rung names no model: matching the request's runner and model finds no entry for it
const ROSTER = {
  entries: [
    { id: 'cheap', runner: 'shell', provider: 'local', billing: 'free', cost: 'free', tasks: ['fix'] },
    { id: 'paid', runner: 'shell', provider: 'cloud', billing: 'api', cost: 'high', tasks: ['fix'] },
  ],
};

/** Fails its gate on its first run (writes 41), passes on every later one (writes 42). */
const TASK = {
  name: 'ans',
  type: 'fix',
  instruction: 'if [ -f .tried ]; then echo 42 > answer.txt; else touch .tried; echo 41 > answer.txt; fi',
  files: ['answer.txt', '.tried'],
  gates: ['grep -qx 42 answer.txt'],
};

async function climbedToPaid(): Promise<{ engine: Engine; ws: string; id: string }> {
  const engine = await Engine.open({
    dataDir: join(tempDir('gaffer-data-'), 'data'),
    runners: createRunners({ sandbox: createSandbox('off') }),
    roster: parseRoster(ROSTER, 'config test'),
    defaultRunner: null,
  });
  engines.push(engine);
  const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
  const id = engine.submit({ workspace: ws, verify: 'exit 0', fix_rounds: 0, tasks: [TASK] }).job.id;
  await engine.waitFor(id, 'phase:awaiting approval of ans+paid', 30);
  engine.approve(id, { 'ans+paid': true });
  await engine.settled(id);
  const job = engine.get(id, { full: true });
  expect(job.status).toBe('done');
  expect(job.result?.workers.at(-1)).toMatchObject({ entry: 'paid', provider: 'cloud' });
  return { engine, ws, id };
}

describe('every door asks before an api rung runs (issue 34)', () => {
  it("a follow-up of a task whose last attempt ran on an api rung runs there, asked first; its spend is counted as that entry's", async () => {
    const { engine, ws, id } = await climbedToPaid();
    const { job } = await engine.followUp(id, 'ans', { note: 'write it again' });
    await engine.waitFor(job.id, 'phase:awaiting approval', 30);
    const waiting = engine.get(job.id);
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.asks?.[0]).toMatchObject({
      task: 'ans',
      why: 'roster entry "paid" is billed per call (api): money is never spent without a yes',
    });
    engine.approve(job.id, true);
    await engine.settled(job.id);
    // it ran there (the shell runs a follow-up's prose and fails: what ran and who pays is the point)
    const ran = engine.get(job.id, { full: true }).result?.workers[0];
    expect(ran).toMatchObject({ entry: 'paid', provider: 'cloud' });
    expect(ran?.spend).toBe('cost unknown (api): the runner reported no cost and no tokens');
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42\n');
  });

  it('a steer sent after the job ended becomes that follow-up: asked first as well', async () => {
    const { engine, id } = await climbedToPaid();
    const answer = await engine.steer(id, 'ans', { message: 'and say so' });
    expect(answer.delivery).toBe('queued_as_follow_up');
    const follow = answer.follow_up_job as string;
    await engine.waitFor(follow, 'phase:awaiting approval', 30);
    expect(engine.get(follow).asks?.[0]).toMatchObject({
      task: 'ans',
      why: expect.stringContaining('roster entry "paid" is billed per call'),
    });
    engine.approve(follow, false);
    await engine.settled(follow);
    expect(engine.get(follow)).toMatchObject({ status: 'cancelled', verdict: 'not approved' });
  });
});
