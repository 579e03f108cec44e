import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseRoster } from '../../src/domain/roster.js';
import { windowOf } from '../../src/domain/budget.js';
import { epochS } from '../../src/engine/clock.js';
import { renderCompact } from '../../src/interfaces/cli/render.js';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { Store } from '../../src/store/store.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelRequest, type ModelServer } from '../support/model-server/index.js';

// spec 05 "Gates" and "Escalation", through real jobs: builtin agents on three rungs of a roster
// against the scripted model server, each rung's answer a real file write; the task's gate is a real
// command run in the workspace. A rung that fails its gate climbs one rung up with the autopsy in the
// next worker's prompt; a second failed rung returns the task to its spawner; every rung's outcome is
// logged against the model that ran it.

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(roster: unknown, opts: Partial<EngineOptions> = {}): Promise<Engine> {
  const engine = await Engine.open({
    dataDir: opts.dataDir ?? join(tempDir('gaffer-data-'), 'data'),
    roster: parseRoster(roster, 'config test'),
    defaultRunner: null,
    runners: createRunners({
      sandbox: 'off',
      builtin: {
        endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'default-model' },
      },
    }),
    ...opts,
  });
  engines.push(engine);
  return engine;
}

const rung = (id: string, cost: string, billing = 'free') => ({
  id,
  runner: 'builtin',
  model: `${id}-1`,
  provider: 'local',
  billing,
  cost,
  tasks: ['fix'],
});
const THREE = {
  entries: [rung('small', 'free'), rung('mid', 'mid', 'subscription'), rung('big', 'high', 'subscription')],
};

/** The turns of one rung's model: it writes `answer` to answer.txt, then says so. */
function writes(model: string, answer: string) {
  return [
    {
      when: (r: ModelRequest) => r.model === model && !r.isToolResult,
      toolCalls: [{ name: 'write_file', args: { path: 'answer.txt', content: `${answer}\n` } }],
    },
    {
      when: (r: ModelRequest) => r.model === model && r.isToolResult,
      text: `Wrote ${answer}.\nFiles changed:\nanswer.txt`,
    },
  ];
}

const TASK = {
  name: 'ans',
  type: 'fix',
  instruction: 'write the answer, 42, to answer.txt',
  files: ['answer.txt'],
  gates: ['grep -qx 42 answer.txt'],
};
const submit = (engine: Engine, ws: string, task: object = TASK) =>
  engine.submit({ workspace: ws, verify: 'exit 0', fix_rounds: 0, tasks: [task] }).job.id;

