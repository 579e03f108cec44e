// A real agent CLI run (test/agents) in a configured home that already holds the user's settings: gaffer merges
// its keys in, the CLI runs with the merged file, and the user's settings are still there after.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import { CliRunner } from '../../../src/runners/cli/cli-runner.js';
import { getCliProfile } from '../../../src/runners/cli/profiles.js';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import { AGENTS_BIN, agentBinary, offlineSkipReason, startOfflineServer } from './harness.js';
import { SCENARIOS } from './scenarios.js';

const skipReason = offlineSkipReason();
const installed = agentBinary('gemini') !== null;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

describe.skipIf(skipReason !== null || !installed)(
  'gemini in a home that already has settings (real CLI, offline)',
  () => {
    it("runs with gaffer's keys merged in, and the user's settings are kept", async () => {
      const profile = getCliProfile('gemini')!;
      const dir = tempDir('gaffer-gemini-home-');
      const home = join(dir, 'home');
      mkdirSync(join(home, '.gemini'), { recursive: true });
      const user = {
        ui: { theme: 'GitHub', hideTips: true },
        general: { vimMode: true },
        context: { fileName: 'AGENTS.md' },
      };
      writeFileSync(join(home, '.gemini', 'settings.json'), `${JSON.stringify(user, null, 2)}\n`);

      const offline = await startOfflineServer(join(dir, 'sock'));
      cleanups.push(() => offline.close());
      const runner = new CliRunner(profile, {
        enabled: true,
        billing: 'free',
        home,
        endpoint: { url: offline.url, key: 'sk-test-key' },
        binDirs: [AGENTS_BIN],
        launch: offline.launch,
      });
      const engine = await Engine.open({ dataDir: join(dir, 'data'), runners: new Map([['gemini', runner]]) });
      cleanups.push(() => engine.close());
      const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
      offline.server.script(
        [{ toolCalls: [SCENARIOS.gemini.write(ws, 'hello.txt', 'hello\n')] }, { text: 'Wrote hello.txt.' }],
        { auto: true },
      );
      const { job } = engine.submit({
        workspace: ws,
        verify: 'test -f hello.txt',
        fix_rounds: 0,
        timeout_s: 240,
        tasks: [
          {
            name: 'hello',
            runner: 'gemini',
            model: SCENARIOS.gemini.model,
            instruction: 'Create hello.txt containing the word hello.',
            files: ['hello.txt'],
          },
        ],
      });
      await engine.settled(job.id);
      const done = engine.get(job.id);
      expect(done.status, done.verdict ?? '').toBe('done');
      expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello\n');

      const settings = JSON.parse(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8'));
      expect(settings).toMatchObject(user);
      expect(settings.general.maxAttempts).toBe(1);
      expect(settings.security.auth.selectedType).toBe('gemini-api-key');
    }, 300_000);
  },
);
