// Refreshes test/runners/cli/recordings/ from the real CLIs (GAFFER_RECORD_CLI=1); skipped otherwise.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildInvocation } from '../../../src/runners/cli/invocation.js';
import { getCliProfile } from '../../../src/runners/cli/profiles.js';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import { agentBinary, offlineSkipReason, runRaw, startOfflineServer } from './harness.js';
import { SCENARIOS } from './scenarios.js';

const RECORD = process.env.GAFFER_RECORD_CLI === '1';
const only = (process.env.GAFFER_RECORD_ONLY ?? '').split(',').filter(Boolean);

describe.skipIf(!RECORD || offlineSkipReason() !== null)('recording real CLI output', () => {
  for (const scenario of Object.values(SCENARIOS)) {
    it.skipIf(only.length > 0 && !only.includes(scenario.key))(`records ${scenario.key}`, async () => {
      const profile = getCliProfile(scenario.key);
      const bin = agentBinary(profile?.binary ?? '');
      if (profile === undefined || bin === null) throw new Error(`${scenario.key} is not installed in test/agents`);
      const dir = tempDir('gaffer-rec-');
      const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
      const offline = await startOfflineServer(dir, [{ toolCalls: [scenario.write(ws, 'hello.txt', 'hello\n')] }, { text: 'Wrote hello.txt.' }], { auto: true });
      try {
        const inv = buildInvocation(profile, {
          instruction: 'Create hello.txt containing hello.',
          model: scenario.model,
          resume: null,
          endpoint: { url: offline.url, key: 'sk-test-key' },
          home: join(dir, 'home'),
          userHome: join(dir, 'home'),
          tmpDir: join(dir, 'tmp'),
          instructionFile: join(dir, 'instruction.txt'),
          isRoot: process.getuid?.() === 0,
        });
        for (const d of [...inv.stateDirs, join(dir, 'tmp')]) mkdirSync(d, { recursive: true });
        for (const [path, content] of Object.entries(inv.files)) {
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, content);
        }
        const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...inv.env };
        const result = await runRaw(offline.launch([bin, ...inv.args]), { cwd: ws, env, stdin: inv.promptOnStdin ? 'Create hello.txt containing hello.' : undefined, timeoutMs: 120_000 });
        const out = join('test/runners/cli/recordings');
        mkdirSync(out, { recursive: true });
        writeFileSync(join(out, `${scenario.key}-write.stdout.jsonl`), result.stdout);
        writeFileSync(join(out, `${scenario.key}-write.stderr.txt`), result.stderr);
        writeFileSync(join(out, `${scenario.key}-write.requests.json`), JSON.stringify(offline.server.requests.map((r) => ({ api: r.api, method: r.method, path: r.path, model: r.model, tools: r.toolNames.length, answeredBy: r.answeredBy, status: r.status })), null, 1));
        console.log(scenario.key, 'exit', result.code, '\n', result.stdout.slice(0, 3000), '\nSTDERR', result.stderr.slice(0, 2000));
        expect(result.code).not.toBeNull();
      } finally {
        await offline.close();
      }
    }, 150_000);
  }
});
