import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';
import type { SseEvent } from './wire.js';
import { bodyOf, postJson, postSse } from './wire.js';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const shell = {
  type: 'function',
  name: 'shell',
  parameters: { type: 'object', properties: { command: { type: 'array' } } },
  strict: false,
};
const applyPatch = {
  type: 'custom',
  name: 'apply_patch',
  description: 'patch',
  format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' },
};

function collapse(events: SseEvent[]): string[] {
  // the sequence without repeated deltas, to compare with the documented order
  return events.map((e) => e.event ?? '').filter((name, i, all) => !(name.endsWith('.delta') && all[i - 1] === name));
}

describe('OpenAI Responses API', () => {
  it('streams a text answer as the documented event sequence', async () => {
    server.script([{ text: 'Done: wrote hello.txt and ran the tests.' }]);
    const { events } = await postSse(`${server.url}/v1/responses`, {
      model: 'gpt-5.5',
      instructions: 'You are codex.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'sandbox rules' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'write hello.txt' }] },
      ],
      tools: [shell],
      stream: true,
    });
    expect(collapse(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    for (const e of events) expect(e.json.type).toBe(e.event);
    expect(events.map((e) => e.json.sequence_number)).toEqual(events.map((_, i) => i));

    const created = events[0]?.json.response;
    expect(created).toMatchObject({
      object: 'response',
      status: 'in_progress',
      model: 'gpt-5.5',
      output: [],
      usage: null,
      instructions: 'You are codex.',
    });
    expect(created.id).toMatch(/^resp_/);
    const added = events[2]?.json;
    expect(added).toMatchObject({
      output_index: 0,
      item: { type: 'message', role: 'assistant', status: 'in_progress', content: [] },
    });
    const itemId = added.item.id as string;
    expect(events[3]?.json).toMatchObject({
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    });
    const deltas = events.filter((e) => e.event === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(1);
    for (const d of deltas) expect(d.json).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0 });
    expect(deltas.map((d) => d.json.delta as string).join('')).toBe('Done: wrote hello.txt and ran the tests.');
    expect(events.find((e) => e.event === 'response.output_text.done')?.json.text).toBe(
      'Done: wrote hello.txt and ran the tests.',
    );
    const done = events.find((e) => e.event === 'response.output_item.done')?.json.item;
    expect(done).toEqual({
      id: itemId,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [
        { type: 'output_text', text: 'Done: wrote hello.txt and ran the tests.', annotations: [], logprobs: [] },
      ],
    });

    const completed = events.at(-1)?.json.response;
    expect(completed).toMatchObject({ id: created.id, status: 'completed', model: 'gpt-5.5', output: [done] });
    expect(completed.usage).toEqual({
      input_tokens: expect.any(Number),
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: expect.any(Number),
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: completed.usage.input_tokens + completed.usage.output_tokens,
    });
    expect(server.requests[0]).toMatchObject({
      api: 'responses',
      system: 'You are codex.\nsandbox rules',
      lastText: 'write hello.txt',
      toolNames: ['shell'],
    });
  });

  it('streams a function call and takes its function_call_output back', async () => {
    server.script([
      { toolCalls: [{ name: 'shell', args: { command: ['bash', '-lc', 'echo hi > hello.txt'] } }] },
      { when: (r) => r.isToolResult, text: 'Created hello.txt.' },
    ]);
    const { events } = await postSse(`${server.url}/v1/responses`, {
      model: 'gpt-5.5',
      input: 'make hello.txt',
      tools: [shell],
      stream: true,
    });
    expect(collapse(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const added = events[2]?.json.item;
    expect(added).toMatchObject({ type: 'function_call', status: 'in_progress', name: 'shell', arguments: '' });
    expect(added.id).toMatch(/^fc_/);
    expect(added.call_id).toMatch(/^call_/);
    const args = events
      .filter((e) => e.event === 'response.function_call_arguments.delta')
      .map((e) => e.json.delta as string)
      .join('');
    const argsDone = events.find((e) => e.event === 'response.function_call_arguments.done')?.json;
    expect(argsDone).toMatchObject({ item_id: added.id, output_index: 0, name: 'shell', arguments: args });
    expect(JSON.parse(args)).toEqual({ command: ['bash', '-lc', 'echo hi > hello.txt'] });
    const item = events.find((e) => e.event === 'response.output_item.done')?.json.item;
    expect(item).toEqual({
      id: added.id,
      type: 'function_call',
      status: 'completed',
      arguments: args,
      call_id: added.call_id,
      name: 'shell',
    });
    expect(events.at(-1)?.json.response.output).toEqual([item]);

    const { events: after } = await postSse(`${server.url}/v1/responses`, {
      model: 'gpt-5.5',
      tools: [shell],
      stream: true,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'make hello.txt' }] },
        { type: 'function_call', call_id: added.call_id, name: 'shell', arguments: args },
        { type: 'function_call_output', call_id: added.call_id, output: 'exit 0' },
      ],
    });
    expect(after.at(-1)?.json.response.output[0].content[0].text).toBe('Created hello.txt.');
    expect(server.requests[1]).toMatchObject({
      isToolResult: true,
      toolResults: [{ callId: added.call_id, output: 'exit 0' }],
    });
  });

  it('calls a custom (free-form) tool as a custom_tool_call with raw input', async () => {
    const patch = '*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n';
    server.script([{ toolCalls: [{ name: 'apply_patch', args: patch }] }]);
    const { events } = await postSse(`${server.url}/v1/responses`, {
      model: 'gpt-5.5',
      input: 'x',
      tools: [shell, applyPatch],
      stream: true,
    });
    expect(collapse(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const item = events.find((e) => e.event === 'response.output_item.done')?.json.item;
    expect(item).toMatchObject({
      type: 'custom_tool_call',
      status: 'completed',
      name: 'apply_patch',
      input: patch,
      call_id: expect.stringMatching(/^call_/),
    });
    const streamed = events
      .filter((e) => e.event === 'response.custom_tool_call_input.delta')
      .map((e) => e.json.delta as string)
      .join('');
    expect(streamed).toBe(patch);
  });

  it('answers a non-streaming request with the response object', async () => {
    server.script([{ text: 'hi', toolCalls: [{ name: 'shell', args: { command: ['ls'] } }] }]);
    const body = await bodyOf(postJson(`${server.url}/responses`, { model: 'gpt-5.5', input: 'x', tools: [shell] }));
    expect(body).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-5.5' });
    expect(body.output.map((o: { type: string }) => o.type)).toEqual(['message', 'function_call']);
    expect(body.usage.total_tokens).toBeGreaterThan(0);
  });
});
