import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRoster } from '../../src/domain/roster.js';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { createSandbox } from '../../src/platform/sandbox/sandbox.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelRequest } from '../support/model-server/index.js';

// spec 05 "The roster" and "Routing", through real jobs on the shell runner (a roster entry is data:
// its runner runs the task's instruction): the first capable entry takes a task; an `api` entry
// asks even under approval "never"; a routing null is an ask proposing the default runner, or a
// refusal naming what to add; the roster comes from config, the data dir, or the workspace as
// committed.

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

async function open(
  opts: Partial<EngineOptions> = {},
  dataDir = join(tempDir('gaffer-data-'), 'data'),
): Promise<Engine> {
  const engine = await Engine.open({ dataDir, runners: createRunners({ sandbox: createSandbox('off') }), ...opts });
  engines.push(engine);
  return engine;
}

const ROSTER = {
  entries: [
    { id: 'cheap', runner: 'shell', provider: 'local', billing: 'free', cost: 'free', tasks: ['sweep'] },
    {
      id: 'pricey',
      runner: 'shell',
      model: 'm-10',
      provider: 'cloud',
      billing: 'api',
      cost: 'high',
      tasks: ['fix', 'sweep'],
    },
    {
      id: 'careful',
      runner: 'shell',
      provider: 'local',
      billing: 'subscription',
      cost: 'mid',
      tasks: ['test'],
      approve: true,
    },
  ],
};

const task = (name: string, type: string) => ({
  name,
  type,
  instruction: `echo ${name} > ${name}.txt`,
  files: [`${name}.txt`],
});

