// Refreshes test/runners/cli/recordings/ from the real CLIs (GAFFER_RECORD_CLI=1); skipped otherwise.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import { offlineSkipReason, recordCliRun, startOfflineServer } from './harness.js';
import { SCENARIOS } from './scenarios.js';

const RECORD = process.env.GAFFER_RECORD_CLI === '1';
const only = (process.env.GAFFER_RECORD_ONLY ?? '').split(',').filter(Boolean);

describe.skipIf(!RECORD || offlineSkipReason() !== null)('recording real CLI output', () => {
  for (const scenario of Object.values(SCENARIOS)) {
    it.skipIf(only.length > 0 && !only.includes(scenario.key))(
      `records ${scenario.key}`,
      async () => {
        const dir = tempDir('gaffer-rec-');
        const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
        const offline = await startOfflineServer(
          dir,
          [{ toolCalls: [scenario.write(ws, 'hello.txt', 'hello\n')] }, { text: 'Wrote hello.txt.' }],
          { auto: true },
        );
        try {
          const result = await recordCliRun(scenario, dir, ws, offline, 120_000);
          const out = join('test/runners/cli/recordings');
          mkdirSync(out, { recursive: true });
          writeFileSync(join(out, `${scenario.key}-write.stdout.jsonl`), result.stdout);
          writeFileSync(join(out, `${scenario.key}-write.stderr.txt`), result.stderr);
          writeFileSync(
            join(out, `${scenario.key}-write.requests.json`),
            JSON.stringify(
              offline.server.requests.map((r) => ({
                api: r.api,
                method: r.method,
                path: r.path,
                model: r.model,
                tools: r.toolNames.length,
                answeredBy: r.answeredBy,
                status: r.status,
              })),
              null,
              1,
            ),
          );
          console.log(
            scenario.key,
            'exit',
            result.code,
            '\n',
            result.stdout.slice(0, 3000),
            '\nSTDERR',
            result.stderr.slice(0, 2000),
          );
          expect(result.code).not.toBeNull();
        } finally {
          await offline.close();
        }
      },
      150_000,
    );
  }
});
