import type { Frame } from './sse.js';
import type { ModelRequest } from './types.js';

/** A tool call ready to be written in any API's shape. */
export interface ResolvedCall {
  name: string;
  /** The arguments as sent on the wire: JSON of the args object, or the raw string the script gave. */
  arguments: string;
  /** The arguments as an object, for APIs that carry objects (Anthropic `input`, gemini `args`). */
  args: Record<string, unknown>;
  /** The scripted id override, if any. */
  id?: string;
}

/** What the scripted model says in one answer. */
export interface Answer {
  model: string;
  text: string;
  toolCalls: ResolvedCall[];
  inputTokens: number;
  outputTokens: number;
}

/** The part of a request view an adapter derives from the body. */
export type RequestView = Pick<
  ModelRequest,
  | 'model'
  | 'stream'
  | 'system'
  | 'toolNames'
  | 'messageCount'
  | 'lastRole'
  | 'lastText'
  | 'toolResults'
  | 'wantsJson'
  | 'jsonSchema'
>;

/** What an adapter needs to render an answer. */
export interface RenderContext {
  request: ModelRequest;
  /** A run-unique id with this prefix. */
  newId: (prefix: string) => string;
}

/** One wire protocol: how to read its requests and write its answers and errors. */
export interface ApiAdapter {
  /** Reads the API-independent view of a request body (`pathModel` is gemini's model from the URL). */
  inspect(body: Record<string, any>, pathModel: string | undefined): RequestView;
  /** The streamed answer as SSE frames, in the API's event order. */
  frames(answer: Answer, ctx: RenderContext): Frame[];
  /** The non-streamed answer. */
  json(answer: Answer, ctx: RenderContext): unknown;
  /** The API's own error body for an HTTP status. */
  errorBody(status: number, message: string, headers: Record<string, string>): unknown;
  /** Frames a mid-stream stall sends before it stalls. */
  preamble: number;
  /** Line ending of its SSE frames. */
  eol: '\n' | '\r\n';
  /** Extra headers on every answer (request ids). */
  headers(ctx: RenderContext): Record<string, string>;
}