describe('the roster (spec 05)', () => {
  it('is refused with the field, the value and the fix; fields not built yet are not_supported', () => {
    expect(() => parseRoster({ entries: [{ ...ROSTER.entries[0], cost: 'cheap' }] }, 'config x.json')).toThrow(
      /config x\.json: roster\.entries\[0\]\.cost: .*got "cheap"/,
    );
    expect(() => parseRoster({ entries: [{ ...ROSTER.entries[0], taks: ['fix'] }] }, 'r.json')).toThrow(
      /unknown key\(s\) taks — did you mean "tasks"\?/,
    );
    expect(() => parseRoster({ entries: [ROSTER.entries[0], ROSTER.entries[0]] }, 'r.json')).toThrow(
      /roster\.entries\[1\]\.id: "cheap" is used by an earlier entry/,
    );
    expect(() => parseRoster({ entries: [{ ...ROSTER.entries[0], tasks: ['paint'] }] }, 'r.json')).toThrow(
      /roster\.entries\[0\]\.tasks\[0\]/,
    );
    expect(() => parseRoster({ ...ROSTER, judge: { entry: 'nobody' } }, 'r.json')).toThrow(
      /roster\.judge\.entry: "nobody" is not an entry of the roster \(entries: cheap, pricey, careful\)/,
    );
    expect(() => parseRoster({ ...ROSTER, judge: { entry: 'cheap' } }, 'r.json')).toThrow(
      /"cheap" runs on shell; the judge runs on the builtin provider stack/,
    );
    expect(() => parseRoster({ ...ROSTER, fanout: {} }, 'r.json')).toThrow(
      expect.objectContaining({ code: 'not_supported' }),
    );
    expect(() => parseRoster({ entries: [{ ...ROSTER.entries[0], max_concurrency: 2 }] }, 'r.json')).toThrow(
      expect.objectContaining({ code: 'not_supported' }),
    );
    // an endpoint is a model caller's (the builtin agent's or an agent CLI's): shell calls no model
    expect(() => parseRoster({ entries: [{ ...ROSTER.entries[0], endpoint: 'local' }] }, 'r.json')).toThrow(
      /roster\.entries\[0\]\.endpoint: only a builtin or agent CLI entry \(builtin, claude, codex, gemini, qwen, opencode\) is pointed at an endpoint; shell calls no model/,
    );
    expect(
      parseRoster({ entries: [{ ...ROSTER.entries[0], runner: 'opencode', endpoint: 'local' }] }, 'r.json').entries[0]
        ?.endpoint,
    ).toBe('local');
    expect(
      parseRoster({ entries: [{ ...ROSTER.entries[0], runner: 'builtin', endpoint: 'gateway' }] }, 'r.json').entries[0]
        ?.endpoint,
    ).toBe('gateway');
  });

  it('routes each task to the first entry taking its type; an api entry asks even under approval "never", and its yes runs it there', async () => {
    const engine = await open({ roster: parseRoster(ROSTER, 'config test'), defaultRunner: null });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      approval: 'never',
      verify: 'exit 0',
      tasks: [task('s', 'sweep'), task('f', 'fix')],
    });
    await engine.waitFor(job.id, 'phase:awaiting approval', 10);
    const waiting = engine.get(job.id);
    expect(waiting.status).toBe('awaiting_approval');
    // only the api-billed task is asked about; the free one needs no yes
    expect(waiting.asks?.map((a) => a.task)).toEqual(['f']);
    expect(waiting.asks?.[0]).toMatchObject({
      route: 'm-10 (cloud/shell, roster entry pricey)',
      why: 'roster entry "pricey" is billed per call (api): money is never spent without a yes',
    });
    expect(existsSync(join(ws, 's.txt'))).toBe(false);
    engine.approve(job.id, true);
    await engine.settled(job.id);
    const done = engine.get(job.id);
    expect(done.status).toBe('done');
    expect(readFileSync(join(ws, 's.txt'), 'utf8')).toBe('s\n');
    expect(readFileSync(join(ws, 'f.txt'), 'utf8')).toBe('f\n');
    // the stored machine says how each got to run: the asked task through the yes (`approved`), the other through its gates
    const trails = Object.fromEntries(
      engine.store.listAttempts(job.id).map((a) => [a.worker, a.machine?.trail.slice(0, 3)]),
    );
    expect(trails).toEqual({
      s: ['gates_passed', 'placement_acquired', 'executor_started'],
      f: ['approval_needed', 'approved', 'placement_acquired'],
    });
    // each attempt's record names the entry and provider its route came from
    expect(done.result?.workers.map((w) => [w.name, w.entry, w.provider, w.model ?? null])).toEqual([
      ['s', 'cheap', 'local', null],
      ['f', 'pricey', 'cloud', 'm-10'],
    ]);
  });

  it('a task that names the runner and model of an api entry is billed as that entry: it asks first (issue 34: it ran with no ask)', async () => {
    const engine = await open({ roster: parseRoster(ROSTER, 'config test'), defaultRunner: null });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      approval: 'never',
      verify: 'exit 0',
      tasks: [{ ...task('f', 'fix'), runner: 'shell', model: 'm-10' }],
    });
    await engine.waitFor(job.id, 'phase:awaiting approval', 10);
    const waiting = engine.get(job.id);
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.asks?.[0]).toMatchObject({
      task: 'f',
      why: 'roster entry "pricey" is billed per call (api): money is never spent without a yes',
    });
    expect(existsSync(join(ws, 'f.txt'))).toBe(false);
    engine.approve(job.id, false);
    await engine.settled(job.id);
    expect(existsSync(join(ws, 'f.txt'))).toBe(false);
  });

  it('an entry marked approve asks under auto; approval "never" does not ask for it', async () => {
    const engine = await open({ roster: parseRoster(ROSTER, 'config test') });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const asked = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task('t', 'test')] });
    await engine.waitFor(asked.job.id, 'phase:awaiting approval', 10);
    expect(engine.get(asked.job.id).asks?.[0]?.why).toBe('roster entry "careful" is marked approve: true');
    engine.approve(asked.job.id, false);
    await engine.settled(asked.job.id);
    expect(engine.get(asked.job.id)).toMatchObject({ status: 'cancelled', verdict: 'not approved' });

    const unasked = engine.submit({ workspace: ws, approval: 'never', verify: 'exit 0', tasks: [task('u', 'test')] });
    await engine.settled(unasked.job.id);
    expect(engine.get(unasked.job.id).status).toBe('done');
  });

  it('a routing null is an ask that proposes the default runner — never dropped, never run unasked; with no default runner the request is refused, naming what to add', async () => {
    const engine = await open({ roster: parseRoster(ROSTER, 'config test'), defaultRunner: 'shell' });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task('d', 'design')] });
    await engine.waitFor(job.id, 'phase:awaiting approval', 10);
    const ask = engine.get(job.id).asks?.[0];
    expect(ask?.why).toMatch(
      /^routing null: nothing in config test takes "design" \(its types: sweep, fix, test\); the configured default runner "shell" is proposed$/,
    );
    expect(ask?.cons[0]).toMatch(/nothing rostered takes "design"/);
    expect(existsSync(join(ws, 'd.txt'))).toBe(false);
    engine.approve(job.id, { d: true });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');

    const strict = await open({ roster: parseRoster(ROSTER, 'config test'), defaultRunner: null });
    expect(() => strict.submit({ workspace: ws, tasks: [task('d2', 'design')] })).toThrow(
      expect.objectContaining({
        code: 'no_runner',
        message: expect.stringMatching(
          /tasks\[0\]: nothing in config test takes "design" .* add a roster entry whose tasks include "design", name a "runner", or configure default_runner/,
        ),
      }),
    );
  });

  it("a task that names its runner is not routed; a command is the shell's", async () => {
    const engine = await open({ roster: parseRoster(ROSTER, 'config test') });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({
      workspace: ws,
      verify: 'exit 0',
      tasks: [
        { ...task('n', 'fix'), runner: 'shell' },
        { name: 'c', type: 'fix', instruction: 'write c', files: ['c.txt'], command: 'echo c > c.txt' },
      ],
    });
    await engine.settled(job.id);
    // neither is the api entry's: nothing asked
    expect(engine.get(job.id)).toMatchObject({ status: 'done' });
    expect(engine.get(job.id).asks ?? []).toEqual([]);
  });

  it('reads <data dir>/gaffer.roster.json, and a workspace roster only as committed at HEAD', async () => {
    const dataDir = join(tempDir('gaffer-data-'), 'data');
    const engine = await open({ defaultRunner: null }, dataDir);
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    // no roster anywhere: a task with no runner is refused as before
    expect(() => engine.submit({ workspace: ws, tasks: [task('a', 'sweep')] })).toThrow(
      expect.objectContaining({ code: 'no_runner' }),
    );

    // the workspace's file, not committed: refused, saying why and what to do
    writeFileSync(join(ws, 'gaffer.roster.json'), JSON.stringify(ROSTER));
    expect(() => engine.submit({ workspace: ws, tasks: [task('a', 'sweep')] })).toThrow(
      /read as committed at HEAD .* commit it, or move it to/,
    );
    execFileSync('git', ['add', 'gaffer.roster.json'], { cwd: ws });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'roster'], {
      cwd: ws,
      stdio: 'ignore',
    });
    // a worker's later edit of the working copy (everything to the api entry) changes nothing
    writeFileSync(
      join(ws, 'gaffer.roster.json'),
      JSON.stringify({ entries: [{ ...ROSTER.entries[1], tasks: ['sweep'] }] }),
    );
    const routed = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task('a', 'sweep')] });
    await engine.settled(routed.job.id);
    expect(engine.get(routed.job.id).status).toBe('done');

    // the data dir's roster wins over the workspace's
    writeFileSync(join(dataDir, 'gaffer.roster.json'), JSON.stringify({ entries: [ROSTER.entries[1]] }));
    const paid = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task('b', 'sweep')] });
    await engine.waitFor(paid.job.id, 'phase:awaiting approval', 10);
    expect(engine.get(paid.job.id).asks?.[0]?.route).toBe(`m-10 (cloud/shell, roster entry pricey)`);
    engine.cancel(paid.job.id);
    await engine.settled(paid.job.id);
    // and a broken one refuses every job, naming the file and the field
    writeFileSync(
      join(dataDir, 'gaffer.roster.json'),
      JSON.stringify({ entries: [{ ...ROSTER.entries[0], billing: 'prepaid' }] }),
    );
    expect(() => engine.submit({ workspace: ws, tasks: [task('c', 'sweep')] })).toThrow(
      /gaffer\.roster\.json: roster\.entries\[0\]\.billing: .*got "prepaid"/,
    );
  });

  it("a roster-routed builtin agent runs the entry's model and is handed gaffer's prompt: the grounded brief in its sections, the standing rules from config", async () => {
    const server = await startModelServer();
    try {
      const roster = parseRoster(
        {
          entries: [
            {
              id: 'local-small',
              runner: 'builtin',
              model: 'small-1',
              provider: 'ollama',
              billing: 'free',
              cost: 'free',
              tasks: ['fix'],
            },
          ],
        },
        'config test',
      );
      const engine = await open({
        roster,
        defaultRunner: null,
        handoffRules: ['Rule one: stay small.', 'Rule two: say what you did not do.'],
        runners: createRunners({
          sandbox: 'off',
          builtin: {
            endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'default-model' },
          },
        }),
      });
      server.script([
        {
          when: (r: ModelRequest) => !r.isToolResult,
          toolCalls: [{ name: 'write_file', args: { path: 'fixed.txt', content: 'fixed\n' } }],
        },
        { when: (r: ModelRequest) => r.isToolResult, text: 'Fixed.\nFiles changed:\nfixed.txt' },
      ]);
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const { job } = engine.submit({
        workspace: ws,
        verify: 'exit 0',
        tasks: [
          {
            name: 'fx',
            type: 'fix',
            grounded: true,
            instruction: 'write fixed.txt',
            files: ['fixed.txt'],
            receipts: ['issue #12: fixed.txt is missing'],
            done_means: ['fixed.txt says fixed'],
          },
        ],
      });
      await engine.settled(job.id);
      expect(engine.get(job.id).status).toBe('done');
      const first = server.requests[0];
      expect(first?.model).toBe('small-1');
      const prompt = JSON.stringify(first?.body);
      for (const part of [
        '## Role',
        'You are small-1 on builtin (roster entry local-small), dispatched by gaffer for a fix task.',
        '## Read first',
        'issue #12: fixed.txt is missing',
        '## Order of work',
        '1. fixed.txt says fixed',
        '- Rule one: stay small.',
        '- Rule two: say what you did not do.',
        '## Done means',
        '## Gates',
        '## Decisions',
        '## Abort criteria',
        `source: gaffer job ${job.id}`,
      ]) {
        expect(prompt).toContain(JSON.stringify(part).slice(1, -1));
      }
    } finally {
      await server.close();
    }
  });

  it("the roster's judge drafts each ask's recommendation through the builtin provider stack; when it does not answer, the ask says it abstained and why", async () => {
    const server = await startModelServer();
    try {
      const roster = parseRoster(
        {
          entries: [
            ...ROSTER.entries,
            {
              id: 'judge',
              runner: 'builtin',
              model: 'judge-1',
              provider: 'ollama',
              billing: 'free',
              cost: 'free',
              tasks: ['judge'],
            },
          ],
          judge: { entry: 'judge' },
        },
        'config test',
      );
      const engine = await open({
        roster,
        runners: createRunners({
          sandbox: 'off',
          builtin: {
            endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'default-model' },
          },
        }),
      });
      server.script([
        {
          when: (r: ModelRequest) => r.lastText.includes('Task "f"'),
          text: 'approve: it changes one named file and the result is verified.',
        },
      ]);
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const { job } = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task('f', 'fix')] });
      await engine.waitFor(job.id, 'phase:awaiting approval', 20);
      const ask = engine.get(job.id).asks?.[0];
      expect(ask).toMatchObject({
        recommendation: 'approve: it changes one named file and the result is verified.',
        judge_abstained: false,
        judge: 'judge',
      });
      expect(server.requests[0]?.model).toBe('judge-1');
      expect(server.requests[0]?.system).toContain('Start with "approve" or "deny"');
      engine.cancel(job.id);
      await engine.settled(job.id);

      // the model fails: gaffer's code-only rationale stands, marked as such, with the reason
      server.script([{ error: { status: 500 } }]);
      const second = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task('g', 'fix')] });
      await engine.waitFor(second.job.id, 'phase:awaiting approval', 20);
      const abstained = engine.get(second.job.id).asks?.[0];
      expect(abstained).toMatchObject({ judge_abstained: true, judge: expect.stringMatching(/^judge abstained: /) });
      expect(abstained?.recommendation).toMatch(/^approve/);
      engine.cancel(second.job.id);
      await engine.settled(second.job.id);
    } finally {
      await server.close();
    }
  });

  it("the judge runs on its entry's endpoint, and a reply that does not fit what it is asked (start with approve or deny, say why, at most 600 characters) is an abstention, not a recommendation", async () => {
    const [local, gateway] = [await startModelServer(), await startModelServer()];
    try {
      const at = (s: { url: string }, key: string) => ({
        api: 'openai-compatible' as const,
        url: `${s.url}/v1`,
        key,
        model: 'default-model',
      });
      const judgeEntry = {
        id: 'judge',
        runner: 'builtin',
        model: 'judge-1',
        provider: 'gateway',
        billing: 'free',
        cost: 'free',
        tasks: ['judge'],
        endpoint: 'gateway',
      };
      const roster = parseRoster(
        { entries: [...ROSTER.entries, judgeEntry], judge: { entry: 'judge' } },
        'config test',
      );
      const engine = await open({
        roster,
        runners: createRunners({
          sandbox: 'off',
          builtin: { endpoint: at(local, 'sk-local'), endpoints: { gateway: at(gateway, 'sk-gateway') } },
        }),
      });
      const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
      const askOf = async (name: string, reply: string) => {
        gateway.script([{ when: (r: ModelRequest) => r.lastText.includes(`Task "${name}"`), text: reply }]);
        const { job } = engine.submit({ workspace: ws, verify: 'exit 0', tasks: [task(name, 'fix')] });
        await engine.waitFor(job.id, 'phase:awaiting approval', 20);
        const ask = engine.get(job.id).asks?.[0];
        engine.cancel(job.id);
        await engine.settled(job.id);
        return ask;
      };

      const done = await askOf('a', 'done');
      expect(done).toMatchObject({
        judge_abstained: true,
        judge: 'judge abstained: its reply did not fit: it does not start with "approve" or "deny": "done"',
      });
      // the code-only recommendation stands
      expect(done?.recommendation).toBe('approve: it names what it may change and gaffer can check the result');
      expect(gateway.requests.at(-1)).toMatchObject({
        model: 'judge-1',
        headers: expect.objectContaining({ authorization: 'Bearer sk-gateway' }),
      });
      expect(local.requests).toHaveLength(0);

      const bare = await askOf('b', 'Approve.');
      expect(bare).toMatchObject({
        judge_abstained: true,
        judge: expect.stringContaining('it gives no reason after "Approve"'),
      });
      const long = await askOf('c', `deny: ${'it names no safe bound on what it changes; '.repeat(20)}`);
      expect(long).toMatchObject({
        judge_abstained: true,
        judge: expect.stringMatching(/it is \d+ characters, more than the 600 \(three sentences\) it is asked for/),
      });

      const fits = await askOf('d', '**Deny**: it is billed per call and the result is only checked by `exit 0`.');
      expect(fits).toMatchObject({
        judge_abstained: false,
        judge: 'judge',
        recommendation: '**Deny**: it is billed per call and the result is only checked by `exit 0`.',
      });
    } finally {
      await Promise.all([local.close(), gateway.close()]);
    }
  });

  it('unattended with no one to answer is no: nothing launches; with a notify command someone is told, and the ask waits', async () => {
    const engine = await open({ roster: parseRoster(ROSTER, 'config test') });
    const ws = makeWorkspace({ 'README.md': 'x\n' }, { git: true });
    const { job } = engine.submit({ workspace: ws, unattended: true, verify: 'exit 0', tasks: [task('f', 'fix')] });
    await engine.settled(job.id);
    const denied = engine.get(job.id);
    expect(denied).toMatchObject({ status: 'cancelled', verdict: 'not approved' });
    expect(denied.asks?.[0]).toMatchObject({
      task: 'f',
      answer: false,
      answered_by: 'unattended',
      note: expect.stringContaining('no one to answer'),
    });
    expect(existsSync(join(ws, 'f.txt'))).toBe(false);

    const told = await open({ roster: parseRoster(ROSTER, 'config test'), notify: { command: 'true', webhook: null } });
    const waiting = told.submit({ workspace: ws, unattended: true, verify: 'exit 0', tasks: [task('g', 'fix')] });
    await told.waitFor(waiting.job.id, 'phase:awaiting approval', 10);
    expect(told.get(waiting.job.id).asks?.[0]?.answer).toBeNull();
    told.approve(waiting.job.id, true);
    await told.settled(waiting.job.id);
    expect(told.get(waiting.job.id).status).toBe('done');
  });
});
