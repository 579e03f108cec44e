// The wire format proven with a real client: the Vercel AI SDK providers gaffer's own agent uses.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../support/model-server/index.js';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const providers: Record<string, (model: string) => LanguageModel> = {
  'Anthropic Messages': (model) => createAnthropic({ baseURL: `${server.url}/v1`, apiKey: 'test-key' })(model),
  'OpenAI-compatible chat': (model) =>
    createOpenAICompatible({ name: 'local', baseURL: `${server.url}/v1`, apiKey: 'test-key', includeUsage: true })(
      model,
    ),
};

function writeTool(written: unknown[]) {
  return {
    write_file: tool({
      description: 'write a file',
      inputSchema: jsonSchema<{ path: string; content: string }>({
        type: 'object',
        properties: { path: { type: 'string' }, content: { type: 'string' } },
        required: ['path', 'content'],
      }),
      execute: (input) => {
        written.push(input);
        return Promise.resolve(`wrote ${input.path}`);
      },
    }),
  };
}

// an explicit cap: the Anthropic provider warns about unknown model ids otherwise
const common = { maxOutputTokens: 1024 };

const editScript = [
  { toolCalls: [{ name: 'write_file', args: { path: 'hello.txt', content: 'hi there' } }] },
  { when: (r: { isToolResult: boolean }) => r.isToolResult, text: 'Wrote hello.txt.' },
];

describe.each(Object.keys(providers))('AI SDK over %s', (name) => {
  const model = (id: string): LanguageModel => (providers[name] as (model: string) => LanguageModel)(id);

  it('runs a streamed tool loop: the tool call executes, its result goes back, the final text arrives', async () => {
    server.script(editScript);
    const written: unknown[] = [];
    const result = streamText({
      ...common,
      model: model('scripted-1'),
      tools: writeTool(written),
      system: 'be brief',
      prompt: 'write hello.txt',
      stopWhen: stepCountIs(5),
    });
    expect(await result.text).toBe('Wrote hello.txt.');
    expect(written).toEqual([{ path: 'hello.txt', content: 'hi there' }]);
    const usage = await result.totalUsage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect((await result.response).modelId).toBe('scripted-1');
    expect(server.requests.map((r) => [r.stream, r.isToolResult, r.toolNames])).toEqual([
      [true, false, ['write_file']],
      [true, true, ['write_file']],
    ]);
    expect(server.requests[1]?.toolResults[0]?.output).toContain('wrote hello.txt');
    expect(server.requests[0]?.system).toBe('be brief');
  });

  it('runs the same loop without streaming', async () => {
    server.script(editScript);
    const written: unknown[] = [];
    const result = await generateText({
      ...common,
      model: model('scripted-1'),
      tools: writeTool(written),
      prompt: 'write hello.txt',
      stopWhen: stepCountIs(5),
    });
    expect(result.text).toBe('Wrote hello.txt.');
    expect(result.steps).toHaveLength(2);
    expect(written).toHaveLength(1);
    expect(server.requests.map((r) => r.stream)).toEqual([false, false]);
  });

  it('reports the substituted model the server answered as', async () => {
    server.script([{ model: 'other-model', text: 'hi' }]);
    const result = await generateText({ ...common, model: model('asked-model'), prompt: 'hi' });
    expect(result.response.modelId).toBe('other-model');
    expect(server.requests[0]?.model).toBe('asked-model');
  });

  it('surfaces a 429 as an API call error with its status and reset headers', async () => {
    server.script([
      {
        error: {
          status: 429,
          headers: { 'retry-after': '30', 'anthropic-ratelimit-requests-reset': '2026-12-01T00:00:30Z' },
        },
      },
    ]);
    const error: unknown = await generateText({ ...common, model: model('m'), prompt: 'hi', maxRetries: 0 }).catch(
      (e: unknown) => e,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    const call = error as APICallError;
    expect(call.statusCode).toBe(429);
    expect(call.responseHeaders?.['retry-after']).toBe('30');
    expect(call.isRetryable).toBe(true);
  });

  it('surfaces a 401 as a non-retryable API call error', async () => {
    server.script([{ error: { status: 401 } }]);
    const error = (await generateText({ ...common, model: model('m'), prompt: 'hi', maxRetries: 0 }).catch(
      (e: unknown) => e,
    )) as APICallError;
    expect(error.statusCode).toBe(401);
    expect(error.isRetryable).toBe(false);
  });
});
