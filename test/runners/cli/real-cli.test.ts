// The real agent CLIs (test/agents, scripts/install-agent-clis.sh) driven through gaffer's engine, each inside a
// loopback-only network namespace whose only way out is the scripted model server's unix socket.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import { CliRunner } from '../../../src/runners/cli/cli-runner.js';
import { getCliProfile } from '../../../src/runners/cli/profiles.js';
import { cliRunnerOptions } from '../../../src/runners/cli/config.js';
import { loadConfig } from '../../../src/config/config.js';
import { slirp4netnsStatus } from '../../../src/platform/sandbox/network.js';
import { probeSandbox } from '../../../src/platform/sandbox/probe.js';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import { AGENTS_BIN, agentBinary, offlineSkipReason, startOfflineServer, type OfflineServer } from './harness.js';
import { SCENARIOS } from './scenarios.js';
import type { WorktreeSettings } from '../../../src/engine/placement/worktree.js';
import type { ModelRequest } from '../../support/model-server/index.js';

const skipReason = offlineSkipReason();
if (skipReason !== null) console.warn(`skipping real agent CLI tests: ${skipReason}`);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

async function setUp(
  key: keyof typeof SCENARIOS,
  worktrees: Partial<WorktreeSettings> = {},
): Promise<{ engine: Engine; offline: OfflineServer; ws: string; runner: CliRunner }> {
  const profile = getCliProfile(key);
  if (profile === undefined) throw new Error(`no profile ${key}`);
  const dir = tempDir(`gaffer-${key}-`);
  const offline = await startOfflineServer(join(dir, 'sock'));
  cleanups.push(() => offline.close());
  const runner = new CliRunner(profile, {
    enabled: true,
    // a loopback endpoint costs nothing; billing `subscription` would strip the key the CLI needs
    billing: 'free',
    home: join(dir, 'home'),
    endpoint: { url: offline.url, key: 'sk-test-key' },
    binDirs: [AGENTS_BIN],
    launch: offline.launch,
  });
  // issue 15: gaffer's accounting bills it as a logged-in CLI (the runner keeps the key the scripted endpoint wants)
  const engine = await Engine.open({
    dataDir: join(dir, 'data'),
    maxParallel: 2,
    runners: new Map([[key, runner]]),
    worktrees,
    billing: { [key]: 'subscription' },
  });
  cleanups.push(() => engine.close());
  const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
  return { engine, offline, ws, runner };
}

