import { describe, expect, it } from 'vitest';
import { HEARTBEAT_MS } from '../../src/interfaces/http/sse.js';
import { makeWorkspace } from '../helpers/temp.js';
import { openEngine, openStream, serveEngine, shellTask } from './helpers.js';

describe('SSE heartbeats', () => {
  it('an idle stream gets a comment line every 15 s (job stream and all-jobs stream)', async () => {
    expect(HEARTBEAT_MS).toBe(15_000);
    const engine = await openEngine();
    const server = await serveEngine(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const { json: job } = await server.call('POST', '/api/jobs', {
      workspace: ws,
      verify: 'none',
      tasks: [shellTask('sleep 30')],
    });
    const one = openStream(`${server.url}/api/jobs/${job.id}/events?stream=1`);
    const all = openStream(`${server.url}/api/events?stream=1`);
    await one.until((f) => f.some((x) => x.event === 'job' && JSON.parse(x.data).event === 'started'));
    const opened = performance.now();
    const deadline = opened + HEARTBEAT_MS + 3_000;
    while ((one.comments.length === 0 || all.comments.length === 0) && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(one.comments.length).toBeGreaterThanOrEqual(1);
    expect(all.comments.length).toBeGreaterThanOrEqual(1);
    expect(one.comments[0]).toMatch(/^:/);
    expect(one.closed || all.closed).toBe(false);
    one.abort();
    all.abort();
    await Promise.all([one.done, all.done]);
    await server.call('POST', `/api/jobs/${job.id}/cancel`);
    await engine.settled(job.id);
  }, 40_000);
});
