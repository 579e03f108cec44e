import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { rateLimitDelayS } from '../../src/engine/execution/rate-limit.js';
import { createRunners } from '../../src/runners/index.js';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { resultOf } from '../helpers/answer.js';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

describe('rate limits wait, never spill (spec 04)', () => {
  it('backs off from 60 s doubling to 30 min, or takes the reset time the provider names', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => rateLimitDelayS(n, null))).toEqual([60, 120, 240, 480, 960, 1800]);
    expect(rateLimitDelayS(3, 17)).toBe(17);
  });

  it('a builtin worker answered 429 waits for the reset, is requeued, finishes the work, and the verdict says so', async () => {
    const engine = await Engine.open({
      dataDir: join(tempDir(), 'data'),
      runners: createRunners({
        sandbox: 'off',
        builtin: { endpoint: { api: 'openai-compatible', url: `${server.url}/v1`, key: 'sk-test', model: 'qwen3:8b' } },
      }),
    });
    try {
      server.script([
        { error: { status: 429, headers: { 'retry-after': '1' } } },
        { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi\n' } }] },
        { text: 'Wrote it.\nFiles changed:\nhello.txt' },
      ]);
      const ws = makeWorkspace({ 'a.txt': 'a' });
      const { job } = engine.submit({
        workspace: ws,
        verify: 'none',
        tasks: [{ name: 'w', runner: 'builtin', instruction: 'write hello.txt saying hi' }],
      });
      const waiting = await engine.waitFor(job.id, 'worker:w:rate_limited', 30);
      expect(waiting.met).toBe(true);
      expect(waiting.state.status).toBe('running');
      expect(waiting.state.progress?.w).toMatchObject({ state: 'rate_limited' });
      await engine.settled(job.id);
      const final = engine.get(job.id);
      expect(final.status).toBe('done');
      expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hi\n');
      expect(final.verdict).toContain('reported (not killed): w rate_limited');
      expect(resultOf(final).workers[0]).toMatchObject({ status: 'done', state: 'rate_limited' });
    } finally {
      await engine.close();
    }
  });
});
