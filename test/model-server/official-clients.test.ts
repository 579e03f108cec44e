// The wire format proven with the vendors' own SDKs, whose stream accumulators reject events out of order.
// They are not gaffer dependencies: each block runs when its package resolves from the repo, or from the folder
// MODEL_SERVER_CLIENTS names (any folder with a node_modules holding them), and is skipped, saying so, otherwise.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';

async function load(name: string): Promise<any> {
  const roots = [process.cwd(), process.env.MODEL_SERVER_CLIENTS].filter(
    (dir): dir is string => dir !== undefined && dir !== '',
  );
  for (const root of roots) {
    let resolved: string;
    try {
      resolved = createRequire(join(root, 'package.json')).resolve(name);
    } catch {
      continue;
    }
    return import(pathToFileURL(resolved).href);
  }
  return undefined;
}

const openai = await load('openai');
const anthropic = await load('@anthropic-ai/sdk');
const genai = await load('@google/genai');
const ai = await load('ai');
const aiOpenai = await load('@ai-sdk/openai');
const aiGoogle = await load('@ai-sdk/google');
const missing = (name: string, mod: unknown): string =>
  mod === undefined ? ` (skipped: ${name} is not installed; set MODEL_SERVER_CLIENTS to a folder that has it)` : '';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const shell = { type: 'function', name: 'shell', parameters: { type: 'object', properties: {} }, strict: false };

describe.skipIf(openai === undefined)(`openai SDK${missing('openai', openai)}`, () => {
  const client = (): any => new openai.default({ baseURL: `${server.url}/v1`, apiKey: 'test-key', maxRetries: 0 });

  it('responses.stream accumulates text and a function call into the final response', async () => {
    server.script([{ text: 'hello there', toolCalls: [{ name: 'shell', args: { command: ['ls'] } }] }]);
    const stream = client().responses.stream({ model: 'gpt-5.5', input: 'x', tools: [shell] });
    const types = new Set<string>();
    for await (const event of stream) types.add(event.type);
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('hello there');
    expect(final.output[1]).toMatchObject({ type: 'function_call', name: 'shell' });
    expect(JSON.parse(final.output[1].arguments)).toEqual({ command: ['ls'] });
    expect(final.usage.total_tokens).toBeGreaterThan(0);
    expect(types).toContain('response.function_call_arguments.done');
  });

  it('responses.stream accumulates a custom tool call (codex apply_patch)', async () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n';
    server.script([{ toolCalls: [{ name: 'apply_patch', args: patch }] }]);
    const stream = client().responses.stream({
      model: 'gpt-5.5',
      input: 'x',
      tools: [{ type: 'custom', name: 'apply_patch' }],
    });
    for await (const _event of stream);
    const final = await stream.finalResponse();
    expect(final.output[0]).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: patch });
  });

  it('chat.completions.stream accumulates parallel tool calls and usage', async () => {
    server.script([
      {
        text: 'a b c',
        toolCalls: [
          { name: 'f', args: { x: 1 } },
          { name: 'g', args: { y: 2 } },
        ],
      },
    ]);
    const stream = client().chat.completions.stream({
      model: 'gpt-4.1',
      messages: [{ role: 'user', content: 'x' }],
      stream_options: { include_usage: true },
    });
    for await (const _chunk of stream);
    const completion = await stream.finalChatCompletion();
    expect(completion.choices[0].message.content).toBe('a b c');
    expect(
      completion.choices[0].message.tool_calls.map((t: any) => [t.function.name, JSON.parse(t.function.arguments)]),
    ).toEqual([
      ['f', { x: 1 }],
      ['g', { y: 2 }],
    ]);
    expect(completion.usage.total_tokens).toBeGreaterThan(0);
  });
});