for (const scenario of Object.values(SCENARIOS)) {
  const installed = agentBinary(getCliProfile(scenario.key)?.binary ?? '') !== null;
  describe.skipIf(skipReason !== null || !installed)(`${scenario.key} (real CLI, offline)`, () => {
    it(`makes a real edit through gaffer, reports its session and served model, and a fix round resumes the session`, async () => {
      const { engine, offline, ws, runner } = await setUp(scenario.key);
      expect(runner.detect().version).toBe(getCliProfile(scenario.key)?.version);
      offline.server.script(
        [
          { toolCalls: [scenario.write(ws, 'hello.txt', 'hello\n')] },
          { text: 'Wrote hello.txt.' },
          // the fix round: verification wants second.txt
          { toolCalls: [scenario.write(ws, 'second.txt', 'second\n')] },
          { text: 'Added second.txt.' },
        ],
        { auto: true },
      );
      const { job } = engine.submit({
        workspace: ws,
        verify: 'test -f second.txt',
        fix_rounds: 1,
        timeout_s: 240,
        tasks: [
          {
            name: 'hello',
            runner: scenario.key,
            model: scenario.model,
            instruction: 'Create hello.txt containing the word hello.',
            files: ['hello.txt', 'second.txt'],
          },
        ],
      });
      await engine.settled(job.id);
      const done = engine.get(job.id);
      const attempts = engine.store.listAttempts(job.id);
      const worker = attempts.find((a) => a.worker === 'hello') ?? attempts[0];
      const fixer = attempts.find((a) => a.worker === 'fixer-1');
      const report = (worker?.report ?? {}) as Record<string, unknown>;
      const fixReport = (fixer?.report ?? {}) as Record<string, unknown>;
      const context = JSON.stringify({
        status: done.status,
        verdict: done.verdict,
        report,
        fixReport,
        requests: offline.server.requests.map((r) => [r.method, r.path, r.model, r.answeredBy, r.status]),
      });

      expect(report.status, context).toBe('done');
      expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello\n');
      expect(done.result?.changes?.added, context).toEqual(expect.arrayContaining(['hello.txt', 'second.txt']));
      expect(report.session, context).toEqual(expect.any(String));
      expect(report.makesClaims).toBe(false);
      // bubblewrap where it works here (nested inside the test's network namespace)
      expect(report.sandboxed).toBe(probeSandbox().available);
      // issue 11: outbound with the host's loopback cut, its endpoint's port relayed in (slirp4netns runs in the test's namespace)
      expect(report.network).toBe(probeSandbox().available && slirp4netnsStatus().path !== null ? 'outbound' : 'host');
      expect(report.summary).toContain('Wrote hello.txt.');
      // issue 15: a subscription CLI's spend is its requests and tokens, as the CLI reported them — never an unknown read as 0
      const row = done.result?.workers.find((w) => w.name === 'hello');
      expect(row?.spend, context).toMatch(/^\d+ requests?, [\d,]+ tokens \(subscription\)$/);
      expect(report.spend, context).toMatchObject({ billing: 'subscription', usd: null, unknown: null });
      // opencode and codex never say which model served (spec 04); the others must, and it must attest
      if (scenario.key === 'opencode' || scenario.key === 'codex') expect(report.modelServed).toBeNull();
      else expect(report.modelServed, context).toBe(scenario.model);

      // the fix round continued the same conversation: its first model request carries the first run's answer
      expect(fixReport.status, context).toBe('done');
      const fixRequest = offline.server.requests.find((r) => r.answeredBy === 'turn' && r.turn === 2);
      expect(JSON.stringify(fixRequest?.body ?? {}), context).toContain('Wrote hello.txt.');
      expect(done.status, context).toBe('done');
      const diff = execFileSync('git', ['status', '--porcelain'], { cwd: ws, encoding: 'utf8' });
      expect(diff).toContain('hello.txt');
    }, 300_000);
  });
}

// spec 06 / issue 13: agent CLIs run in parallel in worktrees (in a shared workspace they take turns)
const codexInstalled = agentBinary(getCliProfile('codex')?.binary ?? '') !== null;
describe.skipIf(skipReason !== null || !codexInstalled)('codex in worktrees (real CLI, offline)', () => {
  it('two codex workers run at once, each in its own worktree, and their branches merge into the workspace verified', async () => {
    const { engine, offline, ws } = await setUp('codex', { parallelSafeGates: ['test -f alpha.txt -o -f beta.txt'] });
    const scenario = SCENARIOS.codex;
    const forTask = (name: string) => [
      // by the task's own words: the handoff prompt also shows the verification command, which names both files
      {
        when: (r: ModelRequest) => !r.isToolResult && r.lastText.includes(`Create ${name}.txt`),
        toolCalls: [scenario.write(ws, `${name}.txt`, `${name}\n`)],
      },
      {
        when: (r: ModelRequest) => r.isToolResult && JSON.stringify(r.body).includes(`Create ${name}.txt`),
        text: `Wrote ${name}.txt.`,
      },
    ];
    offline.server.script([...forTask('alpha'), ...forTask('beta')], { auto: true });
    const { job } = engine.submit({
      workspace: ws,
      isolation: 'worktree',
      merge: 'auto',
      parallel: true,
      verify: 'test -f alpha.txt -o -f beta.txt',
      timeout_s: 240,
      tasks: ['alpha', 'beta'].map((name) => ({
        name,
        runner: 'codex',
        model: scenario.model,
        instruction: `Create ${name}.txt containing the word ${name}.`,
        files: [`${name}.txt`],
      })),
    });
    await engine.settled(job.id);
    const done = engine.get(job.id, { full: true });
    const context = JSON.stringify({
      status: done.status,
      verdict: done.verdict,
      requests: offline.server.requests.map((r) => [r.path, r.answeredBy, r.status]),
    });
    const events = engine.events(job.id).events;
    const at = (name: string, event: string) =>
      events.findIndex((e) => e.name === name && (e.event === event || (event === 'done' && e.event === 'error')));
    expect(Math.max(at('alpha', 'started'), at('beta', 'started')), context).toBeLessThan(
      Math.min(at('alpha', 'done'), at('beta', 'done')),
    );
    expect(
      done.result?.worktrees?.tasks.map((t) => [t.task, t.files, t.merge]),
      context,
    ).toEqual([
      ['alpha', ['alpha.txt'], 'merged'],
      ['beta', ['beta.txt'], 'merged'],
    ]);
    expect(readFileSync(join(ws, 'alpha.txt'), 'utf8') + readFileSync(join(ws, 'beta.txt'), 'utf8')).toBe(
      'alpha\nbeta\n',
    );
    expect(done.status, context).toBe('done');
  }, 300_000);
});

