import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import {
  OFFLINE_RUN,
  offlineCommand,
  offlineSupport,
  offlineUrl,
  startModelServer,
  type ModelServer,
} from '../support/model-server/index.js';

const support = offlineSupport();
let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
});

// inside the namespace: list the interfaces, then call the model server through the bridge
const probe = `
const { networkInterfaces } = require('node:os');
fetch('${offlineUrl()}/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) })
  .then((r) => r.json())
  .then((j) => console.log(JSON.stringify({ interfaces: Object.keys(networkInterfaces()), text: j.choices[0].message.content })));
`;

function runAsync(file: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe.skipIf(!support.ok)(`offline runs${support.ok ? '' : ` (skipped: ${support.reason})`}`, () => {
  it('a program in a loopback-only namespace reaches the model server through its unix socket, and nothing else is there', async () => {
    const socketPath = join(tempDir('gaffer-ms-'), 'model.sock');
    server = await startModelServer({ socketPath, script: [{ text: 'hello from outside' }] });
    const { file, args } = offlineCommand(socketPath, [process.execPath, '-e', probe]);
    // async: the server answers from this very process
    const run = await runAsync(file, args);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ interfaces: ['lo'], text: 'hello from outside' });
    expect(server.requests).toHaveLength(1);
    await server.close();
    server = undefined;
    expect(existsSync(socketPath)).toBe(false);
  });

  it('passes the command’s exit code through', () => {
    const { file, args } = offlineCommand(join(tempDir('gaffer-ms-'), 'none.sock'), ['sh', '-c', 'exit 7']);
    expect(spawnSync(file, args, { timeout: 30_000 }).status).toBe(7);
  });

  const hostInterfaces = Object.keys(networkInterfaces()).filter((name) => name !== 'lo');
  it.skipIf(hostInterfaces.length === 0)('refuses to run outside a network namespace', () => {
    const run = spawnSync(process.execPath, [OFFLINE_RUN, '--socket', '/nonexistent.sock', '--', 'true'], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/not a loopback-only namespace|cannot bring lo up/);
  });
});
