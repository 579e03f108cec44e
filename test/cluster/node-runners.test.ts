import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { call, eventually } from '../reliability/helpers.js';
import { eventsOf, HAS_REDIS, startCoordinator, startNode, startRedis, waitFor } from './harness.js';

/** A `codex` of the test's own: it says its version, and as a worker writes one file. */
function fakeCodex(): string {
  const bin = tempDir('gaffer-fake-codex-');
  writeFileSync(
    join(bin, 'codex'),
    '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "codex-cli 0.171.0"; exit 0; fi\necho "from codex" > out.txt\n',
    { mode: 0o755 },
  );
  return bin;
}

/** issue "a cluster an operator can trust", point 5: a runner installed only on nodes is usable. */
describe.skipIf(!HAS_REDIS)('runners only the nodes have (needs redis-server)', () => {
  it('the coordinator takes a job for a runner it lacks once a live node announces it, and refuses it, naming why, while none does', async () => {
    const redis = await startRedis();
    // enabled here, but not installed: no codex on the coordinator's PATH
    const server = await startCoordinator(redis.url, [], { GAFFER_ENABLED_RUNNERS: 'codex', PATH: '/usr/bin:/bin' });
    const ws = makeWorkspace({ 'README.md': 'codex\n' }, { git: true });
    const body = {
      workspace: ws,
      runner: 'codex',
      verify: 'none',
      tasks: [{ name: 'write', instruction: 'write out.txt saying "from codex"' }],
    };
    const refused = await call(server.url, 'POST', '/api/jobs', body);
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('runner_not_installed');
    expect(refused.json.error.message).toContain('no live node of this cluster offers it');
    expect(refused.json.error.field).toBe('tasks[0].runner');
    const node = await startNode(redis.url, 'agents', {
      runners: 'codex',
      env: { GAFFER_ENABLED_RUNNERS: 'codex', PATH: `${fakeCodex()}:${process.env.PATH ?? ''}` },
    });
    let accepted: Awaited<ReturnType<typeof call>> | null = null;
    await eventually(async () => {
      accepted = await call(server.url, 'POST', '/api/jobs', body);
      return accepted.status === 202;
    }, 15_000);
    const id = (accepted as unknown as { json: { id: string } }).json.id;
    const answer = (await waitFor(server, id, 'done', 60)).state;
    expect(answer.status).toBe('done');
    expect(answer.result.workers[0]).toMatchObject({ runner: 'codex', status: 'done' });
    expect(answer.result.changes.added).toEqual(['out.txt']);
    const taken = (await eventsOf(server, id)).filter((e) => e.event === 'node' && e.node_event === 'taken');
    expect(taken.map((e) => e.node)).toEqual(['agents']);
    // a node that stops takes its runners with it
    node.child.kill('SIGTERM');
    await node.exited;
    await eventually(async () => (await call(server.url, 'POST', '/api/jobs', body)).status === 400, 15_000);
  }, 90_000);
});
