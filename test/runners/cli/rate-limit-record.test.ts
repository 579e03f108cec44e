// Records what each real CLI prints when the provider answers 429 (GAFFER_RECORD_CLI=1); skipped otherwise.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { makeWorkspace, tempDir } from '../../helpers/temp.js';
import { offlineSkipReason, recordCliRun, startOfflineServer } from './harness.js';
import { SCENARIOS } from './scenarios.js';

const RECORD = process.env.GAFFER_RECORD_CLI === '1';
const only = (process.env.GAFFER_RECORD_ONLY ?? '').split(',').filter(Boolean);

describe.skipIf(!RECORD || offlineSkipReason() !== null)('recording real CLI output on a 429', () => {
  for (const scenario of Object.values(SCENARIOS)) {
    it.skipIf(only.length > 0 && !only.includes(scenario.key))(
      `records ${scenario.key} rate-limited`,
      async () => {
        const dir = tempDir('gaffer-rec-');
        const ws = makeWorkspace({ 'README.md': 'hi\n' }, { git: true });
        const limited = {
          error: { status: 429, headers: { 'retry-after': '42' }, message: 'Rate limit reached for requests' },
        };
        const offline = await startOfflineServer(dir, [limited, limited, limited, limited, limited, limited], {
          auto: { when: (r) => !r.hasTools && r.messageCount <= 1 && r.index === 0 && scenario.key === 'opencode' },
        });
        try {
          const began = Date.now();
          const result = await recordCliRun(scenario, dir, ws, offline, 100_000);
          const out = 'test/runners/cli/recordings';
          writeFileSync(join(out, `${scenario.key}-429.stdout.jsonl`), result.stdout);
          writeFileSync(join(out, `${scenario.key}-429.stderr.txt`), result.stderr);
          console.log(
            scenario.key,
            'exit',
            result.code,
            'ms',
            Date.now() - began,
            'requests',
            offline.server.requests.length,
            '\n',
            result.stdout.slice(-2500),
            '\nSTDERR',
            result.stderr.slice(-1500),
          );
        } finally {
          await offline.close();
        }
      },
      150_000,
    );
  }
});