describe('gates and escalation (spec 05)', () => {
  it('a rung that fails its gate climbs one rung with the autopsy; a second failure returns the task; acceptance counts each rung against its model', async () => {
    const engine = await open(THREE);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const before = server.requests.length;
    server.script([...writes('small-1', '41'), ...writes('mid-1', '40')]);
    const first = submit(engine, ws);
    await engine.settled(first);
    const job = engine.get(first, { full: true });
    expect(job.status).toBe('partial');
    // the first rung's model, then the second's; the third rung is never reached (two rungs failed)
    expect(server.requests.slice(before).map((r) => r.model)).toEqual(['small-1', 'small-1', 'mid-1', 'mid-1']);
    const climbed = JSON.stringify(server.requests[before + 2]?.body);
    expect(climbed).toContain('## Autopsy of earlier attempts');
    expect(climbed).toContain(
      'attempt 1: small (small-1 on builtin) ended done; gates failed: grep -qx 42 answer.txt (exit 1)',
    );
    expect(climbed).toContain('You are mid-1 on builtin (roster entry mid)');
    expect(job.result?.escalation).toEqual([
      expect.objectContaining({
        task: 'ans',
        from: 'small',
        to: 'mid',
        why: 'gates failed: grep -qx 42 answer.txt (exit 1)',
      }),
      expect.objectContaining({
        task: 'ans',
        from: 'mid',
        to: null,
        returned: true,
        why: 'gates failed: grep -qx 42 answer.txt (exit 1); two rungs failed: returned to its spawner with the autopsy',
      }),
    ]);
    expect(job.result?.escalation?.[1]?.autopsy?.map((a) => [a.entry, a.model, a.verdict])).toEqual([
      ['small', 'small-1', 'fail'],
      ['mid', 'mid-1', 'fail'],
    ]);
    expect(job.result?.gates?.map((g) => [g.worker, g.verdict, g.results[0]?.result])).toEqual([
      ['ans', 'fail', 'fail'],
      ['ans+mid', 'fail', 'fail'],
    ]);
    expect(job.result?.workers.map((w) => [w.name, w.entry, w.model])).toEqual([
      ['ans', 'small', 'small-1'],
      ['ans+mid', 'mid', 'mid-1'],
    ]);
    expect(job.result?.proof?.uncertainty.map((u) => u.code)).toContain('gates_failed');
    expect(job.verdict).toContain('ans escalated small → mid; ans returned to its spawner');
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('40\n');

    // the same task again: the second rung gets it right
    server.script([...writes('small-1', '41'), ...writes('mid-1', '42')]);
    const second = submit(engine, ws);
    await engine.settled(second);
    expect(engine.get(second).status).toBe('done');
    expect(engine.get(second, { full: true }).result?.proof?.verdict).toBe('proved');
    const { acceptance, outcomes_total } = engine.stats();
    expect(outcomes_total).toBe(4);
    expect(acceptance['fix/small-1']).toMatchObject({ accepted: 0, total: 2 });
    expect(acceptance['fix/mid-1']).toMatchObject({ accepted: 1, total: 2 });
    expect(acceptance['fix/big-1']).toBeUndefined();
    // the log says where each rung climbed to, and which rung the task was returned from
    const lines = readFileSync(join(engine.dataDir, 'outcomes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.job === first ? 1 : 2, l.rung, l.entry, l.status, l.escalated_to, l.returned])).toEqual([
      [1, 1, 'small', 'failed', 'mid', false],
      [1, 2, 'mid', 'failed', null, true],
      [2, 1, 'small', 'failed', 'mid', false],
      [2, 2, 'mid', 'passed', null, false],
    ]);
  });

  it('fix rounds come first, on the same rung: the verification fails, a fix round on the first rung, then the climb, then a fix round on the second rung', async () => {
    const engine = await open(THREE);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const before = server.requests.length;
    server.script([
      ...writes('small-1', '41'),
      ...writes('small-1', '40'),
      ...writes('mid-1', '39'),
      ...writes('mid-1', '42'),
    ]);
    const id = engine.submit({
      workspace: ws,
      verify: 'grep -qx 42 answer.txt',
      fix_rounds: 1,
      tasks: [{ ...TASK, gates: undefined }],
    }).job.id;
    await engine.settled(id);
    const job = engine.get(id, { full: true });
    expect(job.status).toBe('done');
    expect(server.requests.slice(before).map((r) => r.model)).toEqual([
      'small-1',
      'small-1',
      'small-1',
      'small-1',
      'mid-1',
      'mid-1',
      'mid-1',
      'mid-1',
    ]);
    // rows in the request's order: a task's attempts together, the fixers after
    expect(job.result?.workers.map((w) => [w.name, w.model])).toEqual([
      ['ans', 'small-1'],
      ['ans+mid', 'mid-1'],
      ['fixer-1', 'small-1'],
      ['fixer-2', 'mid-1'],
    ]);
    expect(job.result?.escalation?.[0]).toMatchObject({
      from: 'small',
      to: 'mid',
      why: expect.stringMatching(/^the verification failed: /),
    });
    // issue 33: the rung's verdict is its verification's, and the fixer and the next rung read the same account of what failed
    expect(job.result?.escalation?.[0]?.autopsy?.[0]).toMatchObject({
      entry: 'small',
      verdict: 'fail',
      failures: expect.stringContaining('Command: grep -qx 42 answer.txt\nResult: '),
    });
    const [fixRound, climb] = [
      server.requests[before + 2]?.lastText ?? '',
      server.requests[before + 4]?.lastText ?? '',
    ];
    expect(fixRound).toContain('Command: grep -qx 42 answer.txt\nResult: ');
    expect(climb).toContain('    - what failed:\n      Command: grep -qx 42 answer.txt\n      Result: ');
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42\n');
  });

  it("each rung runs against its own entry's endpoint: the cheap rung's model calls go to the local server, the climbed rung's to the gateway, with the gateway's key", async () => {
    const gateway = await startModelServer();
    try {
      const local = {
        api: 'openai-compatible' as const,
        url: `${server.url}/v1`,
        key: 'sk-test',
        model: 'default-model',
      };
      const remote = {
        api: 'openai-compatible' as const,
        url: `${gateway.url}/v1`,
        key: 'sk-gateway',
        model: 'gateway-default',
      };
      const engine = await open(
        {
          entries: [
            { ...rung('small', 'free'), endpoint: 'local' },
            { ...rung('mid', 'mid', 'subscription'), endpoint: 'gateway' },
          ],
        },
        {
          runners: createRunners({
            sandbox: 'off',
            builtin: { endpoint: local, endpoints: { local, gateway: remote } },
          }),
        },
      );
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const [localBefore, gatewayBefore] = [server.requests.length, gateway.requests.length];
      server.script(writes('small-1', '41'));
      gateway.script(writes('mid-1', '42'));
      const id = submit(engine, ws);
      await engine.settled(id);
      expect(engine.get(id).status).toBe('done');
      expect(engine.get(id, { full: true }).result?.escalation?.[0]).toMatchObject({ from: 'small', to: 'mid' });
      expect(server.requests.slice(localBefore).map((r) => r.model)).toEqual(['small-1', 'small-1']);
      expect(gateway.requests.slice(gatewayBefore).map((r) => r.model)).toEqual(['mid-1', 'mid-1']);
      expect(gateway.requests.slice(gatewayBefore).map((r) => r.headers.authorization)).toEqual([
        'Bearer sk-gateway',
        'Bearer sk-gateway',
      ]);
      expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42\n');

      // a roster (file) naming an endpoint the builtin agent does not have is refused before anything runs, naming the ones it has
      const lost = await open(
        { entries: [rung('small', 'free'), { ...rung('mid', 'mid', 'subscription'), endpoint: 'nowhere' }] },
        {
          runners: createRunners({
            sandbox: 'off',
            builtin: { endpoint: local, endpoints: { local, gateway: remote } },
          }),
        },
      );
      expect(() => submit(lost, ws)).toThrow(
        /roster entry mid\.endpoint: "nowhere" is not a model endpoint the builtin agent can use \(models: local, gateway\)/,
      );
    } finally {
      await gateway.close();
    }
  });

  it('in a worktree job the task climbs in its own worktree', async () => {
    const engine = await open(THREE);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([...writes('small-1', '41'), ...writes('mid-1', '42')]);
    const id = engine.submit({ workspace: ws, isolation: 'worktree', verify: 'exit 0', fix_rounds: 0, tasks: [TASK] })
      .job.id;
    await engine.settled(id);
    const job = engine.get(id, { full: true });
    expect(job.status).toBe('done');
    expect(job.result?.escalation?.[0]).toMatchObject({ from: 'small', to: 'mid' });
    expect(job.result?.worktrees?.tasks[0]).toMatchObject({ task: 'ans', files: ['answer.txt'] });
    // the workspace itself is untouched (merge "none"): the branch holds the work
    expect(existsSync(join(ws, 'answer.txt'))).toBe(false);
  });

  it('a worker that abstains upward climbs without counting as a failure', async () => {
    const engine = await open(THREE);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([
      {
        when: (r: ModelRequest) => r.model === 'small-1',
        text: 'ESCALATE: the answer needs a proof I cannot write; this is beyond my brief.',
      },
      ...writes('mid-1', '42'),
    ]);
    const id = submit(engine, ws);
    await engine.settled(id);
    const job = engine.get(id, { full: true });
    expect(job.status).toBe('done');
    expect(job.result?.escalation?.[0]).toMatchObject({
      from: 'small',
      to: 'mid',
      why: expect.stringMatching(/^the worker abstained upward: ESCALATE: /),
    });
    const stats = engine.stats();
    expect(stats.excluded.abstained).toBe(1);
    expect(stats.acceptance['fix/small-1']).toBeUndefined();
    expect(stats.acceptance['fix/mid-1']).toMatchObject({ accepted: 1, total: 1 });
  });

  it('a rung billed per call asks first: the job awaits approval again without its workspace; yes climbs, no returns the task', async () => {
    const roster = { entries: [rung('small', 'free'), rung('paid', 'mid', 'api')] };
    const engine = await open(roster);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([...writes('small-1', '41'), ...writes('paid-1', '42')]);
    const id = submit(engine, ws);
    await engine.waitFor(id, 'phase:awaiting approval of ans+paid', 30);
    expect(engine.get(id).status).toBe('awaiting_approval');
    expect(engine.get(id).asks?.[0]).toMatchObject({
      task: 'ans+paid',
      route: 'paid-1 (local/builtin, roster entry paid)',
      why: expect.stringContaining('billed api'),
    });
    // its workspace is free meanwhile: another job on it runs to the end
    const other = engine.submit({
      workspace: ws,
      runner: 'shell',
      verify: 'exit 0',
      tasks: [{ instruction: 'echo hi > other.txt', files: ['other.txt'] }],
    }).job.id;
    await engine.settled(other);
    expect(engine.get(other).status).toBe('done');
    engine.approve(id, { 'ans+paid': true });
    await engine.settled(id);
    expect(engine.get(id).status).toBe('done');
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42\n');

    server.script([...writes('small-1', '41')]);
    const denied = submit(engine, ws);
    await engine.waitFor(denied, 'phase:awaiting approval of ans+paid', 30);
    engine.approve(denied, false);
    await engine.settled(denied);
    const job = engine.get(denied, { full: true });
    expect(job.status).toBe('partial');
    expect(job.result?.escalation?.[0]).toMatchObject({ from: 'small', to: 'paid', returned: true, denied: true });
    // the denied rung never ran: paid-1 answered only the approved job's two requests
    expect(server.requests.filter((r) => r.model === 'paid-1')).toHaveLength(2);
  });

  it('a climb is asked by the rule a start is: under config approval.default "required" the next rung asks too, though it is neither api nor marked approve (it climbed unasked: issue 34)', async () => {
    const engine = await open(THREE, { approval: { default: 'required' } });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([...writes('small-1', '41'), ...writes('mid-1', '42')]);
    const id = submit(engine, ws);
    await engine.waitFor(id, 'phase:awaiting approval of ans', 30);
    engine.approve(id, true);
    await engine.waitFor(id, 'phase:awaiting approval of ans+mid', 30);
    expect(engine.get(id).asks?.find((a) => a.task === 'ans+mid')).toMatchObject({
      answer: null,
      why: expect.stringContaining('billed subscription'),
    });
    engine.approve(id, { 'ans+mid': true });
    await engine.settled(id);
    expect(engine.get(id).status).toBe('done');
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42\n');
  });

  it('diff-scope, claims and done_means gates; a not-ok worker fails its gates outright; no judge: an undecided gate climbs to a person', async () => {
    const engine = await open(THREE);
    const ws = makeWorkspace(
      { 'README.md': 'x\n', 'src/a.txt': 'a\n', 'check.sh': 'exit 1\n', Makefile: 'check:\n\tfalse\n' },
      { git: true },
    );
    const shell = (name: string, command: string, gates: unknown[], extra: object = {}) => ({
      name,
      type: 'fix',
      runner: 'shell',
      instruction: name,
      command,
      gates,
      ...extra,
    });
    const run = async (task: object) => {
      const id = engine.submit({ workspace: ws, verify: 'exit 0', fix_rounds: 0, tasks: [task] }).job.id;
      await engine.settled(id);
      return engine.get(id, { full: true });
    };

    const scoped = await run(
      shell('scoped', 'echo b > src/b.txt && echo c > c.txt', [{ kind: 'diff-scope', paths: ['src'] }]),
    );
    expect(scoped.status).toBe('partial');
    expect(scoped.result?.gates?.[0]?.results[0]).toMatchObject({
      kind: 'diff-scope',
      result: 'fail',
      detail: 'changed outside src: c.txt',
    });

    const confirmed = await run(
      shell('confirmed', 'echo 42 > answer.txt', ['grep -qx 42 answer.txt', { kind: 'done_means' }], {
        grounded: true,
        receipts: ['answer.txt is missing'],
        done_means: ['answer.txt holds 42: grep -qx 42 answer.txt'],
      }),
    );
    expect(confirmed.status).toBe('done');
    expect(confirmed.result?.gates?.[0]?.results.map((r) => [r.kind, r.result])).toEqual([
      ['command', 'pass'],
      ['done_means', 'pass'],
    ]);

    const unbacked = await run(
      shell('unbacked', 'echo 43 > answer.txt', [{ kind: 'done_means' }], {
        grounded: true,
        receipts: ['r'],
        done_means: ['answer.txt holds 43'],
      }),
    );
    expect(unbacked.status).toBe('partial');
    expect(unbacked.result?.gates?.[0]?.results[0]).toMatchObject({
      result: 'ambiguous',
      climb: true,
      detail: expect.stringContaining('unconfirmed: "answer.txt holds 43"'),
    });
    expect(unbacked.result?.proof?.uncertainty.map((u) => u.code)).toContain('gates_ambiguous');

    const claims = await run(shell('claims', 'echo 44 > answer.txt', [{ kind: 'claims' }]));
    expect(claims.result?.gates?.[0]?.results[0]).toMatchObject({
      result: 'ambiguous',
      climb: true,
      detail: expect.stringContaining('no judge configured: skipped, not passed'),
    });

    // a worker that cheats: it rewrites what the gate runs, or the runner's config, and the gate passes — not a pass
    const rigged = await run(shell('rigged', 'echo 46 > answer.txt; echo "exit 0" > check.sh', ['sh check.sh']));
    expect(rigged.status).toBe('partial');
    expect(rigged.result?.gates?.[0]?.results[0]).toMatchObject({
      result: 'ambiguous',
      climb: true,
      detail: expect.stringMatching(/^exit 0, but the work changed check\.sh, which this command may read/),
    });
    const makefile = await run(shell('makefile', 'printf "check:\\n\\ttrue\\n" > Makefile', ['make check']));
    expect(makefile.result?.gates?.[0]?.results[0]).toMatchObject({
      result: 'ambiguous',
      detail: expect.stringContaining('the work changed Makefile'),
    });

    const broken = await run(shell('broken', 'echo 45 > answer.txt; exit 3', ['true']));
    expect(broken.result?.gates?.[0]?.results[0]).toMatchObject({
      result: 'fail',
      detail: expect.stringMatching(/^the worker returned error/),
    });
    expect(existsSync(join(ws, 'c.txt'))).toBe(true);
  });

  it("an undecided gate goes to the roster's judge, whose reading is recorded as such", async () => {
    const engine = await open({
      ...THREE,
      entries: [...THREE.entries, { ...rung('judge', 'free'), tasks: ['judge'] }],
      judge: { entry: 'judge' },
    });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([
      {
        when: (r: ModelRequest) => r.model === 'judge-1' && r.lastText.includes('Check: claims'),
        text: 'FAIL: the report says tests were added; the diff shows only answer.txt.',
      },
    ]);
    const id = engine.submit({
      workspace: ws,
      verify: 'exit 0',
      fix_rounds: 0,
      tasks: [
        {
          name: 'c',
          type: 'fix',
          runner: 'shell',
          instruction: 'c',
          command: 'echo 42 > answer.txt; echo "added tests"',
          gates: [{ kind: 'claims' }],
        },
      ],
    }).job.id;
    await engine.settled(id);
    const job = engine.get(id, { full: true });
    expect(job.result?.gates?.[0]?.results[0]).toMatchObject({
      kind: 'claims',
      result: 'fail',
      judged: {
        entry: 'judge',
        reading: 'fail',
        why: 'the report says tests were added; the diff shows only answer.txt.',
      },
    });
    expect(job.status).toBe('partial');
    expect(server.requests.at(-1)?.system).toContain('"PASS: <why>" or "FAIL: <why>"');
  });

  it("the judge reading an undecided gate calls its entry's endpoint", async () => {
    const gateway = await startModelServer();
    try {
      const local = {
        api: 'openai-compatible' as const,
        url: `${server.url}/v1`,
        key: 'sk-test',
        model: 'default-model',
      };
      const judge = { ...rung('judge', 'free'), tasks: ['judge'], endpoint: 'gateway' };
      const engine = await open(
        { ...THREE, entries: [...THREE.entries, judge], judge: { entry: 'judge' } },
        {
          runners: createRunners({
            sandbox: 'off',
            builtin: {
              endpoint: local,
              endpoints: { gateway: { ...local, url: `${gateway.url}/v1`, key: 'sk-gateway' } },
            },
          }),
        },
      );
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const before = server.requests.length;
      gateway.script([
        {
          when: (r: ModelRequest) => r.model === 'judge-1' && r.lastText.includes('Check: claims'),
          text: 'PASS: the report claims only answer.txt, which changed.',
        },
      ]);
      const id = engine.submit({
        workspace: ws,
        verify: 'exit 0',
        fix_rounds: 0,
        tasks: [
          {
            name: 'c',
            type: 'fix',
            runner: 'shell',
            instruction: 'c',
            command: 'echo 42 > answer.txt',
            gates: [{ kind: 'claims' }],
          },
        ],
      }).job.id;
      await engine.settled(id);
      expect(engine.get(id, { full: true }).result?.gates?.[0]?.results[0]).toMatchObject({
        kind: 'claims',
        result: 'pass',
        judged: { entry: 'judge', reading: 'pass' },
      });
      expect(gateway.requests.map((r) => [r.model, r.headers.authorization])).toEqual([
        ['judge-1', 'Bearer sk-gateway'],
      ]);
      expect(server.requests.length).toBe(before);
    } finally {
      await gateway.close();
    }
  });

  it('with routing.learn, a type starts above a rung that demonstrably fails min_acceptance — never on fewer than 30 outcomes — and the figures are on the task and its ask', async () => {
    const dataDir = join(tempDir('gaffer-data-'), 'data');
    // the log as earlier jobs left it: 29 fix outcomes of small, all failed; 30 sweep outcomes of small, all failed
    const store = new Store(dataDir);
    const logged = (type: string, n: number) => {
      for (let i = 0; i < n; i++) {
        store.recordOutcome(
          {
            ts: new Date().toISOString(),
            job: `old-${type}-${i}`,
            task: 't',
            rung: 1,
            type,
            runner: 'builtin',
            model: 'small-1',
            provider: 'local',
            entry: 'small',
            status: 'failed',
            gates_passed: false,
            escalated_to: null,
            returned: false,
            attempts: 1,
            cost_usd: 0,
          },
          null,
        );
      }
    };
    logged('fix', 29);
    logged('sweep', 30);
    store.close();
    const sweeping = {
      entries: [rung('small', 'free'), rung('mid', 'mid', 'api'), rung('big', 'high', 'subscription')].map((e) => ({
        ...e,
        tasks: ['fix', 'sweep'],
      })),
    };
    const engine = await open(sweeping, { dataDir, routing: { learn: true, minAcceptance: 0.8 } });
    const before = server.requests.length;
    server.script([...writes('small-1', '42'), ...writes('mid-1', '42')]);
    const fix = submit(engine, makeWorkspace({ 'README.md': 'x\n' }, { git: true }));
    await engine.settled(fix);
    // 29 outcomes are too few to skip: small runs it
    expect(engine.get(fix).tasks[0]).toMatchObject({
      runner: 'builtin',
      model: 'small-1',
      routed: 'learned: small has 29 outcomes (< 30), too few to skip',
    });
    const sweep = submit(engine, makeWorkspace({ 'README.md': 'x\n' }, { git: true }), { ...TASK, type: 'sweep' });
    await engine.waitFor(sweep, 'phase:awaiting approval', 20);
    // mid is billed per call: its ask carries the figures that routed the task there
    expect(engine.get(sweep).asks?.[0]?.why).toMatch(
      /^roster entry "mid" is billed per call \(api\): money is never spent without a yes \(learned: skipped small \(0\/30 accepted, upper bound 0\.11 < 0\.8\); mid has 0 outcomes/,
    );
    engine.approve(sweep, true);
    await engine.settled(sweep);
    const job = engine.get(sweep);
    expect(job.status).toBe('done');
    expect(job.tasks[0]).toMatchObject({ model: 'mid-1', routed: expect.stringMatching(/^learned: skipped small/) });
    expect(server.requests.slice(before).map((r) => r.model)).toEqual(['small-1', 'small-1', 'mid-1', 'mid-1']);
  });
});

describe('a climb held by a spent budget (spec 05, spec 07)', () => {
  // the ladder's provider may take one request a UTC day: the first rung's run spends it
  const budget = {
    provider: 'local',
    entry: null,
    window: 'day' as const,
    unit: 'requests' as const,
    limit: 1,
    pace_margin: 0.2,
  };
  const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

  it('lets go of the shared workspace while it waits, says what it waits for and until when, and takes the workspace back when the window rolls over', async () => {
    let offsetS = 0;
    const now = () => epochS() + offsetS;
    const engine = await open(THREE, { operations: { budgets: [budget], now } });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([...writes('small-1', '41'), ...writes('mid-1', '42')]);
    const id = submit(engine, ws);
    expect((await engine.waitFor(id, 'worker:ans+mid:budget_paused', 30)).met).toBe(true);
    const until = iso(windowOf('day', now()).end);
    const held = engine.get(id);
    expect(held.phase).toMatch(
      new RegExp(
        `^ans\\+mid is held: local day budget \\(1 requests\\) is spent: 2 of 1 requests since .*; waits until ${until}; the workspace is free meanwhile$`,
      ),
    );
    // `gaffer status` says the held worker's state and why, not `- state`
    const status = renderCompact(held);
    expect(status).toMatch(
      new RegExp(
        `ans\\+mid +- +budget_paused: local day budget \\(1 requests\\) is spent: 2 of 1 requests since .*; waits until ${until}`,
      ),
    );
    expect(status).not.toMatch(/ - +state\b/);

    // its workspace is free meanwhile: another job on it runs to the end
    const other = engine.submit({
      workspace: ws,
      runner: 'shell',
      verify: 'exit 0',
      tasks: [{ instruction: 'echo hi > other.txt', files: ['other.txt'] }],
    }).job.id;
    expect((await engine.waitFor(other, 'done', 20)).met).toBe(true);
    expect(engine.get(other).status).toBe('done');

    // the next UTC day: the window rolls over, the climb takes its workspace back and runs
    offsetS = windowOf('day', now()).end - epochS() + 60;
    await engine.settled(id);
    const job = engine.get(id, { full: true });
    expect(job.status).toBe('done');
    expect(readFileSync(join(ws, 'answer.txt'), 'utf8')).toBe('42\n');
    // what the other job wrote while this one was away is not this job's work
    expect(job.result?.files_changed).toEqual(['answer.txt']);
  });

  it('a rung that never started (held, then cancelled) is no outcome: the rung that ran is logged, and acceptance never counts the one that did not', async () => {
    const engine = await open(THREE, { operations: { budgets: [budget] } });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    server.script([...writes('small-1', '41')]);
    const id = submit(engine, ws);
    expect((await engine.waitFor(id, 'worker:ans+mid:budget_paused', 30)).met).toBe(true);
    engine.cancel(id);
    await engine.settled(id);
    expect(engine.get(id).status).toBe('cancelled');
    const lines = readFileSync(join(engine.dataDir, 'outcomes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.rung, l.entry, l.status, l.escalated_to])).toEqual([[1, 'small', 'failed', 'mid']]);
    const stats = engine.stats();
    expect(stats.outcomes_total).toBe(1);
    expect(stats.acceptance['fix/mid-1']).toBeUndefined();
    expect(stats.acceptance['fix/small-1']).toMatchObject({ accepted: 0, total: 1 });
  });
});
