// Gemini v1beta: POST /v1beta/models/{model}:streamGenerateContent (?alt=sse) and :generateContent.
import type { Answer, ApiAdapter, RenderContext, RequestView } from '../adapter.js';
import type { Frame } from '../sse.js';
import { isRecord, splitChunks, textOf } from '../text.js';
import type { ToolResult } from '../types.js';

const STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function partsOf(content: unknown): Record<string, any>[] {
  if (typeof content === 'string') return [{ text: content }];
  if (isRecord(content) && Array.isArray(content.parts)) return content.parts.filter(isRecord);
  return [];
}

function inspect(body: Record<string, any>, pathModel: string | undefined): RequestView {
  const contents: Record<string, any>[] = Array.isArray(body.contents) ? body.contents.filter(isRecord) : [];
  const last = contents.at(-1);
  const lastParts = partsOf(last);
  const toolResults: ToolResult[] = lastParts
    .map((p) => p.functionResponse)
    .filter(isRecord)
    .map((r) => ({
      callId: typeof r.id === 'string' ? r.id : undefined,
      name: typeof r.name === 'string' ? r.name : undefined,
      output: typeof r.response?.output === 'string' ? r.response.output : JSON.stringify(r.response ?? null),
    }));
  const config = isRecord(body.generationConfig) ? body.generationConfig : {};
  const tools: unknown[] = Array.isArray(body.tools) ? body.tools : [];
  const toolNames = tools
    .filter(isRecord)
    .flatMap((t) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []))
    .filter(isRecord)
    .map((d) => d.name)
    .filter((n): n is string => typeof n === 'string');
  return {
    model: pathModel ?? '',
    stream: false, // set by the router from the method name
    system: textOf(partsOf(body.systemInstruction)),
    toolNames,
    messageCount: contents.length,
    lastRole:
      toolResults.length > 0 ? 'tool' : last === undefined ? undefined : last.role === 'model' ? 'assistant' : 'user',
    lastText: textOf(lastParts),
    toolResults,
    wantsJson: config.responseMimeType === 'application/json',
    jsonSchema: config.responseJsonSchema ?? config.responseSchema ?? config._responseJsonSchema,
  };
}

function usage(answer: Answer, final: boolean): Record<string, unknown> {
  if (!final) return { promptTokenCount: answer.inputTokens, totalTokenCount: answer.inputTokens };
  return {
    promptTokenCount: answer.inputTokens,
    candidatesTokenCount: answer.outputTokens,
    totalTokenCount: answer.inputTokens + answer.outputTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: answer.inputTokens }],
  };
}

function callParts(answer: Answer): Record<string, unknown>[] {
  // the Gemini API sends each functionCall whole (no argument deltas) and, unlike Vertex, no id unless the script names one
  return answer.toolCalls.map((call) => ({
    functionCall: { ...(call.id ? { id: call.id } : {}), name: call.name, args: call.args },
  }));
}

function chunks(answer: Answer, ctx: RenderContext): Record<string, unknown>[] {
  const responseId = ctx.newId('');
  const pieces: Record<string, unknown>[][] = [];
  if (answer.text !== '' || answer.toolCalls.length === 0)
    for (const text of splitChunks(answer.text)) pieces.push([{ text }]);
  if (answer.toolCalls.length > 0) pieces.push(callParts(answer));
  return pieces.map((parts, i) => {
    const final = i === pieces.length - 1;
    return {
      candidates: [{ content: { parts, role: 'model' }, ...(final ? { finishReason: 'STOP' } : {}), index: 0 }],
      usageMetadata: usage(answer, final),
      modelVersion: answer.model,
      responseId,
    };
  });
}

function frames(answer: Answer, ctx: RenderContext): Frame[] {
  return chunks(answer, ctx).map((data) => ({ data }));
}

function json(answer: Answer, ctx: RenderContext): unknown {
  const parts: Record<string, unknown>[] =
    answer.text !== '' || answer.toolCalls.length === 0 ? [{ text: answer.text }] : [];
  return {
    candidates: [
      { content: { parts: [...parts, ...callParts(answer)], role: 'model' }, finishReason: 'STOP', index: 0 },
    ],
    usageMetadata: usage(answer, true),
    modelVersion: answer.model,
    responseId: ctx.newId(''),
  };
}

function errorBody(status: number, message: string, headers: Record<string, string>): unknown {
  const retryAfter = Number(headers['retry-after']);
  // gemini clients read the wait from RetryInfo, not from headers
  const details =
    status === 429 && Number.isFinite(retryAfter) && retryAfter > 0
      ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` }]
      : undefined;
  return {
    error: {
      code: status,
      message,
      status: STATUSES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
      ...(details ? { details } : {}),
    },
  };
}

/** The Gemini v1beta generateContent API. */
export const geminiApi: ApiAdapter = {
  inspect,
  frames,
  json,
  errorBody,
  preamble: 0,
  eol: '\r\n',
  headers: () => ({}),
};
