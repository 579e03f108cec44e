import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call } from '../reliability/helpers.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { HAS_REDIS, startCoordinator, startNode, startRedis, waitFor } from './harness.js';

/**
 * The coordinator's guard is its own: a node's `sandboxed` is a claim on its worker row, never what
 * decides whether the coordinator's own verification of the node's work runs sandboxed.
 */
describe.skipIf(!HAS_REDIS || !probeSandbox().available)(
  "the coordinator's guard (needs redis-server and a working bubblewrap)",
  () => {
    it("code a worker planted through a node with its sandbox off cannot read the coordinator's secret in the coordinator's verification", async () => {
      const redis = await startRedis();
      // the coordinator keeps the default policy (sandbox: auto, bubblewrap works here)
      const server = await startCoordinator(redis.url);
      // an operator's node with its sandbox off: its worker rows say sandboxed: false
      await startNode(redis.url, 'open', { env: { GAFFER_SANDBOX: 'off' } });
      const secret = join(server.dataDir, 'secret');
      expect(existsSync(secret)).toBe(true);
      const loot = join(tempDir('gaffer-loot-'), 'stolen');
      const ws = makeWorkspace({ 'check.sh': 'exit 0\n', 'a.txt': 'a\n' }, { git: true });
      // the worker plants a check that copies the coordinator's API secret out, and passes only when it could
      const planted = `cat '${secret}' > '${loot}' && grep -q . '${loot}'`;
      const res = await call(server.url, 'POST', '/api/jobs', {
        workspace: ws,
        runner: 'shell',
        verify: 'sh check.sh',
        tasks: [
          { name: 'plant', instruction: 'plant', command: `printf '%s\\n' "${planted}" > check.sh; echo b > a.txt` },
        ],
      });
      expect(res.status).toBe(202);
      const answer = (await waitFor(server, res.json.id, 'done', 60)).state;
      // the node's word is on its row only
      expect(answer.result.workers[0]).toMatchObject({ status: 'done', sandboxed: false });
      expect(readFileSync(join(ws, 'check.sh'), 'utf8')).toContain(secret);
      // the planted read ran under the coordinator's sandbox: nothing left the coordinator
      expect(existsSync(loot) ? readFileSync(loot, 'utf8') : '').toBe('');
      expect(answer.result.verification).toMatchObject({ ran: true, ok: false });
      expect(answer.result.proof.verdict).not.toBe('proved');
      expect(answer.status).not.toBe('done');
    }, 90_000);
  },
);