// issue 14: an agent CLI pointed at a model endpoint by gaffer's config (`runners.<cli>.endpoint: "<models name>"`),
// not by a test's hand-made options: the config file is loaded, the runner options come from it.
describe.skipIf(skipReason !== null)('agent CLIs on an endpoint named by config', () => {
  for (const key of ['claude', 'codex', 'gemini', 'qwen', 'opencode'] as const) {
    const scenario = SCENARIOS[key];
    const installed = agentBinary(getCliProfile(key)?.binary ?? '') !== null;
    it.skipIf(!installed)(
      `${key}: config models.local + runners.${key}.endpoint reach the local server, its model asked for`,
      async () => {
        const profile = getCliProfile(key);
        if (profile === undefined) throw new Error(`no profile ${key}`);
        const dir = tempDir(`gaffer-${key}-cfg-`);
        const offline = await startOfflineServer(join(dir, 'sock'));
        cleanups.push(() => offline.close());
        const configFile = join(dir, 'gaffer.config.json');
        writeFileSync(
          configFile,
          JSON.stringify({
            models: {
              local: {
                url: key === 'gemini' ? offline.url : `${offline.url}/v1`,
                api: key === 'claude' ? 'anthropic' : key === 'gemini' ? 'gemini' : 'openai',
                key: 'sk-local',
                model: scenario.model,
              },
            },
            runners: { [key]: { enabled: true, billing: 'free', home: join(dir, 'home'), endpoint: 'local' } },
          }),
        );
        const { config } = loadConfig({ dataDir: join(dir, 'data'), configPath: configFile, env: {} });
        const options = cliRunnerOptions(config)[key];
        const runner = new CliRunner(profile, { ...options, binDirs: [AGENTS_BIN], launch: offline.launch });
        const engine = await Engine.open({ dataDir: join(dir, 'data'), runners: new Map([[key, runner]]) });
        cleanups.push(() => engine.close());
        const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
        offline.server.script(
          [{ toolCalls: [scenario.write(ws, 'hello.txt', 'hello\n')] }, { text: 'Wrote hello.txt.' }],
          { auto: true },
        );
        // no model in the request: the endpoint's model is the one asked for
        const { job } = engine.submit({
          workspace: ws,
          verify: 'none',
          timeout_s: 240,
          tasks: [
            {
              name: 'hello',
              runner: key,
              instruction: 'Create hello.txt containing the word hello.',
              files: ['hello.txt'],
            },
          ],
        });
        await engine.settled(job.id);
        const done = engine.get(job.id);
        const context = JSON.stringify({
          status: done.status,
          verdict: done.verdict,
          requests: offline.server.requests.map((r) => [r.method, r.path, r.model, r.answeredBy, r.status]),
        });
        expect(readFileSync(join(ws, 'hello.txt'), 'utf8'), context).toBe('hello\n');
        expect(
          offline.server.requests.some((r) => r.model.endsWith(scenario.model)),
          context,
        ).toBe(true);
      },
      300_000,
    );
  }

  it.skipIf(agentBinary(getCliProfile('qwen')?.binary ?? '') === null)(
    'a roster entry points its CLI at its own endpoint: the task routed there reaches that server with that model; an entry whose endpoint the CLI cannot speak is refused before anything runs',
    async () => {
      const key = 'qwen';
      const scenario = SCENARIOS[key];
      const profile = getCliProfile(key);
      if (profile === undefined) throw new Error(`no profile ${key}`);
      const dir = tempDir('gaffer-roster-ep-');
      const offline = await startOfflineServer(join(dir, 'sock'));
      cleanups.push(() => offline.close());
      const configFile = join(dir, 'gaffer.config.json');
      // the runner itself names no endpoint: only the roster entry does
      writeFileSync(
        configFile,
        JSON.stringify({
          models: {
            lab: { url: `${offline.url}/v1`, api: 'openai', key: 'sk-lab', model: 'lab-model' },
            claudish: { url: `${offline.url}`, api: 'anthropic', key: 'k', model: 'c' },
          },
          runners: { [key]: { enabled: true, billing: 'free', home: join(dir, 'home') } },
          roster: {
            entries: [
              {
                id: 'lab-qwen',
                runner: key,
                model: scenario.model,
                provider: 'lab',
                billing: 'free',
                cost: 'free',
                tasks: ['implement'],
                endpoint: 'lab',
              },
            ],
          },
        }),
      );
      const { config } = loadConfig({ dataDir: join(dir, 'data'), configPath: configFile, env: {} });
      const runner = new CliRunner(profile, {
        ...cliRunnerOptions(config)[key],
        binDirs: [AGENTS_BIN],
        launch: offline.launch,
      });
      const engine = await Engine.open({
        dataDir: join(dir, 'data'),
        runners: new Map([[key, runner]]),
        roster: config.roster,
        defaultRunner: null,
      });
      cleanups.push(() => engine.close());
      const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
      offline.server.script(
        [{ toolCalls: [scenario.write(ws, 'hello.txt', 'hello\n')] }, { text: 'Wrote hello.txt.' }],
        { auto: true },
      );
      const { job } = engine.submit({
        workspace: ws,
        verify: 'none',
        timeout_s: 240,
        tasks: [
          {
            name: 'hello',
            type: 'implement',
            instruction: 'Create hello.txt containing the word hello.',
            files: ['hello.txt'],
          },
        ],
      });
      await engine.settled(job.id);
      const done = engine.get(job.id);
      const context = JSON.stringify({
        status: done.status,
        verdict: done.verdict,
        requests: offline.server.requests.map((r) => [r.method, r.path, r.model, r.answeredBy, r.status]),
      });
      expect(readFileSync(join(ws, 'hello.txt'), 'utf8'), context).toBe('hello\n');
      expect(done.result?.workers[0], context).toMatchObject({ runner: key, entry: 'lab-qwen', provider: 'lab' });
      expect(
        offline.server.requests.some(
          (r) => r.model.endsWith(scenario.model) && r.headers.authorization === 'Bearer sk-lab',
        ),
        context,
      ).toBe(true);

      const wrong = await Engine.open({
        dataDir: join(dir, 'data2'),
        runners: new Map([[key, runner]]),
        defaultRunner: null,
        roster: { ...config.roster!, entries: config.roster!.entries.map((e) => ({ ...e, endpoint: 'claudish' })) },
      });
      cleanups.push(() => wrong.close());
      expect(() => wrong.submit({ workspace: ws, tasks: [{ type: 'implement', instruction: 'x' }] })).toThrow(
        /tasks\[0\]\.runner: Qwen Code speaks the openai(-compatible)? API and models\.claudish is anthropic/,
      );
    },
    300_000,
  );

  it('refuses an endpoint the CLI cannot speak, and one gaffer has no endpoint for', () => {
    const models = { local: { url: 'http://127.0.0.1:9/v1', api: 'openai-compatible', model: 'm', key: null } };
    expect(() =>
      cliRunnerOptions({
        models,
        runners: { claude: { enabled: true, billing: 'free', home: null, endpoint: 'local' } },
      }),
    ).toThrow(/runners\.claude\.endpoint: Claude Code speaks the anthropic API and models\.local is openai-compatible/);
    expect(() =>
      cliRunnerOptions({
        models,
        runners: { gemini: { enabled: true, billing: 'free', home: null, endpoint: 'local' } },
      }),
    ).toThrow(/runners\.gemini\.endpoint: Gemini CLI speaks the gemini API and models\.local is openai-compatible/);
    const dir = tempDir('gaffer-cfg-');
    writeFileSync(join(dir, 'c.json'), JSON.stringify({ runners: { qwen: { enabled: true, endpoint: 'nowhere' } } }));
    expect(() => loadConfig({ dataDir: dir, configPath: join(dir, 'c.json'), env: {} })).toThrow(
      /runners\.qwen\.endpoint: "nowhere" is not a model endpoint \(no models are configured\) — add models\.nowhere/,
    );
  });
});
