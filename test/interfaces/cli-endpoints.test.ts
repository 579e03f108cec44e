import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CliContext } from '../../src/interfaces/cli/cli-context.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { startModelServer, type ModelRequest, type ModelServer } from '../support/model-server/index.js';

// The config's `models` reach the builtin agent as gaffer itself sets it up: a roster entry that
// names `models.gateway` runs there, with the gateway's own key, while `models.default` serves the rest.

const open: { servers: ModelServer[]; contexts: CliContext[] } = { servers: [], contexts: [] };
afterEach(async () => {
  await Promise.all(open.contexts.splice(0).map((c) => c.close()));
  await Promise.all(open.servers.splice(0).map((s) => s.close()));
});

describe('config models and the builtin agent', () => {
  it("a builtin roster entry's endpoint is the config's models.<name>: its calls go there with that endpoint's key", async () => {
    const [local, gateway] = [await startModelServer(), await startModelServer()];
    open.servers.push(local, gateway);
    const dir = tempDir('gaffer-cli-endpoints-');
    const config = join(dir, 'gaffer.config.json');
    writeFileSync(
      config,
      JSON.stringify({
        sandbox: 'off',
        models: {
          default: { url: `${local.url}/v1`, model: 'local-1' },
          gateway: { url: `${gateway.url}/v1`, key: 'sk-gateway-file-key', model: 'big-1' },
        },
        roster: {
          entries: [
            {
              id: 'mid',
              runner: 'builtin',
              provider: 'gateway',
              billing: 'subscription',
              cost: 'mid',
              tasks: ['fix'],
              endpoint: 'gateway',
            },
          ],
        },
      }),
    );
    const cli = new CliContext({ dataDir: join(dir, 'data'), config });
    open.contexts.push(cli);
    const engine = await cli.engine();
    gateway.script([
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
      tasks: [{ name: 'fx', type: 'fix', instruction: 'write fixed.txt', files: ['fixed.txt'] }],
    });
    await engine.settled(job.id);
    expect(engine.get(job.id).status).toBe('done');
    // the entry names no model: the endpoint's own is asked for
    expect(gateway.requests.map((r) => [r.model, r.headers.authorization])).toEqual([
      ['big-1', 'Bearer sk-gateway-file-key'],
      ['big-1', 'Bearer sk-gateway-file-key'],
    ]);
    expect(local.requests).toHaveLength(0);
  });
});
