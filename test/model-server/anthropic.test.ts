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

const tools = [
  {
    name: 'write_file',
    description: 'write',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
];

describe('Anthropic Messages API', () => {
  it('streams a tool call as the documented event sequence and accepts the tool_result', async () => {
    server.script([
      { text: 'Writing it now.', toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi' } }] },
      { text: 'Wrote hello.txt.' },
    ]);
    const { response, events } = await postSse(`${server.url}/v1/messages?beta=true`, {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      stream: true,
      system: [{ type: 'text', text: 'You are a coder.' }],
      tools,
      messages: [{ role: 'user', content: 'write hello.txt' }],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('message_start');
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    for (const e of events) expect(e.json.type).toBe(e.event);

    const start = events[0]?.json.message;
    expect(start).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
    });
    expect(start.id).toMatch(/^msg_/);
    expect(start.usage.input_tokens).toBeGreaterThan(0);

    const starts = events.filter((e) => e.event === 'content_block_start').map((e) => e.json);
    expect(starts).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      {
        type: 'content_block_start',
        index: 1,
        content_block: {
          type: 'tool_use',
          id: expect.stringMatching(/^toolu_[A-Za-z0-9_-]+$/),
          name: 'write_file',
          input: {},
        },
      },
    ]);
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => e.json);
    const text = deltas
      .filter((d) => d.index === 0)
      .map((d) => d.delta.text as string)
      .join('');
    expect(text).toBe('Writing it now.');
    const json = deltas.filter((d) => d.index === 1);
    expect(json.length).toBeGreaterThan(1);
    for (const d of json) expect(d.delta.type).toBe('input_json_delta');
    expect(JSON.parse(json.map((d) => d.delta.partial_json as string).join(''))).toEqual({
      path: 'hello.txt',
      content: 'hi',
    });
    expect(events.filter((e) => e.event === 'content_block_stop').map((e) => e.json.index)).toEqual([0, 1]);
    // each block opens, streams and closes before the next one opens
    const order = events.filter((e) => e.event?.startsWith('content_block')).map((e) => `${e.event}:${e.json.index}`);
    expect(order.indexOf('content_block_stop:0')).toBeLessThan(order.indexOf('content_block_start:1'));
    const messageDelta = events.at(-2)?.json;
    expect(messageDelta).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: expect.any(Number) },
    });

    const toolUseId = starts[1]?.content_block.id as string;
    const second = await postJson(`${server.url}/v1/messages`, {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      tools,
      messages: [
        { role: 'user', content: 'write hello.txt' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: toolUseId, name: 'write_file', input: { path: 'hello.txt' } }],
        },
        { role: 'system', content: 'a reminder in the middle' },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: toolUseId, content: [{ type: 'text', text: 'ok' }] }],
        },
      ],
    });
    expect(second.status).toBe(200);
    const message = await bodyOf(second);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: 'Wrote hello.txt.' }],
    });

    const [first, followUp] = server.requests;
    expect(first).toMatchObject({
      api: 'anthropic',
      path: '/v1/messages',
      query: { beta: 'true' },
      stream: true,
      system: 'You are a coder.',
      toolNames: ['write_file'],
      isToolResult: false,
      lastText: 'write hello.txt',
    });
    expect(followUp).toMatchObject({
      stream: false,
      isToolResult: true,
      lastRole: 'tool',
      system: 'a reminder in the middle',
      toolResults: [{ callId: toolUseId, output: 'ok', isError: false }],
    });
    expect(server.pending).toBe(0);
  });

  it('answers a non-streaming request with the Message JSON, tool_use input as an object', async () => {
    server.script([
      {
        toolCalls: [
          { name: 'run', args: { cmd: 'ls' } },
          { name: 'run', args: { cmd: 'pwd' } },
        ],
      },
    ]);
    const response = await postJson(`${server.url}/messages`, {
      model: 'claude-haiku-4-5',
      max_tokens: 10,
      system: 'sys',
      messages: [{ role: 'user', content: 'go' }],
    });
    const message = await bodyOf(response);
    expect(message.id).toMatch(/^msg_/);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'run', input: { cmd: 'ls' } },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'run', input: { cmd: 'pwd' } },
    ]);
    expect(message.content[0].id).not.toBe(message.content[1].id);
    expect(message.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(server.requests[0]?.system).toBe('sys');
  });

  it('answers the HEAD / warm-up, GET / and count_tokens without using the script', async () => {
    server.script([{ text: 'unused' }]);
    const head = await fetch(`${server.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect((await fetch(`${server.url}/`)).status).toBe(200);
    const count = await postJson(`${server.url}/v1/messages/count_tokens`, {
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(await bodyOf(count)).toEqual({ input_tokens: expect.any(Number) });
    expect(server.requests).toEqual([]);
    expect(server.pending).toBe(1);
    expect(server.hits.map((h) => `${h.method} ${h.path} ${h.status}`)).toEqual([
      'HEAD / 200',
      'GET / 200',
      'POST /v1/messages/count_tokens 200',
    ]);
  });
});
