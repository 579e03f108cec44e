import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getRunner, listRunnerKeys } from '../../src/runners/index.js';
import { BuiltinRunner } from '../../src/runners/builtin/builtin-runner.js';
import { CliRunner } from '../../src/runners/cli/cli-runner.js';
import { getCliProfile } from '../../src/runners/cli/profiles.js';
import { ShellRunner } from '../../src/runners/shell/shell-runner.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { tempDir } from '../helpers/temp.js';
import { endpointOf } from './builtin/helpers.js';
import { AGENTS_BIN, agentBinary, offlineSkipReason, startOfflineServer, type OfflineServer } from './cli/harness.js';
import { SCENARIOS } from './cli/scenarios.js';
import { runnerContract } from './runner-contract.js';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

const MADE = 'Wrote made.txt.\nFiles changed:\nmade.txt';

runnerContract('shell', async () => ({
  runner: new ShellRunner({}),
  key: 'shell',
  agent: false,
  refusing: { runner: new ShellRunner({ enabled: false }), task: { model: null }, code: 'runner_disabled' },
  task: { model: null },
  edit: () => ({ command: 'echo made > made.txt; echo wrote made.txt' }),
  long: (_ws, marker) => ({ input: { command: `echo started; sleep ${marker}` }, marker: true }),
}));

runnerContract('builtin (against the scripted model server)', async () => ({
  runner: new BuiltinRunner({ endpoint: endpointOf(server, 'openai-compatible') }),
  key: 'builtin',
  agent: true,
  refusing: { runner: new BuiltinRunner({ endpoint: null }), task: { model: null }, code: 'model_endpoint_missing' },
  task: { model: null },
  edit: () => {
    server.script([
      { toolCalls: [{ name: 'write_file', args: { path: 'made.txt', content: 'made\n' } }] },
      { text: MADE },
    ]);
    return {};
  },
  long: (_ws, marker) => {
    server.script([
      { toolCalls: [{ name: 'run_command', args: { command: `echo started; sleep ${marker}` } }] },
      { text: 'done' },
    ]);
    return { input: {}, marker: true };
  },
}));

// the agent CLIs: each driven as the real-CLI tests drive it, in a loopback-only namespace whose only way out is a scripted server
const offlineSkip = offlineSkipReason();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});
for (const scenario of Object.values(SCENARIOS)) {
  const profile = getCliProfile(scenario.key);
  const missing =
    agentBinary(profile?.binary ?? '') === null
      ? `${scenario.key} is not installed in ${AGENTS_BIN} (bash scripts/install-agent-clis.sh)`
      : offlineSkip;
  if (missing !== null || profile === undefined) {
    describe.skip(`${scenario.key} keeps the runner contract (skipped: ${missing ?? 'no profile'})`, () =>
      it('needs the CLI', () => undefined));
    continue;
  }
  const setUp = async (): Promise<{ runner: CliRunner; offline: OfflineServer }> => {
    const dir = tempDir(`gaffer-${scenario.key}-`);
    const offline = await startOfflineServer(join(dir, 'sock'));
    cleanups.push(() => offline.close());
    const runner = new CliRunner(profile, {
      enabled: true,
      billing: 'free',
      home: join(dir, 'home'),
      endpoint: { url: offline.url, key: 'sk-test-key' },
      binDirs: [AGENTS_BIN],
      launch: offline.launch,
    });
    return { runner, offline };
  };
  runnerContract(
    `${scenario.key} (the real CLI, offline)`,
    async () => {
      const { runner, offline } = await setUp();
      return {
        runner,
        key: scenario.key,
        agent: true,
        refusing: {
          runner: new CliRunner(profile, { binDirs: [AGENTS_BIN] }),
          task: { model: null },
          code: 'runner_disabled',
        },
        task: { model: scenario.model },
        edit: (ws) => {
          offline.server.script(
            [{ toolCalls: [scenario.write(ws, 'made.txt', 'made\n')] }, { text: 'Wrote made.txt.' }],
            { auto: true },
          );
          return { model: scenario.model };
        },
        // the CLI waits on a model that does not answer: its own process group is what the cancel stops
        long: () => {
          offline.server.script([{ stall: 60_000 }], { auto: true });
          return { input: { model: scenario.model }, marker: false };
        },
      };
    },
    { timeoutMs: 240_000 },
  );
}

describe('the runner contract covers every runner of this build', () => {
  it('the registry holds shell, builtin and the agent CLIs, each under its own key, and nothing the contract does not run', () => {
    expect(listRunnerKeys().sort()).toEqual(['builtin', 'shell', ...Object.keys(SCENARIOS)].sort());
    for (const key of listRunnerKeys()) expect(getRunner(key)?.key).toBe(key);
  });
});
