import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWorkspace } from '../helpers/temp.js';
import { call } from '../reliability/helpers.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { eventsOf, HAS_REDIS, startCoordinator, startNode, startRedis, waitFor } from './harness.js';

let model: ModelServer;
beforeAll(async () => {
  model = await startModelServer();
});
afterAll(async () => {
  await model.close();
});

/**
 * spec 09 "Semantics kept across the wire": a worker on a node that its provider answers 429 waits
 * for the reset as on one machine — the coordinator holds it and puts it on the queue again — and
 * the job's answer says so.
 */
describe.skipIf(!HAS_REDIS)('a rate-limited worker on a node (needs Debian redis-server; skipped without it)', () => {
  it('a builtin worker on a node answered 429 waits for the reset on the coordinator, is queued again, and finishes; the verdict says so', async () => {
    const endpoint = {
      GAFFER_MODEL_URL: `${model.url}/v1`,
      GAFFER_MODEL_KEY: 'sk-test',
      GAFFER_MODEL: 'qwen3:8b',
      GAFFER_MODEL_API: 'openai',
    };
    const redis = await startRedis();
    const server = await startCoordinator(redis.url, [], endpoint);
    const node = await startNode(redis.url, 'b1', { runners: 'builtin', env: endpoint });
    model.script([
      { error: { status: 429, headers: { 'retry-after': '1' } } },
      { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
      { text: 'Wrote it.\nFiles changed:\nhello.txt' },
    ]);
    const ws = makeWorkspace({ 'a.txt': 'a\n' }, { git: true });
    const res = await call(server.url, 'POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [{ name: 'w', runner: 'builtin', instruction: 'write hello.txt saying hi' }],
    });
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const id = res.json.id as string;
    const waiting = await waitFor(server, id, 'worker:w:rate_limited', 60);
    expect(waiting.state.status).toBe('running');
    const answer = (await waitFor(server, id, 'done', 60)).state;
    if (answer.status !== 'done')
      console.error(
        'rate-limit job',
        JSON.stringify(answer),
        JSON.stringify(await eventsOf(server, id)),
        node.stderr(),
        JSON.stringify(model.requests.map((r) => ({ index: r.index, path: r.path, answeredBy: r.answeredBy }))),
      );
    expect(answer.status, answer.verdict).toBe('done');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(answer.verdict).toContain('reported (not killed): w rate_limited');
    // two turns on the queue, each taken by the node: the 429's and the one after the reset
    const taken = (await eventsOf(server, id)).filter((e) => e.event === 'node' && e.node_event === 'taken');
    expect(taken.map((e) => e.node)).toEqual(['b1', 'b1']);
  }, 90_000);
});
