import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import { bodyOf, postJson, postSse } from './wire.js';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const anthropic = (stream = false): Record<string, unknown> => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 10,
  stream,
  messages: [{ role: 'user', content: 'hi' }],
});
const chat = (stream = false): Record<string, unknown> => ({
  model: 'gpt-4.1',
  stream,
  messages: [{ role: 'user', content: 'hi' }],
});
const responses = (stream = false): Record<string, unknown> => ({ model: 'gpt-5.5', stream, input: 'hi' });
const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

describe('scripted errors', () => {
  it('answers 429 with the reset headers and each API’s own error body', async () => {
    const reset = '2026-12-01T00:00:30Z';
    const limited = {
      error: { status: 429, headers: { 'retry-after': '30', 'anthropic-ratelimit-requests-reset': reset } },
    };
    server.script([limited, limited, limited, limited]);

    const a = await postJson(`${server.url}/v1/messages`, anthropic(true));
    expect(a.status).toBe(429);
    expect(a.headers.get('retry-after')).toBe('30');
    expect(a.headers.get('anthropic-ratelimit-requests-reset')).toBe(reset);
    expect(await bodyOf(a)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringContaining('rate limit') },
    });

    const c = await postJson(`${server.url}/v1/chat/completions`, chat(true));
    expect(c.status).toBe(429);
    expect(await bodyOf(c)).toEqual({
      error: { message: expect.any(String), type: 'requests', param: null, code: 'rate_limit_exceeded' },
    });

    const r = await postJson(`${server.url}/v1/responses`, responses(true));
    expect(r.status).toBe(429);
    expect((await bodyOf(r)).error.code).toBe('rate_limit_exceeded');

    const g = await postJson(`${server.url}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`, gemini);
    expect(g.status).toBe(429);
    expect(await bodyOf(g)).toEqual({
      error: {
        code: 429,
        message: expect.any(String),
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '30s' }],
      },
    });
    expect(server.requests.map((q) => q.status)).toEqual([429, 429, 429, 429]);
  });

  it('answers 401 and 500 in the API’s shape, and a scripted body verbatim', async () => {
    server.script([
      { error: { status: 401 } },
      { error: { status: 500 } },
      { error: { status: 401 } },
      { error: { status: 503, body: 'upstream gone' } },
    ]);
    const unauthorized = await postJson(`${server.url}/v1/messages`, anthropic());
    expect(unauthorized.status).toBe(401);
    expect((await bodyOf(unauthorized)).error.type).toBe('authentication_error');
    const failed = await postJson(`${server.url}/v1/messages`, anthropic());
    expect(failed.status).toBe(500);
    expect((await bodyOf(failed)).error.type).toBe('api_error');
    const geminiAuth = await postJson(`${server.url}/v1beta/models/gemini-2.5-pro:generateContent`, gemini);
    expect((await bodyOf(geminiAuth)).error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });
    const raw = await postJson(`${server.url}/v1/chat/completions`, chat());
    expect(raw.status).toBe(503);
    expect(await raw.text()).toBe('upstream gone');
  });
});

describe('stalls', () => {
  it('a stall without `then` sends nothing and drops the connection after the wait', async () => {
    server.script([{ stall: 300 }]);
    const started = performance.now();
    await expect(postJson(`${server.url}/v1/chat/completions`, chat(true))).rejects.toThrow();
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(server.requests[0]?.status).toBe(0);
  });

  it('a stall with `then` answers late', async () => {
    server.script([{ stall: 300, then: { text: 'late' } }]);
    const started = performance.now();
    const body = await bodyOf(postJson(`${server.url}/v1/messages`, anthropic()));
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(body.content).toEqual([{ type: 'text', text: 'late' }]);
  });

  it('a mid-stream stall sends the headers and the first event, then hangs', async () => {
    server.script([{ stall: 60_000, midStream: true }]);
    const response = await postJson(`${server.url}/v1/messages`, anthropic(true));
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^event: message_start\n/);
    const next = await Promise.race([
      reader.read().then(() => 'data'),
      new Promise((resolve) => setTimeout(() => resolve('silence'), 300)),
    ]);
    expect(next).toBe('silence');
    const closing = performance.now();
    await server.close(); // ends the stall at once
    expect(performance.now() - closing).toBeLessThan(2_000);
    await expect(reader.read()).rejects.toThrow();
  });
});

