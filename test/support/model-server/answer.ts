// Turning a scripted turn into what gets written: the answer, its wire chunks, or an error body.
import type { Answer, ApiAdapter, RenderContext, ResolvedCall } from './adapter.js';
import { formatFrame } from './sse.js';
import { estimateTokens, isRecord } from './text.js';
import type { ErrorSpec, ModelRequest, ReplyTurn, ToolCallSpec } from './types.js';

/** The model named when a request names none. */
export const DEFAULT_MODEL = 'scripted-model';

const ERROR_MESSAGES: Record<number, string> = {
  401: 'invalid x-api-key (scripted 401)',
  403: 'permission denied (scripted 403)',
  429: 'rate limit exceeded (scripted 429)',
  500: 'internal server error (scripted 500)',
  503: 'service unavailable (scripted 503)',
  529: 'overloaded (scripted 529)',
};

function resolveCall(spec: ToolCallSpec): ResolvedCall {
  if (typeof spec.args === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(spec.args);
    } catch {
      parsed = undefined;
    }
    return {
      name: spec.name,
      id: spec.id,
      arguments: spec.args,
      args: isRecord(parsed) ? parsed : { input: spec.args },
    };
  }
  const args = spec.args ?? {};
  return { name: spec.name, id: spec.id, arguments: JSON.stringify(args), args };
}

/** The answer a reply turn gives to a request; `bodyChars` sizes the input-token estimate. */
export function buildAnswer(turn: ReplyTurn, request: ModelRequest, bodyChars: number): Answer {
  const toolCalls = (turn.toolCalls ?? []).map(resolveCall);
  const text = turn.text ?? '';
  const outChars = text.length + toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  return {
    model: turn.model ?? (request.model || DEFAULT_MODEL),
    text,
    toolCalls,
    inputTokens: turn.usage?.input ?? estimateTokens(bodyChars),
    outputTokens: turn.usage?.output ?? estimateTokens(outChars),
  };
}

/** How the answer travels: SSE, gemini's JSON-array stream (no `alt=sse`), or one JSON body. */
export type Framing = 'sse' | 'json-array' | 'json';

/** The answer as the strings to write, in order (one per SSE event). */
export function renderChunks(adapter: ApiAdapter, answer: Answer, ctx: RenderContext, framing: Framing): string[] {
  if (framing === 'json') return [JSON.stringify(adapter.json(answer, ctx))];
  const frames = adapter.frames(answer, ctx);
  if (framing === 'sse') return frames.map((frame) => formatFrame(frame, adapter.eol));
  const parts = frames.map((frame, i) => `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(frame.data)}`);
  return [...parts, ']'];
}

/** Content type for a framing. */
export function contentTypeOf(framing: Framing): string {
  return framing === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/json; charset=utf-8';
}

/** The error body to send: the script's own, or the API's error shape with a message. */
export function errorPayload(adapter: ApiAdapter, spec: ErrorSpec): string {
  if (typeof spec.body === 'string') return spec.body;
  if (spec.body !== undefined) return JSON.stringify(spec.body);
  const headers = Object.fromEntries(Object.entries(spec.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const message = spec.message ?? ERROR_MESSAGES[spec.status] ?? `scripted error ${spec.status}`;
  return JSON.stringify(adapter.errorBody(spec.status, message, headers));
}
