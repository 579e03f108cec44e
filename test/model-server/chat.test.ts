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

const tools = [{ type: 'function', function: { name: 'write_file', parameters: { type: 'object', properties: {} } } }];

describe('OpenAI Chat Completions', () => {
  it('streams tool calls as chat.completion.chunk deltas, a finish chunk, a usage chunk and [DONE]', async () => {
    server.script([
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'a.txt', content: 'one two three four' } },
          { name: 'write_file', args: { path: 'b.txt', content: 'x' } },
        ],
      },
    ]);
    const { events } = await postSse(`${server.url}/v1/chat/completions`, {
      model: 'qwen3-coder',
      stream: true,
      stream_options: { include_usage: true },
      tools,
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'write two files' },
      ],
    });
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => e.json);
    const ids = new Set(chunks.map((c) => c.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^chatcmpl-/);
    for (const c of chunks)
      expect(c).toMatchObject({ object: 'chat.completion.chunk', model: 'qwen3-coder', created: expect.any(Number) });

    const usageChunk = chunks.at(-1);
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual(
      expect.objectContaining({
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        total_tokens: expect.any(Number),
      }),
    );
    const withChoices = chunks.slice(0, -1);
    for (const c of withChoices) expect(c.usage).toBeNull();
    expect(withChoices[0].choices[0].delta).toMatchObject({ role: 'assistant', content: '' });
    const last = withChoices.at(-1).choices[0];
    expect(last).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
    for (const c of withChoices.slice(0, -1)) expect(c.choices[0].finish_reason).toBeNull();

    // reassemble like a client does: by index; id, type and name come once, arguments in pieces
    const calls: { id?: string; name?: string; arguments: string }[] = [];
    for (const c of withChoices) {
      for (const tc of c.choices[0].delta.tool_calls ?? []) {
        const slot = (calls[tc.index] ??= { arguments: '' });
        if (tc.id !== undefined) {
          expect(tc.type).toBe('function');
          slot.id = tc.id;
          slot.name = tc.function.name;
        }
        slot.arguments += tc.function.arguments;
      }
    }
    expect(calls.map((c) => c.name)).toEqual(['write_file', 'write_file']);
    expect(calls[0]?.id).toMatch(/^call_/);
    expect(calls[0]?.id).not.toBe(calls[1]?.id);
    expect(JSON.parse(calls[0]?.arguments ?? '')).toEqual({ path: 'a.txt', content: 'one two three four' });
    expect(JSON.parse(calls[1]?.arguments ?? '')).toEqual({ path: 'b.txt', content: 'x' });
    const argumentChunks = withChoices.filter(
      (c) => c.choices[0].delta.tool_calls?.[0]?.index === 0 && c.choices[0].delta.tool_calls[0].id === undefined,
    );
    expect(argumentChunks.length).toBeGreaterThan(1);
    expect(server.requests[0]).toMatchObject({ api: 'chat', system: 'sys', toolNames: ['write_file'], stream: true });
  });

  it('streams text without a usage chunk unless include_usage is asked', async () => {
    server.script([{ text: 'All done, the tests pass.' }]);
    const { events } = await postSse(`${server.url}/chat/completions`, {
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const chunks = events.slice(0, -1).map((e) => e.json);
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('All done, the tests pass.');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    for (const c of chunks) expect('usage' in c).toBe(false);
  });

  it('accepts role:"tool" results and answers a non-streaming request with the completion JSON', async () => {
    server.script([{ when: (r) => r.isToolResult, text: 'The file says hi.' }]);
    const response = await postJson(`${server.url}/v1/chat/completions`, {
      model: 'gpt-4.1',
      tools,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'read it' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'hi' },
      ],
    });
    const completion = await bodyOf(response);
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-4.1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'The file says hi.' }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        total_tokens: expect.any(Number),
      },
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(server.requests[0]).toMatchObject({ isToolResult: true, toolResults: [{ callId: 'call_1', output: 'hi' }] });
  });

  it('sends a non-streaming tool call with null content and JSON string arguments', async () => {
    server.script([{ toolCalls: [{ name: 'edit', args: '{"broken": ' }] }]);
    const completion = await bodyOf(
      postJson(`${server.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    );
    expect(completion.choices[0].finish_reason).toBe('tool_calls');
    expect(completion.choices[0].message.content).toBeNull();
    expect(completion.choices[0].message.tool_calls).toEqual([
      { id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'edit', arguments: '{"broken": ' } },
    ]);
  });
});