describe('models, ids and the script', () => {
  it('answers as another model when the turn says so', async () => {
    server.script([
      { model: 'claude-haiku-4-5', text: 'hi' },
      { model: 'gpt-4o-mini', text: 'hi' },
      { model: 'gpt-5-mini', text: 'hi' },
      { model: 'gemini-2.5-flash', text: 'hi' },
    ]);
    const { events } = await postSse(`${server.url}/v1/messages`, anthropic(true));
    expect(events[0]?.json.message.model).toBe('claude-haiku-4-5');
    expect((await bodyOf(postJson(`${server.url}/v1/chat/completions`, chat()))).model).toBe('gpt-4o-mini');
    const { events: r } = await postSse(`${server.url}/v1/responses`, responses(true));
    expect(r.at(-1)?.json.response.model).toBe('gpt-5-mini');
    expect(
      (await bodyOf(postJson(`${server.url}/v1beta/models/gemini-2.5-pro:generateContent`, gemini))).modelVersion,
    ).toBe('gemini-2.5-flash');
    expect(server.requests.map((q) => q.model)).toEqual(['claude-sonnet-4-5', 'gpt-4.1', 'gpt-5.5', 'gemini-2.5-pro']);
  });

  it('answers 500 "script exhausted" past the script, and records the request', async () => {
    server.script([{ text: 'only one' }]);
    expect((await postJson(`${server.url}/v1/messages`, anthropic())).status).toBe(200);
    const extra = await postJson(`${server.url}/v1/messages`, anthropic());
    expect(extra.status).toBe(500);
    expect((await bodyOf(extra)).error.message).toMatch(
      /script exhausted.*request #1 \(anthropic \/v1\/messages, model claude-sonnet-4-5\): no turns left/,
    );
    expect(server.requests.map((q) => q.answeredBy)).toEqual(['turn', 'exhausted']);
  });

  it('says so when pending turns exist but none accepts the request', async () => {
    server.script([{ when: (r) => r.isToolResult, text: 'after tools' }]);
    const response = await postJson(`${server.url}/v1/chat/completions`, chat());
    expect((await bodyOf(response)).error.message).toMatch(
      /script exhausted.*1 pending turn\(s\), none whose `when` accepts it/,
    );
    expect(server.pending).toBe(1);
  });

  it('makes ids unique across two server runs', async () => {
    const other = await startModelServer();
    try {
      const call = { toolCalls: [{ name: 'write_file', args: {} }] };
      server.script([call]);
      other.script([call]);
      const one = await bodyOf(postJson(`${server.url}/v1/messages`, anthropic()));
      const two = await bodyOf(postJson(`${other.url}/v1/messages`, anthropic()));
      expect(one.id).not.toBe(two.id);
      expect(one.content[0].id).not.toBe(two.content[0].id);
      server.script([call]);
      other.script([call]);
      const r1 = await bodyOf(postJson(`${server.url}/v1/responses`, responses()));
      const r2 = await bodyOf(postJson(`${other.url}/v1/responses`, responses()));
      expect(r1.id).not.toBe(r2.id);
      expect(r1.output[0].call_id).not.toBe(r2.output[0].call_id);
    } finally {
      await other.close();
    }
  });

  it('takes the first pending turn whose `when` accepts the request, and builds dynamic turns from it', async () => {
    server.script([
      { when: (r) => r.isToolResult, text: 'saw the result' },
      (r) => ({ text: `you said ${r.lastText}` }),
      { when: (r) => r.model === 'special', reply: (r) => ({ text: `special ${r.messageCount}` }) },
    ]);
    const first = await bodyOf(postJson(`${server.url}/v1/chat/completions`, chat()));
    expect(first.choices[0].message.content).toBe('you said hi');
    const special = await bodyOf(postJson(`${server.url}/v1/chat/completions`, { ...chat(), model: 'special' }));
    expect(special.choices[0].message.content).toBe('special 1');
    const tool = await bodyOf(
      postJson(`${server.url}/v1/chat/completions`, {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'c', content: 'r' },
        ],
      }),
    );
    expect(tool.choices[0].message.content).toBe('saw the result');
    expect(server.requests.map((q) => q.turn)).toEqual([1, 2, 0]);
  });

  it('answers tool-less side requests automatically without using turns (opencode’s title request)', async () => {
    server.script([{ text: 'main' }], { auto: { text: 'Fix the bug' } });
    const title = await bodyOf(postJson(`${server.url}/v1/chat/completions`, chat()));
    expect(title.choices[0].message.content).toBe('Fix the bug');
    const main = await bodyOf(
      postJson(`${server.url}/v1/chat/completions`, {
        ...chat(),
        tools: [{ type: 'function', function: { name: 'bash' } }],
      }),
    );
    expect(main.choices[0].message.content).toBe('main');
    expect(server.pending).toBe(0);
  });

  it('waitForRequests resolves at the count and names what arrived on timeout', async () => {
    server.script([{ text: 'a' }]);
    const waiting = server.waitForRequests(1);
    await postJson(`${server.url}/v1/messages`, anthropic());
    expect((await waiting).map((r) => r.api)).toEqual(['anthropic']);
    await expect(server.waitForRequests(3, 100)).rejects.toThrow(
      /waited 100 ms for 3 model request\(s\), got 1 \(#0 anthropic claude-sonnet-4-5\)/,
    );
  });

  it('refuses a body that is not JSON with 400, and a turn that says nothing at script()', async () => {
    const response = await fetch(`${server.url}/v1/messages`, { method: 'POST', body: '{nope' });
    expect(response.status).toBe(400);
    expect((await bodyOf(response)).error.message).toMatch(/not JSON/);
    expect(server.requests[0]?.answeredBy).toBe('invalid');
    expect(() => server.script([{ txt: 'typo' } as never])).toThrow(/turn 0 has none of text, toolCalls/);
  });

  it('reads gzip-compressed request bodies', async () => {
    server.script([{ text: 'unzipped' }]);
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify(chat())),
    });
    expect((await bodyOf(response)).choices[0].message.content).toBe('unzipped');
    expect(server.requests[0]?.model).toBe('gpt-4.1');
  });

  it('answers 404 naming an unknown route', async () => {
    const response = await fetch(`${server.url}/v2/unknown`);
    expect(response.status).toBe(404);
    expect((await bodyOf(response)).error.message).toBe('model-server: no route for GET /v2/unknown');
  });
});
