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

const tools = [{ functionDeclarations: [{ name: 'write_file', parameters: { type: 'OBJECT', properties: {} } }] }];
const base = (model: string, verb: string): string => `/v1beta/models/${model}:${verb}`;

describe('Gemini v1beta', () => {
  it('streams GenerateContentResponse chunks over SSE (?alt=sse), then takes the functionResponse back', async () => {
    server.script([
      {
        text: 'I will write the file.',
        toolCalls: [{ name: 'write_file', args: { file_path: '/w/hello.txt', content: 'hi' } }],
      },
      { text: 'Done.' },
    ]);
    const { response, events } = await postSse(
      `${server.url}${base('gemini-2.5-pro', 'streamGenerateContent')}?alt=sse`,
      {
        contents: [{ role: 'user', parts: [{ text: 'write hello.txt' }] }],
        systemInstruction: { role: 'user', parts: [{ text: 'You are gemini.' }] },
        tools,
      },
    );
    expect(response.status).toBe(200);
    expect(events.length).toBeGreaterThan(1);
    for (const e of events) {
      expect(e.event).toBeUndefined();
      expect(e.json).toMatchObject({
        candidates: [{ content: { role: 'model', parts: expect.any(Array) }, index: 0 }],
        modelVersion: 'gemini-2.5-pro',
        responseId: expect.any(String),
      });
    }
    const parts = events.flatMap((e) => e.json.candidates[0].content.parts);
    expect(
      parts
        .filter((p: { text?: string }) => p.text !== undefined)
        .map((p: { text: string }) => p.text)
        .join(''),
    ).toBe('I will write the file.');
    const calls = parts.filter((p: { functionCall?: unknown }) => p.functionCall !== undefined);
    expect(calls).toEqual([
      { functionCall: { name: 'write_file', args: { file_path: '/w/hello.txt', content: 'hi' } } },
    ]);
    const finishes = events.map((e) => e.json.candidates[0].finishReason);
    expect(finishes.slice(0, -1).every((f) => f === undefined)).toBe(true);
    expect(finishes.at(-1)).toBe('STOP');
    const usage = events.at(-1)?.json.usageMetadata;
    expect(usage).toMatchObject({
      promptTokenCount: expect.any(Number),
      candidatesTokenCount: expect.any(Number),
      totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount,
    });
    expect(server.requests[0]).toMatchObject({
      api: 'gemini',
      model: 'gemini-2.5-pro',
      stream: true,
      system: 'You are gemini.',
      toolNames: ['write_file'],
      lastText: 'write hello.txt',
    });

    const { events: after } = await postSse(`${server.url}${base('gemini-2.5-pro', 'streamGenerateContent')}?alt=sse`, {
      contents: [
        { role: 'user', parts: [{ text: 'write hello.txt' }] },
        { role: 'model', parts: [{ functionCall: { name: 'write_file', args: {} } }] },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'write_file-1', name: 'write_file', response: { output: 'Wrote 2 bytes' } } },
          ],
        },
      ],
      tools,
    });
    expect(after.map((e) => e.json.candidates[0].content.parts[0].text as string).join('')).toBe('Done.');
    expect(after.at(-1)?.json.candidates[0].finishReason).toBe('STOP');
    expect(server.requests[1]).toMatchObject({
      isToolResult: true,
      toolResults: [{ callId: 'write_file-1', name: 'write_file', output: 'Wrote 2 bytes' }],
    });
  });

  it('frames SSE events with CRLF like the real API', async () => {
    server.script([{ text: 'hi' }]);
    const raw = await (
      await postJson(`${server.url}${base('gemini-2.5-flash', 'streamGenerateContent')}?alt=sse`, {
        contents: [{ role: 'user', parts: [{ text: 'x' }] }],
      })
    ).text();
    expect(raw).toMatch(/^data: \{.*\}\r\n\r\n/);
  });

  it('answers streamGenerateContent without alt=sse as a JSON array of chunks', async () => {
    server.script([{ text: 'one two three four five' }]);
    const response = await postJson(`${server.url}${base('gemini-2.5-flash', 'streamGenerateContent')}`, {
      contents: [{ role: 'user', parts: [{ text: 'x' }] }],
    });
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const chunks = await bodyOf(response);
    expect(Array.isArray(chunks)).toBe(true);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c: any) => c.candidates[0].content.parts[0].text).join('')).toBe('one two three four five');
  });

  it('answers generateContent with one response and countTokens and the model list minimally', async () => {
    server.script([{ toolCalls: [{ name: 'write_file', args: { a: 1 } }] }]);
    const one = await bodyOf(
      postJson(`${server.url}${base('gemini-2.5-pro', 'generateContent')}`, {
        contents: [{ parts: [{ text: 'x' }] }],
        tools,
      }),
    );
    expect(one).toMatchObject({
      candidates: [
        {
          content: { role: 'model', parts: [{ functionCall: { name: 'write_file', args: { a: 1 } } }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: {
        promptTokenCount: expect.any(Number),
        candidatesTokenCount: expect.any(Number),
        totalTokenCount: expect.any(Number),
      },
      modelVersion: 'gemini-2.5-pro',
    });
    expect(server.requests[0]?.stream).toBe(false);
    const count = await bodyOf(
      postJson(`${server.url}${base('gemini-2.5-pro', 'countTokens')}`, { contents: [{ parts: [{ text: 'hello' }] }] }),
    );
    expect(count).toEqual({ totalTokens: expect.any(Number) });
    const list = await bodyOf(fetch(`${server.url}/v1beta/models`));
    expect(list.models.map((m: { name: string }) => m.name)).toContain('models/gemini-2.5-pro');
    expect(list.models[0].supportedGenerationMethods).toContain('streamGenerateContent');
  });

  it('answers a tool-less classifier request with JSON from its schema when auto is on', async () => {
    server.script([{ text: 'main answer' }], { auto: true });
    const schema = {
      type: 'object',
      properties: { reasoning: { type: 'string' }, model_choice: { type: 'string', enum: ['flash', 'pro'] } },
      required: ['reasoning', 'model_choice'],
    };
    const classifier = await bodyOf(
      postJson(`${server.url}${base('gemini-2.5-flash-lite', 'generateContent')}`, {
        contents: [{ role: 'user', parts: [{ text: 'route this' }] }],
        generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema },
      }),
    );
    expect(JSON.parse(classifier.candidates[0].content.parts[0].text)).toEqual({
      reasoning: 'scripted',
      model_choice: 'flash',
    });
    const main = await bodyOf(
      postJson(`${server.url}${base('gemini-2.5-flash', 'generateContent')}`, {
        contents: [{ role: 'user', parts: [{ text: 'go' }] }],
        tools,
      }),
    );
    expect(main.candidates[0].content.parts[0].text).toBe('main answer');
    expect(server.requests.map((r) => r.answeredBy)).toEqual(['auto', 'turn']);
  });
});