describe.skipIf(anthropic === undefined)(`Anthropic SDK${missing('@anthropic-ai/sdk', anthropic)}`, () => {
  const client = (): any => new anthropic.default({ baseURL: server.url, apiKey: 'test-key', maxRetries: 0 });

  it('messages.stream builds the final message with text and tool_use input', async () => {
    server.script([
      { text: 'thinking aloud', toolCalls: [{ name: 'Write', args: { file_path: '/w/a', content: 'a' } }] },
    ]);
    const final = await client()
      .messages.stream({ model: 'claude-scripted', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] })
      .finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'thinking aloud' });
    expect(final.content[1]).toMatchObject({
      type: 'tool_use',
      name: 'Write',
      input: { file_path: '/w/a', content: 'a' },
    });
    expect(final.stop_reason).toBe('tool_use');
  });

  it('turns a 429 into a RateLimitError carrying retry-after, and counts tokens', async () => {
    server.script([{ error: { status: 429, headers: { 'retry-after': '30' } } }]);
    const error = await client()
      .messages.create({ model: 'claude-scripted', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(anthropic.RateLimitError);
    expect(error.headers.get('retry-after')).toBe('30');
    const counted = await client().messages.countTokens({
      model: 'claude-scripted',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });
});

describe.skipIf(genai === undefined)(`Google GenAI SDK${missing('@google/genai', genai)}`, () => {
  const client = (): any => new genai.GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: server.url } });

  it('generateContentStream yields the text and the function call', async () => {
    server.script([{ text: 'one two three', toolCalls: [{ name: 'write_file', args: { file_path: '/x' } }] }]);
    const stream = await client().models.generateContentStream({
      model: 'gemini-2.5-pro',
      contents: 'x',
      config: { tools: [{ functionDeclarations: [{ name: 'write_file' }] }] },
    });
    let text = '';
    const calls: unknown[] = [];
    for await (const chunk of stream) {
      for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
        if (typeof part.text === 'string') text += part.text;
        if (part.functionCall) calls.push(part.functionCall);
      }
    }
    expect(text).toBe('one two three');
    expect(calls).toEqual([{ name: 'write_file', args: { file_path: '/x' } }]);
    expect(server.requests[0]?.query).toEqual({ alt: 'sse' });
  });

  it('surfaces a 429 with its status', async () => {
    server.script([{ error: { status: 429, headers: { 'retry-after': '7' } } }]);
    const error = await client()
      .models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' })
      .catch((e: unknown) => e);
    expect(error.status).toBe(429);
    expect(error.message).toContain('RESOURCE_EXHAUSTED');
  });
});

describe.skipIf(ai === undefined || aiOpenai === undefined || aiGoogle === undefined)(
  `AI SDK over Responses and Gemini${missing('@ai-sdk/openai', aiOpenai)}${missing('@ai-sdk/google', aiGoogle)}`,
  () => {
    const models: Record<string, () => unknown> = {
      responses: () => aiOpenai.createOpenAI({ baseURL: `${server.url}/v1`, apiKey: 'k' }).responses('gpt-5.5'),
      gemini: () =>
        aiGoogle.createGoogleGenerativeAI({ baseURL: `${server.url}/v1beta`, apiKey: 'k' })('gemini-2.5-pro'),
    };
    it.each(Object.keys(models))('runs a streamed tool loop over %s', async (kind) => {
      server.script([
        { toolCalls: [{ name: 'write_file', args: { path: 'a.txt' } }] },
        { when: (r) => r.isToolResult, text: 'done' },
      ]);
      const written: unknown[] = [];
      const tools = {
        write_file: ai.tool({
          inputSchema: ai.jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
          execute: (input: unknown) => {
            written.push(input);
            return Promise.resolve('ok');
          },
        }),
      };
      const result = ai.streamText({ model: models[kind]?.(), tools, prompt: 'x', stopWhen: ai.stepCountIs(5) });
      expect(await result.text).toBe('done');
      expect(written).toEqual([{ path: 'a.txt' }]);
    });
  },
);
